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
import shutil
import signal
import subprocess
import sys
import time
import warnings

import pytest

from agentlog import NIL_ID, Store

from .conftest import EXHAUSTIVE, SEED, record_figure

#: Rounds, writers per round (one more each round on a new session), readers.
#: Sessions rotate every ROTATE rounds so recovery and checks stay O(a round).
ROUNDS, WRITERS, READERS, ROTATE = (115, 8, 3, 10) if EXHAUSTIVE else (6, 3, 2, 3)

# Writers are forked from a server that has imported agentlog once (a
# Python start costs more than a round). Each child is a real process with
# its own descriptors, lease and fsyncs; it writes each acknowledged id to
# its ack file only after append() returned: an id there was promised
# durable. The server only forks and reaps; the test SIGKILLs the child.
FORKSERVER = r"""
import os, random, sys, traceback
from agentlog import Store, SessionNotFound


def writer(home, sid, ack_path, seed):
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


while True:
    line = sys.stdin.readline()
    if not line:
        break
    cmd, *args = line.split()
    if cmd == "spawn":
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                null = os.open(os.devnull, os.O_RDWR)
                os.dup2(null, 0)
                os.dup2(null, 1)
                os.dup2(os.open(args[2] + ".err", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), 2)
                writer(*args)
            except BaseException:
                traceback.print_exc()
                sys.stderr.flush()
            os._exit(code)
        print(pid, flush=True)
    elif cmd == "reap":
        print(os.waitpid(int(args[0]), 0)[1], flush=True)
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


class ForkServer:
    """Forks writer processes on request (see FORKSERVER)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", FORKSERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def _ask(self, line: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        if not answer:
            raise AssertionError("the fork server died")
        return answer.strip()

    def spawn(self, home: str, sid: str, ack: str, seed: int) -> int:
        return int(self._ask(f"spawn {home} {sid} {ack} {seed}"))

    def kill(self, pid: int, ack: str) -> None:
        """SIGKILL a writer; it must have been running until then."""
        os.kill(pid, signal.SIGKILL)
        status = int(self._ask(f"reap {pid}"))
        if not (os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL):
            err = open(ack + ".err").read() if os.path.exists(ack + ".err") else ""
            raise AssertionError(f"writer {pid} ended on its own ({status}): {err[-3000:]}")

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def _acked(path: str) -> list[list[str]]:
    """Acknowledged appends (each a list of ids); a cut-off last line is not one."""
    if not os.path.exists(path):
        return []
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")[:-1]  # the part after the last newline is torn
    return [line.decode().split() for line in lines if line and line != b"ready"]


def _wait_ready(path: str, deadline: float = 120.0) -> None:
    end = time.monotonic() + deadline
    while True:
        if os.path.exists(path):
            with open(path, "rb") as f:
                if b"ready\n" in f.read():
                    return
        if time.monotonic() > end:
            err = open(path + ".err").read() if os.path.exists(path + ".err") else ""
            raise AssertionError(f"writer never started: {err[-3000:]}")
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


def _damage_and_repair(home: str, sid: str, scratch: str, rng: random.Random) -> str:
    """On a copy of a recovered session: flip one byte inside a random event
    record (past its id and parent, before its newline), repair, and check
    that repair loses no intact event: HEAD stays, every event is there (the
    damaged one as a tombstone of the same id), every event reaches the
    root, nothing is reported cut, fsck is clean. Returns the damaged id."""
    copy = os.path.join(scratch, f"repair-{sid}")
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(os.path.join(home, "sessions", sid), os.path.join(copy, "sessions", sid))
    store = Store(copy, chunk_size=64 * 1024, blob_threshold=2048)
    with store.open(sid, readonly=True) as s:
        head = s.head
        before = {e.id: e.parent_id for e in s.entries()}
    chunks = os.path.join(copy, "sessions", sid, "chunks")
    lines = []
    for name in sorted(os.listdir(chunks)):
        data = open(os.path.join(chunks, name), "rb").read()
        pos = 0
        for line in data.split(b"\n")[:-1]:
            if line.startswith(b'{"id"'):
                lines.append((name, pos, len(line), line[7:43].decode()))
            pos += len(line) + 1
    if not lines:
        return ""
    name, pos, length, damaged = rng.choice(lines)
    path = os.path.join(chunks, name)
    data = bytearray(open(path, "rb").read())
    data[pos + rng.randrange(100, length - 1)] ^= 1 << rng.randrange(8)
    open(path, "wb").write(bytes(data))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        actions = store.repair(sid)
    assert any(f"tombstone for event {damaged}" in a for a in actions), actions
    assert not any("reachable" in a or "moved HEAD" in a for a in actions), actions
    with store.open(sid, readonly=True) as s:
        after = {e.id: e.parent_id for e in s.entries()}
        assert after == before, f"{sid}: repair changed the events"
        assert s.head == head, f"{sid}: repair moved HEAD"
        assert s.event(damaged).kind == "tombstone"
        reachable = {NIL_ID}
        for event_id in sorted(after):
            if after[event_id] in reachable:
                reachable.add(event_id)
        assert reachable == set(after) | {NIL_ID}, f"{sid}: events cut from the root"
    errors = [str(p) for p in store.fsck(sid) if p.severity == "error"]
    assert not errors, errors
    shutil.rmtree(copy)
    return damaged


@pytest.mark.timeout(3600 if EXHAUSTIVE else 300)
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
    server = ForkServer()
    kills = verified = repairs = 0
    acked: dict[str, list[list[str]]] = {}
    started = time.monotonic()
    load_before = os.getloadavg()[0]
    try:
        for round_no in range(ROUNDS):
            generation = round_no // ROTATE
            writers = []
            for w in range(WRITERS):
                sid = f"w{w}g{generation}"
                ack = str(tmp_path / f"{sid}.r{round_no}.ack")
                writers.append((sid, ack, server.spawn(home, sid, ack, rng.randrange(1 << 30))))
            # One more writer per round on a new session, killed without
            # waiting for it: some of these die inside create().
            newborn = f"c{round_no}"
            ack = str(tmp_path / f"{newborn}.ack")
            writers.append((newborn, ack, server.spawn(home, newborn, ack, rng.randrange(1 << 30))))
            for _sid, ack, _pid in writers[:-1]:
                _wait_ready(ack)
            # Each writer dies at its own random moment.
            deadlines = sorted((rng.uniform(0.0, 0.3), i) for i in range(len(writers)))
            start = time.monotonic()
            for delay, i in deadlines:
                time.sleep(max(0.0, start + delay - time.monotonic()))
                sid, ack, pid = writers[i]
                server.kill(pid, ack)
                kills += 1
            for sid, ack, _pid in writers:
                acked.setdefault(sid, []).extend(_acked(ack))
                if sid == newborn and not Store(home).exists(sid):
                    assert not acked[sid], f"{sid}: acknowledged appends but no session"
                    continue
                _verify(home, sid, acked[sid])
                verified += 1
                last_of_generation = round_no % ROTATE == ROTATE - 1 or round_no == ROUNDS - 1
                if sid != newborn and last_of_generation and _damage_and_repair(home, sid, str(tmp_path), rng):
                    repairs += 1
            for r in readers:
                if r.poll() is not None:
                    raise AssertionError(f"a reader failed: {r.stderr.read().decode()[-3000:]}")
    finally:
        server.close()
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
        repairs_checked=repairs,
        seconds=int(time.monotonic() - started),
        load_before=f"{load_before:.2f}",
        load_after=f"{os.getloadavg()[0]:.2f}",
    )
    assert kills == ROUNDS * (WRITERS + 1) and appends > 0 and reads > 0 and repairs > 0


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
