"""Kill storms: writer processes SIGKILLed at random moments, many times over,
while reader processes keep opening, reading and listing.

Invariants 1, 6 and 7 with real processes and the real disk (tmp_path):
after every round each session opens, every event a writer was told was
durable is there, every batch is whole or absent, fsck finds no error; the
readers never fail. A race of several processes to open one session for
writing has exactly one winner; the others fail at once with SessionLocked
(each loser's answer arrives while the winner still holds the lease).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import warnings

import pytest

from agentlog import NIL_ID, Store

from .conftest import EXHAUSTIVE, SEED, record_figure

ROUNDS, WRITERS, READERS = (40, 4, 3) if EXHAUSTIVE else (5, 3, 2)

# The writer acknowledges an append by writing its ids to the ack file only
# after append() returned: an id in that file was promised durable.
WRITER = r"""
import os, random, sys
from agentlog import Store, SessionNotFound
home, sid, ack_path, seed = sys.argv[1:5]
rng = random.Random(int(seed))
store = Store(home, chunk_size=64 * 1024, blob_threshold=2048)
try:
    s = store.open(sid)
except SessionNotFound:
    s = store.create(session_id=sid, name=sid)
ack = os.open(ack_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
os.write(ack, b"ready\n")
ids = []
i = 0
while True:
    i += 1
    tag = f"{seed}-{i}"
    r = rng.random()
    if r < 0.55:
        evs = [s.append("message", {"content": f"{sid} {tag}"}, "user")]
    elif r < 0.8:
        n = rng.randrange(2, 6)
        evs = s.append_many([("message", {"batch": tag, "n": n, "k": k}, "assistant") for k in range(n)])
    elif r < 0.9:
        evs = [s.append("tool_result", {"content": tag + "x" * rng.randrange(2100, 30000)}, "tool")]
    elif ids:
        s.checkout(rng.choice(ids))
        evs = []
    else:
        evs = []
    ids += [e.id for e in evs]
    if evs:
        os.write(ack, (" ".join(e.id for e in evs) + "\n").encode())
"""

# A reader loops until the stop file appears: list, open read-only, walk
# the path and the context, resolve blobs. Any exception ends it with a
# traceback and a non-zero status.
READER = r"""
import os, random, sys, warnings
from agentlog import Store
home, stop, seed = sys.argv[1:4]
warnings.simplefilter("ignore")
rng = random.Random(int(seed))
store = Store(home, chunk_size=64 * 1024, blob_threshold=2048)
reads = lists = 0
while not os.path.exists(stop):
    rows = store.list()
    lists += 1
    rows_broken = store.scan()[1]
    if rows_broken:
        raise SystemExit(f"unlistable sessions: {rows_broken}")
    for row in rng.sample(rows, min(2, len(rows))):
        with store.open(row.id, readonly=True) as s:
            path = s.path()
            s.context()
            for e in path[-3:]:
                s.resolve(e)
            if path and path[-1].id != s.head:
                raise SystemExit(f"path of {row.id} does not end at HEAD")
        reads += 1
print(reads, lists)
"""


def _acked(path: str) -> list[list[str]]:
    """Acknowledged appends (each a list of ids); a cut-off last line is not one."""
    if not os.path.exists(path):
        return []
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")[:-1]  # the part after the last newline is torn
    return [line.decode().split() for line in lines if line and line != b"ready"]


def _wait_ready(path: str, proc: subprocess.Popen) -> None:
    while True:
        if os.path.exists(path):
            with open(path, "rb") as f:
                if b"ready\n" in f.read():
                    return
        if proc.poll() is not None:
            raise AssertionError(f"writer exited before starting: {proc.stderr.read().decode()}")
        time.sleep(0.005)


def _verify(home: str, sid: str, acked: list[list[str]]) -> int:
    store = Store(home, chunk_size=64 * 1024, blob_threshold=2048)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with store.open(sid) as s:  # a writer's open: recovery runs here
            for group in acked:
                for event_id in group:
                    s.event(event_id)  # EventNotFound would be an acknowledged loss
            batches: dict[str, list] = {}
            for entry in s.entries():
                rec = s.event(entry.id).record
                if isinstance(rec, dict) and "batch" in rec:
                    batches.setdefault(rec["batch"], []).append(rec)
            for tag, members in batches.items():
                assert len(members) == members[0]["n"], f"{sid}: batch {tag} is partial"
            assert s.head == NIL_ID or s.head in s
            s.path()
            count = len(s)
    errors = [str(p) for p in store.fsck(sid) if p.severity == "error"]
    assert not errors, errors
    return count


@pytest.mark.timeout(1800 if EXHAUSTIVE else 300)
def test_kill_storm_of_crashing_writers(tmp_path):
    rng = random.Random(f"{SEED}-kill")
    home = str(tmp_path / "home")
    Store(home)
    stop = str(tmp_path / "stop")
    readers = [
        subprocess.Popen(
            [sys.executable, "-c", READER, home, stop, str(rng.randrange(1 << 30))],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(READERS)
    ]
    kills = verified = 0
    acked: dict[str, list[list[str]]] = {}
    try:
        for round_no in range(ROUNDS):
            writers = []
            for w in range(WRITERS):
                sid = f"w{w}"
                ack = str(tmp_path / f"{sid}.r{round_no}.ack")
                proc = subprocess.Popen(
                    [sys.executable, "-c", WRITER, home, sid, ack, str(rng.randrange(1 << 30))],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                )
                writers.append((sid, ack, proc))
            # One more writer per round on a new session, killed without
            # waiting for it: some of these die inside create().
            newborn = f"c{round_no}"
            ack = str(tmp_path / f"{newborn}.ack")
            writers.append(
                (
                    newborn,
                    ack,
                    subprocess.Popen(
                        [sys.executable, "-c", WRITER, home, newborn, ack, str(rng.randrange(1 << 30))],
                        stdout=subprocess.DEVNULL,
                        stderr=subprocess.PIPE,
                    ),
                )
            )
            for _sid, ack, proc in writers[:-1]:
                _wait_ready(ack, proc)
            # Each writer dies at its own random moment.
            deadlines = sorted((rng.uniform(0.0, 0.3), i) for i in range(len(writers)))
            start = time.monotonic()
            for delay, i in deadlines:
                time.sleep(max(0.0, start + delay - time.monotonic()))
                sid, ack, proc = writers[i]
                if proc.poll() is not None:
                    raise AssertionError(f"writer {sid} died on its own: {proc.stderr.read().decode()}")
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                kills += 1
            for sid, ack, _proc in writers:
                acked.setdefault(sid, []).extend(_acked(ack))
                if sid == newborn and not Store(home).exists(sid):
                    assert not acked[sid], f"{sid}: acknowledged appends but no session"
                    continue
                _verify(home, sid, acked[sid])
                verified += 1
            for r in readers:
                if r.poll() is not None:
                    raise AssertionError(f"a reader failed: {r.stderr.read().decode()[-3000:]}")
    finally:
        open(stop, "w").close()
        outputs = []
        for r in readers:
            try:
                out, err = r.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                r.kill()
                out, err = r.communicate()
            outputs.append((r.returncode, out.decode(), err.decode()))
    for code, _out, err in outputs:
        assert code == 0, f"a reader failed: {err[-3000:]}"
    reads = sum(int(out.split()[0]) for _, out, _ in outputs)
    lists = sum(int(out.split()[1]) for _, out, _ in outputs)
    appends = sum(len(v) for v in acked.values())
    record_figure(
        "kill",
        "storm",
        rounds=ROUNDS,
        writers=WRITERS,
        readers=READERS,
        kills=kills,
        acked_appends=appends,
        reader_opens=reads,
        reader_lists=lists,
        recoveries_verified=verified,
    )
    assert kills == ROUNDS * (WRITERS + 1) and appends > 0 and reads > 0


RACE = r"""
import os, sys, time
from agentlog import Store, SessionLocked
home, sid, go, release, out = sys.argv[1:6]
store = Store(home)
open(out + ".ready", "w").close()
while not os.path.exists(go):
    time.sleep(0.001)
try:
    s = store.open(sid)
except SessionLocked as exc:
    answer = "locked " + (exc.holder or "")
else:
    answer = "won"
with open(out + ".tmp", "w") as f:
    f.write(answer)
os.rename(out + ".tmp", out)
if answer != "won":
    raise SystemExit(0)
while not os.path.exists(release):
    time.sleep(0.001)
s.append("message", {"content": "the winner writes"}, "user")
s.close()
"""


@pytest.mark.timeout(300)
def test_open_for_writing_race_has_one_winner(tmp_path):
    rounds, contenders = (30, 6) if EXHAUSTIVE else (4, 4)
    home = str(tmp_path / "home")
    store = Store(home)
    store.create(session_id="contested").close()
    for round_no in range(rounds):
        go, release = str(tmp_path / f"go{round_no}"), str(tmp_path / f"release{round_no}")
        outs = [str(tmp_path / f"r{round_no}.{i}") for i in range(contenders)]
        procs = [
            subprocess.Popen([sys.executable, "-c", RACE, home, "contested", go, release, out], stderr=subprocess.PIPE)
            for out in outs
        ]
        while not all(os.path.exists(o + ".ready") for o in outs):
            time.sleep(0.002)
        open(go, "w").close()
        # Every loser answers while the winner still holds the lease: no one
        # waited for it (the winner only lets go once all answers are in).
        while not all(os.path.exists(o) for o in outs):
            assert all(p.poll() in (None, 0) for p in procs), "a contender crashed"
            time.sleep(0.002)
        results = [open(o).read() for o in outs]
        open(release, "w").close()
        for p in procs:
            assert p.wait(timeout=60) == 0, p.stderr.read().decode()
        assert results.count("won") == 1, results
        assert all(r.startswith("locked pid ") for r in results if r != "won"), results
    with store.open("contested", readonly=True) as s:
        assert len(s) == rounds
    record_figure("kill", "lease race", rounds=rounds, contenders=contenders)
