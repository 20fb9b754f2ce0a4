"""Regressions of the library-and-server QA pass (/tmp/qa_lib/REPORT.md),
library side: store URLs, create under another process's writer, lazy ids,
compaction options, checkpoint state, closed sessions."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from agentlog import (
    InvalidEvent,
    InvalidOption,
    RecoveryWarning,
    SessionClosed,
    SessionExists,
    SessionLocked,
    SessionNotFound,
    Store,
    UnknownBackend,
)
from agentlog.compaction import CompactionPolicy

pytestmark = pytest.mark.timeout(60)


# --- 2. store URLs that lost a part without a word ----------------------------------------


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("file://otherhost/tmp/x", "takes no host"),
        ("file://relative/x", "file:relative/path"),
        ("sqlite://otherhost/tmp/x.db", "takes no host"),
        ("sqlite://data/x.db", "sqlite:relative/path.db"),
        ("sqlite:///tmp/x.db?mode=ro", "?mode=ro"),
        ("file:///tmp/x?durability=off", "takes no options"),
        ("file:///tmp/x#frag", "#frag"),
        ("sqlite:///tmp/x.db?", "takes no options"),
    ],
)
def test_a_local_url_with_a_host_or_options_is_refused(url: str, says: str) -> None:
    with pytest.raises(UnknownBackend) as caught:
        Store(url)
    assert says in str(caught.value)
    assert "///absolute/path" in str(caught.value)


def test_localhost_and_plain_forms_still_name_local_paths(tmp_path: Path) -> None:
    assert Store(f"file://localhost{tmp_path}/a").home == f"{tmp_path}/a"
    assert Store(f"file://{tmp_path}/b").home == f"{tmp_path}/b"  # the empty host: file:///...
    assert Store(f"sqlite://localhost{tmp_path}/c.db").url == f"sqlite://{tmp_path}/c.db"
    assert Store(f"file://{tmp_path}/d%3Fe").home == f"{tmp_path}/d?e"  # a '?' in a name, quoted


@pytest.mark.parametrize("query", ["schema=", "schema=a&schema=b", "lease=", "lease_ttl="])
def test_a_postgres_url_with_an_empty_or_repeated_parameter_is_refused(query: str) -> None:
    pytest.importorskip("psycopg")
    # Refused before any connection: no server is needed.
    with pytest.raises(UnknownBackend):
        Store(f"postgresql://nobody@127.0.0.1:1/none?{query}")


# --- 3. create under another process's writer ----------------------------------------------

HOLDER = textwrap.dedent(
    """
    import sys
    from agentlog import Store
    session = Store(sys.argv[1]).create(session_id=sys.argv[2])
    print("ready", flush=True)
    sys.stdin.readline()
    session.close()
    print("closed", flush=True)
    """
)


def test_create_of_an_id_another_process_holds_is_session_locked_on_every_backend(store: Store) -> None:
    if store.url.startswith("memory:"):
        pytest.skip("a memory store lives in one process")
    child = subprocess.Popen(
        [sys.executable, "-c", HOLDER, store.url, "held"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdin is not None
        assert child.stdout.readline().strip() == "ready"
        with pytest.raises(SessionLocked) as caught:
            store.create(session_id="held")
        assert not isinstance(caught.value, SessionExists)
        assert f"pid {child.pid}" in str(caught.value)
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.stdout.readline().strip() == "closed"
    finally:
        child.kill()
        child.wait()
    with pytest.raises(SessionExists):  # held by nobody now: the id is simply taken
        store.create(session_id="held")


def test_create_of_an_id_this_process_holds_is_session_exists(store: Store) -> None:
    with store.create(session_id="mine"):
        with pytest.raises(SessionExists):
            store.create(session_id="mine")
        # Another Store on the same place: still this process's writer.
        if not store.url.startswith("memory:"):
            with pytest.raises(SessionExists):
                Store(store.url).create(session_id="mine")


# --- 6. a lazy session's id -----------------------------------------------------------------


def test_a_lazy_session_reserves_its_id_in_this_process(store: Store) -> None:
    lazy = store.create(session_id="chat", lazy=True)
    lazy.append("message", {"content": "user words"}, role="user")
    with pytest.raises(SessionLocked) as caught:
        store.create(session_id="chat")
    assert "lazy" in str(caught.value)
    with pytest.raises(SessionLocked):
        store.create(session_id="chat", lazy=True)
    with pytest.raises(SessionNotFound):  # nothing is stored yet
        store.open("chat")
    lazy.append("message", {"content": "reply"}, role="assistant")  # persists
    assert lazy.persisted
    assert [e.record["content"] for e in store.open("chat", readonly=True).path()] == ["user words", "reply"]
    lazy.close()
    with pytest.raises(SessionExists):
        store.create(session_id="chat")


def test_a_closed_or_dropped_lazy_session_frees_its_id(store: Store) -> None:
    store.create(session_id="gone", lazy=True).close()
    with store.create(session_id="gone") as s:
        assert s.persisted
    lazy = store.create(session_id="dropped", lazy=True)
    del lazy  # never closed: the id is free with it
    with store.create(session_id="dropped") as s:
        assert s.persisted


def test_a_lazy_session_whose_id_was_taken_elsewhere_keeps_its_events(store: Store) -> None:
    lazy = store.create(session_id="taken", lazy=True)
    lazy.append("message", {"content": "user words"}, role="user")
    # Another process (here: the backend directly, as it would) takes the id.
    store.backend.create("taken", {"schema": 1, "id": "taken"}).close()
    with pytest.raises(SessionExists) as caught:
        lazy.append("message", {"content": "reply"}, role="assistant")
    notes = " ".join(getattr(caught.value, "__notes__", []))
    assert "1 event is still in memory" in notes and "fork()" in notes
    assert not lazy.persisted
    assert [e.record["content"] for e in lazy.path()] == ["user words"]
    with lazy.fork() as saved:  # stored under a new id
        assert [e.record["content"] for e in saved.path()] == ["user words"]
        assert saved.id != "taken"
    lazy.close()


# --- 10. compaction's numeric options -------------------------------------------------------


@pytest.fixture
def mem_session() -> Any:
    with Store.memory().create() as s:
        s.append("message", {"content": "hi"}, role="user")
        yield s


@pytest.mark.parametrize("keep", ["5", 1.5, True, [5], float("nan"), -1])
def test_compact_refuses_a_keep_tokens_that_is_not_a_count(mem_session: Any, keep: Any) -> None:
    with pytest.raises(InvalidOption, match="keep_tokens"):
        mem_session.compact(keep_tokens=keep)


def test_compact_refuses_a_split_turn_that_is_not_a_bool(mem_session: Any) -> None:
    with pytest.raises(InvalidOption, match="split_turn"):
        mem_session.compact(split_turn="yes")
    with pytest.raises(InvalidOption, match="split_turn"):
        mem_session.maybe_compact(1, 10, split_turn="yes")


@pytest.mark.parametrize(
    ("used", "window", "named"), [("5", 100, "used_tokens"), (5, "100", "context_window"), (-1, 100, "used_tokens")]
)
def test_maybe_compact_refuses_counts_that_are_not_counts(mem_session: Any, used: Any, window: Any, named: str) -> None:
    with pytest.raises(InvalidOption, match=named):
        mem_session.maybe_compact(used, window)


@pytest.mark.parametrize(
    ("field", "value"),
    [("threshold", "x"), ("threshold", 0), ("threshold", 1.5), ("threshold", float("nan")), ("keep_tokens", "5")],
)
def test_a_compaction_policy_out_of_range_is_refused(mem_session: Any, field: str, value: Any) -> None:
    with pytest.raises(InvalidOption, match=field):
        CompactionPolicy(**{field: value})
    setattr(mem_session.compaction, field, value)  # set one by one: checked on use
    with pytest.raises(InvalidOption, match=field):
        mem_session.maybe_compact(5, 10)


# --- 11. checkpoint state that is not a mapping -----------------------------------------------


@pytest.mark.parametrize("state", ["notadict", 5, ["scratchpad"]])
def test_save_turn_refuses_a_state_that_is_not_a_mapping(mem_session: Any, state: Any) -> None:
    before = len(mem_session)
    with pytest.raises(InvalidEvent, match="state"):
        mem_session.save_turn([("message", {"content": "x"}, "user")], state)
    assert len(mem_session) == before  # nothing written, not even the turn


def test_a_stored_state_that_is_not_a_mapping_is_reported_and_passed_over(mem_session: Any) -> None:
    mem_session.save_turn([], {"scratchpad": "kept", "tool_calls": 3})
    assert mem_session.state().tool_calls == 3
    bad = mem_session.append("state", "notadict", role="system")  # written around save_turn
    with pytest.warns(RecoveryWarning) as caught:
        checkpoint = mem_session.state()
    assert bad.id in str(caught[0].message) and "str" in str(caught[0].message)
    assert checkpoint.tool_calls == 3 and checkpoint.scratchpad == "kept"  # the spend is not reset


# --- 12. a closed session ----------------------------------------------------------------------


def test_a_closed_session_refuses_head_meta_and_len(store: Store) -> None:
    session = store.create(session_id="shut")
    session.append("message", {"content": "x"}, role="user")
    session.close()
    assert session.closed
    for read in (lambda: session.head, lambda: session.meta, lambda: len(session), lambda: session.title):
        with pytest.raises(SessionClosed):
            read()
    assert session.id == "shut"
    assert "closed" in repr(session)
    session.close()  # idempotent
