"""Wrong-typed arguments get the library's own typed errors, never a bare
TypeError or AttributeError from deep inside (values from config or JSON
reach these calls untyped)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentlog import InvalidEvent, SearchError, SessionClosed, Store


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda st, s: s.sync(None), InvalidEvent),
        (lambda st, s: s.sync("hello"), InvalidEvent),
        (lambda st, s: s.append_many(None), InvalidEvent),
        (lambda st, s: s.append_many({"kind": "message"}), InvalidEvent),
        (lambda st, s: s.import_events([{"id": 1}]), InvalidEvent),
        (lambda st, s: st.search("flaky", since=5), SearchError),
    ],
    ids=["sync-none", "sync-str", "append_many-none", "append_many-dict", "import_events-dict", "search-since-int"],
)
def test_a_wrong_type_is_a_typed_error(call: Callable[[Store, Any], Any], error: type[Exception]) -> None:
    st = Store.memory()
    with st.create() as s:
        s.append("message", {"content": "flaky"}, role="user")
        with pytest.raises(error):
            call(st, s)
        assert len(s) == 1  # nothing written


def test_maybe_compact_on_a_closed_session_says_so_even_when_not_due() -> None:
    st = Store.memory()
    s = st.create()
    s.close()
    with pytest.raises(SessionClosed):
        s.maybe_compact(10, 100_000)
