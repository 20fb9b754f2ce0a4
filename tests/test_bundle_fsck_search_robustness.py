"""Bundle import, fsck and search on input that is wrong in ways a checksum
or a parser does not catch (the CLI sweep, findings 6, 8 and 18): a bundle
whose parents, times or HEAD do not hold together is refused whole, before
anything is written; fsck sees a parent link that points forward (a loop)
and repair moves it aside; a query that starts with NOT is an error, not
a search for the very word it excludes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentlog import Store
from agentlog._codec import decode_line, encode_line
from agentlog.errors import BundleError, CorruptionError, SearchError
from agentlog.export import import_bundle, write_bundle
from agentlog.search import search
from agentlog.search.query import to_match

pytestmark = pytest.mark.filterwarnings("ignore::agentlog.RecoveryWarning")

FAR = "01a22e2b-0000-7000-8000-000000000000"  # an id no session here holds (it sorts first)


def _source(tmp_path: Path, n: int = 4) -> tuple[Store, list[str]]:
    store = Store(str(tmp_path / "src"))
    with store.create(session_id="s") as s:
        ids = [s.append("message", {"content": f"m{i}"}, "user").id for i in range(n)]
    return store, ids


def _bundle_lines(store: Store, sid: str = "s") -> list[dict[str, Any]]:
    out = _Buffer()
    with store.open(sid, readonly=True) as s:
        write_bundle(s, out)
    return [orjson.loads(line) for line in bytes(out.data).splitlines()]


class _Buffer:
    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, data: bytes, /) -> int:
        self.data += data
        return len(data)


def _write(path: Path, lines: list[dict[str, Any]]) -> str:
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    return str(path)


def _set_head(lines: list[dict[str, Any]], head: str) -> None:
    lines[0]["head"] = lines[-1]["end"]["head"] = head


# --- bundle import: the whole bundle is checked before anything is written ---------

_DAMAGE: dict[str, tuple[Callable[[list[dict[str, Any]]], None], str]] = {
    "missing parent": (lambda L: L[3]["event"].__setitem__("parent_id", FAR), r":4: event .* names the parent"),
    "forward parent": (
        lambda L: L[2]["event"].__setitem__("parent_id", L[3]["event"]["id"]),
        r":3: event .* which is not before it \(a link forward",
    ),
    "own parent": (
        lambda L: L[2]["event"].__setitem__("parent_id", L[2]["event"]["id"]),
        r":3: event .* which is not before it",
    ),
    "words for a time": (lambda L: L[2]["event"].__setitem__("timestamp", "yesterday"), r":3: .*'yesterday'"),
    "a time with no zone": (
        lambda L: L[2]["event"].__setitem__("timestamp", "2026-11-30T20:00:00.000000000"),
        r":3: .*not an RFC 3339 UTC time",
    ),
    "month 13": (
        lambda L: L[2]["event"].__setitem__("timestamp", "2026-13-30T20:00:00.000000000Z"),
        r":3: .*not an RFC 3339 UTC time",
    ),
    "head of no event": (lambda L: _set_head(L, FAR), r":1: the head .* is not an event of the bundle"),
    "ids out of order": (
        lambda L: L.__setitem__(slice(2, 4), [L[3], L[2]]),
        r":3: event .* names the parent .* not an earlier event",  # its parent is the next line
    ),
    "an id that goes back": (
        lambda L: L[3]["event"].__setitem__("id", L[1]["event"]["id"][:-1] + "0"),
        r":4: event .* does not sort after",
    ),
    "a malformed kind": (lambda L: L[2]["event"].__setitem__("kind", "Not A Kind"), r":3: event .* malformed kind"),
    "a streaming delta": (lambda L: L[2]["event"].__setitem__("kind", "delta"), r":3: event .*streaming delta"),
    "a malformed id": (lambda L: L[2]["event"].__setitem__("id", 5), r":3: the event has a malformed id"),
}


@pytest.mark.parametrize("damage", sorted(_DAMAGE))
def test_an_inconsistent_bundle_is_refused_whole_and_leaves_no_session(tmp_path: Path, damage: str) -> None:
    """Finding 6: these were imported (a session log could not walk, a time
    that is not a time), or failed after creating the session, which a
    retry then called "already imported"."""
    store, _ = _source(tmp_path)
    lines = _bundle_lines(store)
    change, message = _DAMAGE[damage]
    change(lines)
    path = _write(tmp_path / "bad.jsonl", lines)
    other = Store(str(tmp_path / "dst"))
    for _ in range(2):  # the retry is refused the same way: nothing was left behind
        with pytest.raises(BundleError, match=message):
            import_bundle(other, path)
        assert not other.exists("s")


def test_an_inconsistent_extension_leaves_the_session_as_it_was(tmp_path: Path) -> None:
    store, _ = _source(tmp_path)
    other = Store(str(tmp_path / "dst"))
    import_bundle(other, _write(tmp_path / "old.jsonl", _bundle_lines(store)))
    with store.open("s") as s:
        s.append("message", {"content": "new"}, "assistant")
    lines = _bundle_lines(store)
    _set_head(lines, FAR)
    with pytest.raises(BundleError, match="the head"):
        import_bundle(other, _write(tmp_path / "new.jsonl", lines))
    with other.open("s", readonly=True) as s:
        assert len(s.entries()) == 4


def test_a_record_too_deep_to_store_is_refused_with_its_line(tmp_path: Path) -> None:
    store, _ = _source(tmp_path)
    lines = _bundle_lines(store)
    lines[2]["event"]["record"] = {"content": "x"}
    raw = b"".join(orjson.dumps(line) + b"\n" for line in lines)
    deep = b"[" * 300 + b"]" * 300  # orjson reads 1024 levels, writes 255
    raw = raw.replace(b'{"content":"x"}', deep, 1)
    path = tmp_path / "deep.jsonl"
    path.write_bytes(raw)
    other = Store(str(tmp_path / "dst"))
    with pytest.raises(BundleError, match=r":3: the record of event .* cannot be stored"):
        import_bundle(other, str(path))
    assert not other.exists("s")


# --- re-importing an older bundle (finding 18) ----------------------------------------


def test_an_older_bundle_of_a_session_that_grew_is_already_imported(tmp_path: Path) -> None:
    store, ids = _source(tmp_path)
    with store.open("s") as s:  # HEAD on a branch, not on the last event: a valid bundle head
        s.checkout(ids[1])
        s.append("message", {"content": "branch"}, "user")
        s.checkout(ids[3])
    old = _write(tmp_path / "old.jsonl", _bundle_lines(store))
    other = Store(str(tmp_path / "dst"))
    assert import_bundle(other, old).outcome == "created"
    with other.open("s", readonly=True) as s:
        assert s.head == ids[3]
    with other.open("s") as s:  # the copy moves on locally
        s.append("message", {"content": "later"}, "assistant")
        head = s.head
    report = import_bundle(other, old)  # a sync script that re-imports what it has seen
    assert (report.outcome, report.events_added, report.events_total, report.head) == ("unchanged", 0, 6, head)
    with other.open("s", readonly=True) as s:
        assert (len(s.entries()), s.head) == (6, head)  # HEAD not moved back to the bundle's


def test_an_older_bundle_that_differs_is_still_refused(tmp_path: Path) -> None:
    store, _ = _source(tmp_path, n=2)
    lines = _bundle_lines(store)
    lines[2]["event"]["kind"] = "custom"
    lines = lines[:2] + lines[3:]  # the first event only, then the end line
    lines[0]["events"] = lines[-1]["end"]["events"] = 1
    _set_head(lines, lines[1]["event"]["id"])
    lines[1]["event"]["kind"] = "label"
    with pytest.raises(BundleError, match="differs from the bundle"):
        import_bundle(store, _write(tmp_path / "b.jsonl", lines))


# --- fsck: a parent link that points forward (finding 6) -----------------------------


def _chunk(home: Path, sid: str = "s") -> Path:
    return home / "sessions" / sid / "chunks" / "000000.jsonl"


def _rewrite_line(path: Path, i: int, change: Callable[[dict[str, Any]], None]) -> None:
    """Change one record and frame it again: checksum-valid damage."""
    lines = path.read_bytes().splitlines(keepends=True)
    obj = decode_line(lines[i])
    change(obj)
    lines[i] = encode_line(obj)
    path.write_bytes(b"".join(lines))


@pytest.mark.parametrize("target", ["later", "itself"])
def test_fsck_reports_a_parent_that_does_not_come_before_its_event(tmp_path: Path, target: str) -> None:
    home = tmp_path / "src"
    store, ids = _source(tmp_path, n=5)
    parent = ids[3] if target == "later" else ids[2]
    _rewrite_line(_chunk(home), 2, lambda r: r.__setitem__("parent_id", parent))
    errors = [p for p in store.fsck("s") if p.severity == "error"]
    # The record, once, where it is (its child is not reported again as
    # naming a missing parent); the index, derived, disagrees with the log.
    in_log = [p for p in errors if p.path == str(_chunk(home))]
    assert [p.offset for p in in_log] == [_offset(_chunk(home), 2)]
    assert "does not come before it" in in_log[0].message and ids[2] in in_log[0].message
    assert all(p.path.endswith("index.bin") for p in errors if p not in in_log)


def test_repair_moves_a_looping_record_aside_and_fsck_is_clean(tmp_path: Path) -> None:
    home = tmp_path / "src"
    store, ids = _source(tmp_path, n=5)
    chunk = _chunk(home)
    _rewrite_line(chunk, 2, lambda r: r.__setitem__("parent_id", ids[3]))
    looping = chunk.read_bytes().splitlines(keepends=True)[2]
    with store.open("s", readonly=True) as s, pytest.raises(CorruptionError, match="loop"):
        s.path()
    actions = store.repair("s")
    assert any("does not come before it" in a for a in actions)
    quarantine = Path(str(chunk) + ".quarantine").read_bytes()
    assert looping in quarantine  # moved, never deleted
    assert [p for p in store.fsck("s") if p.severity == "error"] == []
    with store.open("s", readonly=True) as s:
        assert ids[2] not in s
        path = [e.id for e in s.path()]
        assert path == ids[: len(path)] and ids[0] in path  # HEAD's path reaches the root


def test_a_looping_member_condemns_its_whole_batch(tmp_path: Path) -> None:
    home = tmp_path / "src"
    store = Store(str(home))
    with store.create(session_id="s") as s:
        s.append("message", {"content": "one"}, "user")
        batch = s.append_many([("message", {"content": f"b{i}"}, "assistant") for i in range(3)])
    _rewrite_line(_chunk(home), 2, lambda r: r.__setitem__("parent_id", batch[2].id))
    errors = [p.message for p in store.fsck("s") if p.severity == "error" and p.path.endswith(".jsonl")]
    # one problem for the batch, naming its three records (fsck reports a damaged place once)
    assert len(errors) == 1 and "batch broken" in errors[0] and "does not come before it" in errors[0]
    assert "(3 records," in errors[0]
    store.repair("s")
    assert [p for p in store.fsck("s") if p.severity == "error"] == []
    with store.open("s", readonly=True) as s:
        assert [e.id for e in batch if e.id in s] == []  # all or nothing (invariant 6)


def _offset(path: Path, i: int) -> int:
    return sum(len(line) for line in path.read_bytes().splitlines(keepends=True)[:i])


# --- search: NOT (finding 8) -----------------------------------------------------------


@pytest.mark.parametrize("query", ["NOT alpha", 'NOT "alpha beta"', "NOT alpha gamma", '"" NOT alpha', "  NOT alpha"])
def test_a_query_starting_with_not_is_an_error(query: str) -> None:
    with pytest.raises(SearchError, match="no word before it"):
        to_match(query)


@pytest.mark.parametrize("query", ["gamma OR NOT alpha", "gamma NOT NOT alpha"])
def test_not_right_after_an_operator_is_an_error(query: str) -> None:
    with pytest.raises(SearchError, match="NOT needs a word"):
        to_match(query)


def test_and_not_excludes(tmp_path: Path) -> None:
    store = Store(str(tmp_path / "home"))
    with store.create(session_id="s") as s:
        s.append("message", {"content": "alpha beta"}, "user")
        s.append("message", {"content": "alpha gamma"}, "user")
    assert to_match("alpha AND NOT beta") == to_match("alpha NOT beta") == '"alpha" NOT "beta"'
    assert [h.snippet for h in search(store, "alpha AND NOT beta")] == ["alpha gamma"]
    with pytest.raises(SearchError):
        search(store, "NOT alpha")
    # A stray operator that joins or excludes nothing is dropped, as before.
    assert to_match("OR alpha") == to_match("alpha OR") == to_match("alpha NOT") == '"alpha"'
