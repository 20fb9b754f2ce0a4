"""Bounded load on loopback: 100 SSE subscribers, one writer process, 1,000 events.

Runs the harness of bench/server_fanout.py (``agentlog serve`` and the
writer are separate processes; the server sees the writer's commits only
through the file watch). It asserts correctness, never a time: every
subscriber receives every event, once, in append order. The latency
figures are the bench's business (docs/performance.md).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette", reason="the 'server' extra is not installed")

# The harness lives in bench/ at the repository's root, which is on
# sys.path under `python -m pytest` but not under a bare `pytest`.
ROOT = str(Path(__file__).resolve().parent.parent)
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from bench.server_fanout import run_fanout  # noqa: E402

pytestmark = pytest.mark.timeout(300)


def test_hundred_subscribers_get_every_event_in_order(tmp_path: Any) -> None:
    result = run_fanout(str(tmp_path / "home"), subscribers=100, events=1000)
    assert len(result.written) == 1000
    assert len(result.received) == 100
    for got in result.received:
        assert got == result.written
    assert len(result.latencies_ms) == 100 * 1000
