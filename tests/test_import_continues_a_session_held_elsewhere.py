"""A session of the run that cannot be written does not cost its dependants their history.

When a session of an import run is left out (another process holds its
lease), a session in the same run that continues it (a Claude Code resume)
was stored without the history it continues, silently and for good: the
stored session was looked for neither among the run's sessions (it had
failed) nor among the store's (it was one of the run's)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from agentlog import Store
from importers_support import FIXTURES, do_import, load

FIXTURE = "claude-code_synthetic_dag_fork.jsonl"  # s1, then s2 continuing s1, s3 forking it
HOLD = """
import sys
from agentlog import Store
with Store(sys.argv[1]).open("claude-s1"):
    print("holding", flush=True)
    sys.stdin.read()
"""


def test_a_resume_copies_the_history_of_a_session_held_elsewhere(tmp_path: Path) -> None:
    lines = (FIXTURES / FIXTURE).read_text().splitlines(keepends=True)
    only_s1 = tmp_path / "only_s1.jsonl"
    only_s1.write_text("".join(line for line in lines if json.loads(line)["sessionId"] == "s1"))
    whole = tmp_path / "whole.jsonl"
    whole.write_text("".join(lines))
    store = Store(tmp_path / "home")
    do_import(store, "claude", only_s1)

    expected = Store.memory()
    do_import(expected, "claude", whole)

    # a writer in another process holds s1 while the run goes
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path / "home")], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        report = do_import(store, "claude", whole)
    finally:
        holder.communicate("", timeout=30)
    assert any("claude-s1" in error for error in report.errors)  # s1 itself is left out, and said so
    for sid in ("claude-s2", "claude-s3"):
        got = [e.record.get("content") for e in load(store, sid).path()]
        assert got == [e.record.get("content") for e in load(expected, sid).path()], sid
