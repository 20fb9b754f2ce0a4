"""A real writer process killed with SIGKILL at random moments, many times.

The child appends a mix of small events, blob-sized events and batches,
printing each id right after append() returns. After each kill the parent
checks what the child was promised: every acknowledged id is there
(invariant 1), HEAD names a durable event (invariant 5), no batch is half
there (invariant 6), fsck finds no error, and the next append works.

Rounds: AGENTLOG_KILL_ROUNDS (default 20).
"""

from __future__ import annotations

import os
import random
import signal
import time
import warnings

import pytest

from agentlog import NIL_ID, RecoveryWarning, Store
from helpers import BLOB_THRESHOLD, errors_of, expect_line, head_path, spawn

ROUNDS = int(os.environ.get("AGENTLOG_KILL_ROUNDS", "20"))
SID = "victim"


def _kill_at_random(proc, rng: random.Random) -> list[str]:
    """Let the child run a random while, SIGKILL it, return the ids it acknowledged."""
    time.sleep(rng.uniform(0.0, 0.12))
    proc.send_signal(signal.SIGKILL)
    out, err = proc.communicate()
    assert proc.returncode == -signal.SIGKILL, err
    # A line the kill cut short was never a complete acknowledgement.
    lines = out.split("\n")[:-1]
    return [line[4:] for line in lines if line.startswith("ack ") and len(line) == 40]


def _check_batches_whole(path) -> None:
    """Invariant 6: batch members (role batch.<size>.<i>) come whole and in order."""
    expect = None  # (size, next member) while inside a batch
    for e in path:
        role = e.role or ""
        if role.startswith("batch."):
            size, i = map(int, role.split(".")[1:])
            if expect is None:
                assert i == 0, f"batch member {i} of {size} without its start: {e.id}"
            else:
                assert (size, i) == expect, f"batch broken at {e.id}"
            expect = (size, i + 1) if i + 1 < size else None
        else:
            assert expect is None, f"batch cut short before {e.id}"
    assert expect is None, "the active path ends inside a batch"


def _check_after_kill(store: Store, acked: list[str]) -> None:
    # Before any writer repairs anything: the log alone must already hold it all.
    assert errors_of(store.fsck(SID)) == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RecoveryWarning)
        reader = store.open(SID, readonly=True)
    with reader:
        missing = [i for i in acked if i not in reader]
        assert not missing, f"{len(missing)} acknowledged events lost"
        head_file = head_path(store, SID).read_text().strip()
        assert head_file == NIL_ID or head_file in reader  # the cache lags, never lies

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RecoveryWarning)
        session = store.open(SID)
    with session:
        assert session.head == NIL_ID or session.head in session
        path = session.path()
        on_path = {e.id for e in path}
        # The child only appends, so what it was last promised is on the active path.
        if acked:
            assert acked[-1] in on_path
        for e in path[-6:]:
            if e.digest:
                assert session.resolve(e).record is not None
        _check_batches_whole(path)
        nxt = session.append("message", {"content": "after the kill"}, role="user")
        assert nxt.parent_id == (path[-1].id if path else NIL_ID)
    assert errors_of(store.fsck(SID)) == []


@pytest.mark.timeout(120)
def test_sigkill_never_loses_an_acknowledged_event(home):
    rng = random.Random(int(os.environ.get("AGENTLOG_KILL_SEED", "0")) or None)
    store = Store(home, blob_threshold=BLOB_THRESHOLD)
    acked_all: list[str] = []

    def start(round_no: int):
        threads = 1 if round_no % 3 else 3  # every third round: group commit under fire
        return spawn("writer", home, SID, rng.randrange(1 << 30), threads)

    # Each child is started a round early, so its interpreter start-up
    # overlaps the previous round instead of adding to it.
    upcoming = start(0)
    try:
        for round_no in range(ROUNDS):
            proc, upcoming = upcoming, None
            expect_line(proc, "loaded")
            proc.stdin.write("go\n")
            proc.stdin.flush()
            expect_line(proc, "ready")
            if round_no + 1 < ROUNDS:
                upcoming = start(round_no + 1)
            acked = _kill_at_random(proc, rng)
            acked_all += acked
            _check_after_kill(store, acked)
    finally:
        if upcoming is not None:
            upcoming.kill()
            upcoming.communicate()
    with store.open(SID, readonly=True) as r:
        assert all(i in r for i in acked_all)
        assert len(r) >= len(acked_all) + ROUNDS
    assert len(acked_all) > ROUNDS  # the children did get to write
