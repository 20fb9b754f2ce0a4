"""Findings of a review of the importers and the CLI on 2026-12-05, each a
regression test now: ``--follow`` counts a newline that ends a line taken
whole before it was written as no line of its own; a pi compaction keeps
its entry's ``parentId``; a pi ``message`` entry whose message is not an
object is reported; a path that exists but is no regular file or
directory is named as such."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from agentlog import Store
from agentlog.importers import FORMATS, Follower, run_import
from cli_support import run
from importers_support import load

PI_ID = "cccc1111-2222-3333-4444-555566667777"
PI_SESSION = f"pi-{PI_ID}"


def _dump(obj: Any) -> str:
    return json.dumps(obj)


def _pi_header(version: int | None = 3) -> dict[str, Any]:
    h: dict[str, Any] = {"type": "session", "id": PI_ID, "timestamp": "2026-01-01T10:00:00.000Z", "cwd": "/p"}
    if version is not None:
        h["version"] = version
    return h


def _pi_v1_user(i: int, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "timestamp": f"2026-01-01T10:00:0{i}.000Z",
        "message": {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 1767261600000 + i},
    }


def _texts(store: Store, session_id: str) -> list[Any]:
    out = []
    for e in load(store, session_id).events:
        if e.kind == "message":
            content = e.record.get("content")
            out.append(content[0]["text"] if isinstance(content, list) and content else content)
    return out


def test_follow_then_import_after_a_line_whose_newline_came_later_loses_no_line(tmp_path: Path) -> None:
    """Was a bug (silent data loss): when a --follow poll consumes a last
    line that is whole JSON but not yet followed by its newline (the writer
    puts the newline in a second write), the next poll parses the appended
    bytes from that old end (reader.read_file -> parse_lines with
    base_line=old.last_line); the lone "\\n" that ends the old line is
    counted as an extra blank line, so every later line's number is one too
    high (source.line, pi v1's ``line:<n>`` keys) and the file's saved state
    says one line more than was consumed. A later one-shot import
    (``agentlog import`` after --follow stopped) then marks the file's real
    next line as already consumed (``lineno <= state.lines``) and drops it
    without a word: 0 new events, no warning, no error.

    Expected: line numbers match the file's (1, 2, 3) and the line appended
    after --follow stopped is imported."""
    src = tmp_path / "src"
    src.mkdir()
    path = src / f"2026-01-01T10-00-00_{PI_ID}.jsonl"
    path.write_text(_dump(_pi_header(None)) + "\n" + _dump(_pi_v1_user(1, "one")))  # newline not yet written
    store = Store(tmp_path / "home")
    with Follower(store, FORMATS["pi"], [str(src)]) as follower:
        follower.poll()
        with open(path, "a") as f:
            f.write("\n" + _dump(_pi_v1_user(2, "two")) + "\n")
        follower.poll()
    lines = [e.record["source"]["line"] for e in load(store, PI_SESSION).events]
    # the one-shot import after --follow stopped
    with open(path, "a") as f:
        f.write(_dump(_pi_v1_user(3, "three")) + "\n")
    report = run_import(store, FORMATS["pi"], [str(path)])
    texts = _texts(store, PI_SESSION)
    assert texts == ["one", "two", "three"], (texts, f"source lines after --follow: {lines}", report.to_dict())
    assert lines == [1, 2, 3], f"source line numbers after --follow: {lines}"


def test_pi_compaction_keeps_its_parent_id(tmp_path: Path) -> None:
    """Was a bug (information dropped): every pi entry's ``parentId``
    (and ``id``) is kept in its event's ``source`` (``parent_id``, ``id``),
    so a parent that is not in the file (a truncated or hand-edited file)
    is still known. ``PiImporter._compaction`` builds its own ``source``
    (``fields`` = the entry minus _ENTRY) and never adds ``parent_id``:
    ``parentId`` is in _ENTRY, so it is dropped from ``fields`` too. A
    compaction whose parent is not found becomes a root and nothing
    records which entry it followed (Claude Code's importer keeps
    ``source.unresolved_parent`` in that case).

    Expected: the compaction event's source keeps ``parent_id`` (as the
    message, branch_summary and label events do)."""
    src = tmp_path / "src"
    src.mkdir()
    path = src / f"2026_{PI_ID}.jsonl"
    user = {
        "type": "message",
        "id": "u0000001",
        "parentId": None,
        "timestamp": "2026-01-01T10:00:01.000Z",
        "message": {"role": "user", "content": "hello"},
    }
    compaction = {
        "type": "compaction",
        "id": "c0000001",
        "parentId": "gone0001",  # an entry no longer in the file
        "timestamp": "2026-01-01T10:00:02.000Z",
        "summary": "summary text",
        "firstKeptEntryId": "u0000001",
        "tokensBefore": 100,
    }
    path.write_text("".join(_dump(o) + "\n" for o in (_pi_header(), user, compaction)))
    store = Store(tmp_path / "home")
    run_import(store, FORMATS["pi"], [str(path)])
    event = next(e for e in load(store, PI_SESSION).events if e.kind == "compaction")
    assert "gone0001" in json.dumps(event.record), f"parentId lost: {event.record['source']}"


def test_a_pi_message_entry_whose_message_is_no_object_is_reported(tmp_path: Path) -> None:
    """Was a bug (damaged line not reported): a pi ``message`` entry whose
    ``message`` is not an object (a damaged line) falls through
    ``PiImporter.convert`` to the catch-all ``custom`` branch: it is kept,
    but the report names it nowhere (no malformed line, no warning), so
    the conversation silently misses that turn. The Claude Code importer
    raises a shape error for exactly this case ("reported with its file
    and line (and kept whole), not a silent side line").

    Expected: the line is listed in the file's malformed lines (or
    warnings) with its line number."""
    src = tmp_path / "src"
    src.mkdir()
    path = src / f"2026_{PI_ID}.jsonl"
    damaged = {
        "type": "message",
        "id": "u0000001",
        "parentId": None,
        "timestamp": "2026-01-01T10:00:01.000Z",
        "message": "hello",
    }
    path.write_text(_dump(_pi_header()) + "\n" + _dump(damaged) + "\n")
    store = Store(tmp_path / "home")
    report = run_import(store, FORMATS["pi"], [str(path)])
    assert [n for _, n, _ in report.malformed] + [n for _, n, _ in report.warnings] == [2], report.to_dict()


def test_a_device_or_fifo_is_named_not_a_regular_file(tmp_path: Path) -> None:
    """Was a bug (wrong error): ``agentlog import --from claude /dev/null``
    (or a FIFO, e.g. ``<(cat file)``) failed with ``no such file or
    directory: /dev/null``: importers/paths.expand_paths raises
    SourceNotFound for anything that is neither a directory nor a regular
    file. The path exists; the message sends the user looking for a typo.
    (``--from bundle`` says the same through cli/imports.py.)

    Expected: one error line that says the path is not a regular file (or
    directory), exit status non-zero, no traceback."""
    fifo = tmp_path / "pipe.jsonl"
    os.mkfifo(fifo)
    for target in ("/dev/null", str(fifo)):
        result = run(tmp_path / "home", "import", "--from", "claude", target)
        assert result.exit_code != 0
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("agentlog: error: "), result.stderr
        assert "no such file" not in lines[0], lines[0]


def test_an_integer_beyond_64_bits_is_reported_not_rounded(tmp_path: Path) -> None:
    """Was a bug (silent corruption): orjson reads an integer beyond 64
    bits as a float, without an error. reader._parse calls orjson.loads and
    only falls back to a check (``_storable``: "an integer beyond 64 bits
    (the stdlib parser reads those)") when orjson *fails*, which it never
    does for such a number. So a tool call's argument 2**65 is stored as
    3.6893488147419103e+19 (and written back into ``arguments`` as that
    text: the call the model made is altered), with no malformed line and
    no warning. ``agentlog append`` and the server refuse such a number
    precisely so that it is never stored as a float (docs/cli.md,
    docs/server.md).

    Expected: the line is not silently rounded: either kept exactly (e.g.
    as its raw text in a custom event) and reported in the file's
    malformed lines or warnings."""
    src = tmp_path / "src"
    src.mkdir()
    path = src / f"2026_{PI_ID}.jsonl"
    big = 2**65
    call = {
        "type": "message",
        "id": "a0000001",
        "parentId": None,
        "timestamp": "2026-01-01T10:00:01.000Z",
        "message": {
            "role": "assistant",
            "content": [{"type": "toolCall", "id": "c1", "name": "kill", "arguments": {"pid": big}}],
        },
    }
    path.write_text(_dump(_pi_header()) + "\n" + _dump(call) + "\n")
    store = Store(tmp_path / "home")
    report = run_import(store, FORMATS["pi"], [str(path)])
    stored = json.dumps([e.record for e in load(store, PI_SESSION).events])
    assert str(big) in stored, stored[:400]  # the line's text, kept whole
    assert [n for _, n, _ in report.malformed] == [2], report.to_dict()
