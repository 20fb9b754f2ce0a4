"""An imported session whose session.json repair wrote again is still its source's.

``fsck --repair`` replaces a damaged session.json with defaults, which drops
the import's bookkeeping (``import``: format, source id, file states). The
next import of the same file used to take the session for someone else's
and import the whole file again into a second, hashed session."""

from __future__ import annotations

from pathlib import Path

from agentlog import Store
from cli_support import ok, ok_json
from importers_support import copy_fixture

FIXTURE = "claude-code_v2.1.42_real_03eb5929.jsonl"


def test_a_repaired_session_json_does_not_duplicate_the_import(tmp_path: Path) -> None:
    home = tmp_path / "home"
    source = copy_fixture(FIXTURE, tmp_path / "src")
    ok(home, "import", "--from", "claude", str(source))
    (before,) = ok_json(home, "ls")
    meta = home / "sessions" / before["id"] / "session.json"
    meta.write_bytes(meta.read_bytes()[:100])  # torn
    ok(home, "fsck", "--repair")
    ok(home, "import", "--from", "claude", str(source))
    (after,) = ok_json(home, "ls")
    assert after["id"] == before["id"] and after["event_count"] == before["event_count"]
    with Store(home).open(before["id"], readonly=True) as s:
        assert s.meta["import"]["source_id"] == "03eb5929-52b3-4b13-ada3-b93ae35806b8"
    source.write_text(source.read_text() + source.read_text().splitlines(keepends=True)[-1].replace(
        '"uuid":"', '"uuid":"new-', 1))  # fmt: skip
    ok(home, "import", "--from", "claude", str(source))  # and its new lines go on arriving
    (grown,) = ok_json(home, "ls")
    assert grown["event_count"] > after["event_count"]


def test_a_hand_made_session_with_that_id_stays_its_own(tmp_path: Path) -> None:
    home = tmp_path / "home"
    source = copy_fixture(FIXTURE, tmp_path / "src")
    plain = "claude-03eb5929-52b3-4b13-ada3-b93ae35806b8"
    ok(home, "new", "--id", plain)
    ok(home, "append", plain, "message", '{"content": "mine"}', "--role", "user")
    ok(home, "import", "--from", "claude", str(source))
    ids = {s["id"] for s in ok_json(home, "ls")}
    assert plain in ids and len(ids) == 2  # the import went to the hashed id
