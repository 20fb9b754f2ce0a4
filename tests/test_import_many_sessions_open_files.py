"""An import holds one session open at a time, not every session of the run.

Each session it wrote stayed open (its lease, its files; on PostgreSQL a
connection) until the run ended: at ``ulimit -n 1024`` a file store took
only 339 of 1,200 Claude Code sessions a run, and PostgreSQL ran out of
connections past about 95, for every client of the server."""

from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

N = 150
LIMIT = 64  # open files: Python's own, and a handful of sessions at most


def _session_file(directory: Path, n: int, lines: int) -> None:
    sid = f"00000000-0000-4000-8000-{n:012d}"
    rows, parent = [], None
    for i in range(lines):
        uuid = f"{n:08d}-0000-4000-8000-{i:012d}"
        role = "user" if i % 2 == 0 else "assistant"
        message = {"role": role, "content": f"turn {i} of {n}"}
        if role == "assistant":
            message = {"id": f"msg_{n}_{i}", "type": "message", "role": role, "model": "m",
                       "content": [{"type": "text", "text": f"reply {i} of {n}"}]}  # fmt: skip
        rows.append({"parentUuid": parent, "sessionId": sid, "type": role, "message": message, "uuid": uuid,
                     "timestamp": f"2025-07-01T10:{i // 60:02d}:{i % 60:02d}.000Z", "cwd": "/p"})  # fmt: skip
        parent = uuid
    (directory / f"{sid}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _import(home: Path, source: Path) -> dict[str, object]:
    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, LIMIT))

    done = subprocess.run(
        [sys.executable, "-c", "from agentlog.cli import main; main()", "--home", str(home)]
        + ["import", "--from", "claude", str(source), "--json"],
        capture_output=True,
        text=True,
        preexec_fn=limited,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report: dict[str, object] = json.loads(done.stdout)
    return report


def test_an_import_of_many_sessions_under_a_small_open_file_limit(tmp_path: Path) -> None:
    source = tmp_path / "projects"
    source.mkdir()
    for n in range(N):
        _session_file(source, n, 2)
    home = tmp_path / "home"
    first = _import(home, source)
    assert first["errors"] == [] and len(first["sessions"]) == N  # type: ignore[arg-type]
    for n in range(N):  # every session grows: the second run opens each existing one
        _session_file(source, n, 4)
    second = _import(home, source)
    assert second["errors"] == [] and second["events"] == 2 * N
    assert not list((home / "sessions").glob(".new-*"))


FOLLOW = """
import resource, sys
resource.setrlimit(resource.RLIMIT_NOFILE, ({limit}, {limit}))
from agentlog import Store
from agentlog.importers import FORMATS, follow
total = follow(Store(sys.argv[1]), FORMATS["claude"], [sys.argv[2]], interval=0, max_polls=2, sleep=lambda _: None)
print(len(total.errors), total.events)
"""


def test_follow_holds_a_bounded_number_of_sessions_open_in_a_poll(tmp_path: Path) -> None:
    source = tmp_path / "projects"
    source.mkdir()
    n = 120  # more than --follow keeps open (KEEP_OPEN), under a limit that fits only that many
    for i in range(n):
        _session_file(source, i, 2)
    done = subprocess.run(
        [sys.executable, "-c", FOLLOW.format(limit=320), str(tmp_path / "home"), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["0", str(2 * n)]


def test_a_session_written_while_an_import_had_it_closed_is_left_for_the_next_import(tmp_path: Path) -> None:
    # The import closes a session between reading its maps and writing to
    # it; a writer that came between (another import) makes those maps wrong,
    # which is said, as the lease used to say it, and nothing is written.
    import pytest

    from agentlog import SessionLocked, Store
    from agentlog.importers.builder import SessionBuilder

    source = tmp_path / "projects"
    source.mkdir()
    _session_file(source, 1, 2)
    home = tmp_path / "home"
    _import(home, source)
    store = Store(home)
    sid = "claude-00000000-0000-4000-8000-000000000001"
    b = SessionBuilder(store, sid, "00000000-0000-4000-8000-000000000001", "claude")
    b.read_state()
    b.ensure_loaded()
    b.release()
    with store.open(sid) as other:
        other.append("message", {"content": "by hand"}, role="user")
    with pytest.raises(SessionLocked, match="while this import had it closed"):
        b.ensure_loaded()
    assert b.session is None
