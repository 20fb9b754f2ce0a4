"""`make demo` end to end: it exits 0 and leaves a store fsck finds clean."""

from __future__ import annotations

import os
import subprocess
import sys

from agentlog import Store


def test_demo_runs_and_leaves_a_clean_store(tmp_path):
    home = tmp_path / "demo-home"
    env = dict(os.environ, AGENTLOG_DEMO_HOME=str(home), COLUMNS="120")
    out = subprocess.run(
        [sys.executable, "-m", "agentlog.demo"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-4000:]
    assert "SIGKILL" in out.stdout
    # Step 2 shows the synthetic result it means to show, not '' (rich once
    # swallowed "[interrupted: ...]" as a markup tag).
    flat = " ".join(out.stdout.split())
    assert "is answered in the context: '[interrupted: this tool call did not complete" in flat

    store = Store(home)
    assert store.fsck() == []
    rows = store.list()
    assert len(rows) == 2  # the session and its fork
    (fork,) = [r for r in rows if r.meta.get("forked_from")]
    (main,) = [r for r in rows if not r.meta.get("forked_from")]
    assert fork.meta["forked_from"]["session"] == main.id
    with store.open(main.id, readonly=True) as s:
        every = [e.kind for e in s.entries()]
        assert {"branch_summary", "compaction", "tool_call", "tool_result", "state"} <= set(every)
        assert s.context()[0].kind == "compaction"
        # The killed turn's call has no result, and the next request answers it.
        calls = [s.event(e.id).record["name"] for e in s.entries() if e.kind == "tool_call"]
        results = [s.event(e.id).record["name"] for e in s.entries() if e.kind == "tool_result"]
        assert "slow_build" in calls and "slow_build" not in results

    # Running it again replaces its own store, and only its own.
    again = subprocess.run(
        [sys.executable, "-m", "agentlog.demo"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 0, again.stderr[-4000:]
    assert len(Store(home).list()) == 2
    foreign = tmp_path / "not-a-demo"
    foreign.mkdir()
    (foreign / "precious.txt").write_text("keep me")
    refused = subprocess.run(
        [sys.executable, "-m", "agentlog.demo"],
        cwd=tmp_path,
        env=dict(env, AGENTLOG_DEMO_HOME=str(foreign)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode != 0
    assert (foreign / "precious.txt").read_text() == "keep me"
