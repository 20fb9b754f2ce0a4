"""Part 8: how long the `agentlog` command takes to start and answer.

Each command runs in a fresh process, as a user at a shell (or a shell
completion on Tab) runs it, against a bare interpreter start: `python -c
pass` with the same interpreter and site-packages. Bytecode is compiled
before timing (pip compiles it at install time), whatever
PYTHONDONTWRITEBYTECODE says here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import agentlog
from agentlog import Store

from ._common import fmt_s
from ._measure import interleaved

NAME = "startup"

CLI = "from agentlog.cli import main; main()"


def _home(bench_dir: str) -> str:
    """A store of 100 small sessions (s0..s99), made once."""
    home = os.path.join(bench_dir, "startup-home")
    if not os.path.exists(os.path.join(home, "sessions")):
        store = Store(home, durability="off")
        for i in range(100):
            with store.create(name=f"s{i}") as s:
                for j in range(20):
                    s.append("message", {"content": f"message {j} of session {i}"}, role="user")
    return home


def run(ctx: dict[str, Any]) -> dict[str, Any]:
    home = _home(ctx["bench_dir"])
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "compileall", "-q", os.path.dirname(agentlog.__file__)], env=env, check=True)

    def command(*args: str) -> Any:
        argv = [sys.executable, "-c", CLI, *args] if args else [sys.executable, "-c", "pass"]

        def op() -> int:
            done = subprocess.run(argv, env=env, capture_output=True, check=True)
            return len(done.stdout)

        return op

    ops = {
        "python -c pass": command(),
        "agentlog --version": command("--version"),
        "agentlog ls (100 sessions)": command("--home", home, "ls"),
        "agentlog log s1 (20 events)": command("--home", home, "log", "s1"),
        "agentlog --help": command("--help"),
    }
    rounds = 7 if ctx["quick"] else 21
    return {"times": interleaved(ops, rounds, warmup=1)}


def report(res: dict[str, Any]) -> tuple[list[tuple], list[tuple]]:
    times = res["times"]
    bare = times["python -c pass"]["median_s"]
    ratios = [
        (f"{name} / python -c pass", t["median_s"] / bare, None)
        for name, t in times.items()
        if name != "python -c pass"
    ]
    absolute = [
        ("start-up, fresh process (median)", "; ".join(f"{n} {fmt_s(t['median_s'])}" for n, t in times.items()))
    ]
    return ratios, absolute
