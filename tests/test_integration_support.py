"""The rules the adapters share: framework names to session ids, and the
bounded set of sessions an adapter keeps open for writing."""

from __future__ import annotations

import pytest

from agentlog.event import check_session_id
from agentlog.integrations._ids import session_key
from agentlog.integrations._open_writers import OpenWriters


@pytest.mark.parametrize(
    ("prefix", "parts", "expected"),
    [
        ("", ("conv_1",), "conv_1"),
        ("lg", ("thread-7",), "lg--thread-7"),
        ("", ("-starts-with-dash",), None),
        ("", ("has space",), None),
        ("", ("a--b",), None),  # would collide with the digest form
        ("", ("x" * 128,), "x" * 128),
        ("lg", ("x" * 127,), None),  # too long once prefixed
        ("adk", ("app", "user", "s1"), None),  # several parts: always a digest
        ("", ("ü",), None),
    ],
)
def test_session_key_keeps_plain_names_and_digests_the_rest(
    prefix: str, parts: tuple[str, ...], expected: str | None
) -> None:
    key = session_key(prefix, *parts)
    assert check_session_id(key) == key
    if expected is not None:
        assert key == expected
    else:
        assert "--h--" in key or key.startswith("h--")
    assert session_key(prefix, *parts) == key  # stable


def test_session_key_parts_cannot_be_confused() -> None:
    assert session_key("adk", "a", "b c") != session_key("adk", "a b", "c")
    assert session_key("adk", "ab", "c") != session_key("adk", "a", "bc")
    assert session_key("", "a--b") != session_key("", "h--a")


def test_open_writers_closes_the_least_recently_used() -> None:
    closed: list[str] = []
    writers: OpenWriters[str] = OpenWriters(2, closed.append)
    writers.put("a", "A")
    writers.put("b", "B")
    assert writers.get("a") == "A"  # a is now the most recent
    writers.put("c", "C")
    assert closed == ["B"] and "b" not in writers and "a" in writers
    assert writers.pop("a") == "A" and writers.pop("a") is None
    writers.close_all()
    assert closed == ["B", "C"]
    with pytest.raises(ValueError):
        OpenWriters(0, closed.append)
