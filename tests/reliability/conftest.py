"""Shared switches of the reliability families.

``AGENTLOG_EXHAUSTIVE=1`` turns sampling into enumeration (``make
crash-test``, ``make fuzz``); ``AGENTLOG_SEED`` replays a sampled run.
Every family reports what it ran (crash states, faults, kills, cases) in
the terminal summary, and into ``$AGENTLOG_FIGURES`` (JSON) when set.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile

import pytest

EXHAUSTIVE = os.environ.get("AGENTLOG_EXHAUSTIVE") == "1"
SEED = int(os.environ.get("AGENTLOG_SEED", "20240917"))

_figures: dict[str, dict] = {}


def record_figure(family: str, label: str, **counts) -> None:
    _figures.setdefault(family, {})[label] = counts


@pytest.fixture
def scratch():
    """A scratch directory in memory when the machine has one: the crash and
    fault families write thousands of small trees and model the disk
    themselves; kill storms use the real disk (tmp_path)."""
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    path = tempfile.mkdtemp(prefix="agentlog-rel-", dir=base)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def pytest_terminal_summary(terminalreporter):
    if not _figures:
        return
    tr = terminalreporter
    mode = "exhaustive" if EXHAUSTIVE else f"sampled, seed {SEED}"
    tr.section(f"reliability figures ({mode})")
    for family, rows in sorted(_figures.items()):
        totals: dict[str, int] = {}
        for label, counts in sorted(rows.items()):
            tr.write_line(f"{family:12} {label:28} " + ", ".join(f"{k}={v}" for k, v in counts.items()))
            for k, v in counts.items():
                if isinstance(v, int):
                    totals[k] = totals.get(k, 0) + v
        tr.write_line(f"{family:12} {'TOTAL':28} " + ", ".join(f"{k}={v}" for k, v in totals.items()))
    out = os.environ.get("AGENTLOG_FIGURES")
    if out:
        with open(out, "w") as f:
            json.dump({"mode": mode, "figures": _figures}, f, indent=2, sort_keys=True)
