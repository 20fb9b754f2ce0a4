"""fsck of a session a writer is appending to reports no false damage.

fsck scans the log, then reads the index; a writer's appends in between
put index entries past what the scan read, which fsck called "index entry
N names X, the log does not agree", an error, in about one run in four."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentlog import Store
from agentlog._fs import OsFs
from agentlog.backends.files.chunklog import ChunkLog
from agentlog.backends.files.fsck import _verify_index, scan_log
from agentlog.backends.files.layout import Layout


def _problems_after_appends(tmp_path: Path, live: bool) -> list[tuple[Any, ...]]:
    store = Store(tmp_path / "home")
    with store.create(session_id="s") as s:
        for i in range(5):
            s.append("message", {"content": f"m{i}"}, role="user")
        layout, fs = Layout(str(tmp_path / "home")), OsFs()
        log = ChunkLog(fs, layout.chunks("s"), chunk_size=1 << 62, durable=False, writable=False)
        try:
            scan = scan_log(log)  # what fsck read of the log...
        finally:
            log.close()
        for i in range(3):  # ...before the writer went on
            s.append("message", {"content": f"later {i}"}, role="user")
        problems: list[tuple[Any, ...]] = []
        _verify_index(
            fs,
            layout.index("s"),
            layout.legacy_index("s"),
            scan,
            lambda *args, **kw: problems.append((*args, kw)),
            live,
        )
    return problems


def test_index_entries_newer_than_the_scan_are_a_live_writer_at_work(tmp_path: Path) -> None:
    assert _problems_after_appends(tmp_path, live=True) == []


def test_without_a_live_writer_the_same_disagreement_is_reported(tmp_path: Path) -> None:
    (problem,) = _problems_after_appends(tmp_path, live=False)
    assert "the log does not agree" in problem[2]
