"""Crash states: every prefix of a workload's file-system operations, and at
each the states of not-yet-synced data a POSIX file system may leave.

Invariants 1, 2, 3, 5, 6: after any legal crash state the store opens,
fsck finds no error, every acknowledged event (and blob, and session.json
update) is there, a batch is whole or absent, HEAD names a durable event,
and the next append works. Under ``durability="off"`` the same holds for
a process crash (the page cache survives); across a power loss ``off``
promises nothing but typed errors and a working ``repair``.

Sampled by default (seeded); every state under AGENTLOG_EXHAUSTIVE=1.
"""

from __future__ import annotations

import os
import random
import warnings
from dataclasses import dataclass

import pytest

from agentlog import Store
from agentlog.errors import AgentlogError

from .conftest import EXHAUSTIVE, SEED, record_figure
from .crashsim import CrashState, FsModel, RecordingFs, materialize
from .workloads import (
    WORKLOADS,
    Version,
    Violation,
    Workload,
    allowed_versions,
    check_recovered,
    check_repair,
    repair_all,
    snapshot,
)

#: Distinct states to check per (workload, durability) when sampling, on
#: top of the two fixed states at every prefix ("process crash" and "bare
#: durable state"). Sized so the family runs in about a minute on 2 cores; the
#: full-mode universe of each workload is in docs/reliability.md.
SAMPLED = {
    ("appends", "full"): 1100,
    ("blobs", "full"): 650,
    ("rotation", "full"): 2300,
    ("checkout", "full"): 3300,
    ("sessions", "full"): 2800,
}
#: Every other (workload, durability), ``off`` ones included.
SAMPLED_DEFAULT = 300
#: Sampling walks at most this many combinations of a prefix, then draws.
ENUMERATE_LIMIT = 2000
#: ``off`` across a power loss promises only typed errors and a working
#: repair, and leaves so much unsynced that its product explodes: exhaustive
#: mode enumerates an ``off`` prefix only up to this many states, then samples
#: as many more (reported as capped_prefixes).
OFF_CAP = 300
#: Every this many states the contract covers, repair runs on the state too
#: (before recovery) and must keep exactly what a reader saw.
REPAIR_EVERY = 10 if EXHAUSTIVE else 25


def check_repair_all(home: str, *, durability: str, chunk_size: int, blob_threshold: int) -> int:
    store = Store(home, durability, chunk_size=chunk_size, blob_threshold=blob_threshold)
    for sid in sorted(store.backend.session_ids()):
        with store.open(sid, readonly=True) as ro:
            seen = snapshot(ro)
        check_repair(store, sid, seen)
    return 1


@dataclass
class Recording:
    name: str
    durability: str
    ops: list
    versions: dict[str, list[Version]]
    chunk_size: int
    blob_threshold: int


def record(name: str, durability: str, root: str) -> Recording:
    home = os.path.join(root, "recorded")
    os.makedirs(home)
    fs = RecordingFs(home)
    w = Workload(home, durability, fs)
    WORKLOADS[name](w)
    w.close_all()
    return Recording(name, durability, fs.ops, w.versions, w.chunk_size, w.blob_threshold)


def _signature(rec: Recording, k: int) -> tuple:
    """What the check depends on besides the bytes: the legal versions."""
    return tuple(
        (sid, allowed_versions(v, k)[0].end, len(allowed_versions(v, k))) for sid, v in sorted(rec.versions.items())
    )


def explore(rec: Recording, root: str, rng: random.Random, *, budget: int, exhaustive: bool) -> dict:
    """Generate crash states prefix by prefix and check each distinct one."""
    model = FsModel()
    target = os.path.join(root, "state")
    seen_states: set[bytes] = set()
    seen_checks: set[tuple] = set()
    seen_parts: set[tuple] = set()
    counts = {
        "prefixes": len(rec.ops) + 1,
        "states": 0,
        "checks": 0,
        "strict": 0,
        "off_diverged": 0,
        "capped_prefixes": 0,
        "fixed": 0,
        "repaired": 0,
    }
    if exhaustive:
        counts["covered"] = 0

    def check(state, strict: bool, k: int) -> bool:
        key = state.key()
        sig = (key, _signature(rec, k))
        if sig in seen_checks:
            return False
        seen_checks.add(sig)
        seen_states.add(key)
        if exhaustive:
            # Sessions are independent (each check reads one session's
            # directory, plus the listing): a state whose every session part
            # was already checked under the same legal versions is covered.
            parts = _parts(state, rec, k)
            if parts <= seen_parts:
                counts["covered"] += 1
                return False
            seen_parts.update(parts)
        materialize(state, target)
        kwargs = dict(durability=rec.durability, chunk_size=rec.chunk_size, blob_threshold=rec.blob_threshold)
        counts["checks"] += 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if strict:
                counts["strict"] += 1
                try:
                    check_recovered(target, rec.versions, k, **kwargs)
                    if counts["strict"] % REPAIR_EVERY == 0:
                        # Repair of the same state, before any recovery: it keeps
                        # exactly what a reader sees (a torn tail goes to quarantine).
                        materialize(state, target)
                        counts["repaired"] += check_repair_all(target, **kwargs)
                except (Violation, AgentlogError) as exc:
                    raise AssertionError(
                        f"{rec.name}/{rec.durability}: crash after {k} of {len(rec.ops)} ops "
                        f"(last: {_show(rec.ops[k - 1]) if k else 'none'}):\n{exc}\n"
                        f"state: {_show_state(state)}"
                    ) from exc
                return True
            try:
                check_recovered(target, rec.versions, k, **kwargs)
            except (Violation, AgentlogError):
                counts["off_diverged"] += 1
                materialize(state, target)
                try:
                    repair_all(target, **kwargs)
                    counts["repaired"] += 1
                except (Violation, AgentlogError) as exc:
                    raise AssertionError(
                        f"{rec.name}/off: repair fails after a crash after {k} ops:\n{exc!r}\n"
                        f"state: {_show_state(state)}"
                    ) from exc
        return True

    power = rec.durability == "full"
    if exhaustive:
        for k in range(len(rec.ops) + 1):
            if k:
                model.apply(rec.ops[k - 1])
            process_crash = model.sample(rng, True, mode="all")
            pk = process_crash.key()
            counts["fixed"] += check(process_crash, True, k)
            for n, state in enumerate(model.choices(exhaustive=True)):
                if not power and n >= OFF_CAP:
                    counts["capped_prefixes"] += 1
                    for _ in range(OFF_CAP):
                        state = model.sample(rng, True, mode="random")
                        check(state, state.key() == pk, k)
                    break
                check(state, power or state.key() == pk, k)
        counts["states"] = len(seen_states)
        return counts

    # Sampling: at every prefix the process-crash and the bare durable state,
    # then ``budget`` more spread over the prefixes. A prefix with fewer new
    # states than its share passes the rest on; a second pass spends what is
    # left where there is still something new.
    for sweep in range(2):
        model = FsModel()
        carry = 0.0
        per_prefix = (budget - counts["checks"] + counts["fixed"]) / max(len(rec.ops), 1)
        if sweep and per_prefix < 0.5:
            break
        for k in range(len(rec.ops) + 1):
            if k:
                model.apply(rec.ops[k - 1])
            process_crash = model.sample(rng, False, mode="all")
            pk = process_crash.key()
            if not sweep:
                counts["fixed"] += check(process_crash, True, k)
                counts["fixed"] += check(model.sample(rng, False, mode="none"), power, k)
            carry += per_prefix
            want = int(carry)
            for state in _draw(model, rng, want, (rec, k), seen_checks):
                carry -= check(state, power or state.key() == pk, k)
    counts["states"] = len(seen_states)
    return counts


def _parts(state, rec: Recording, k: int) -> set[tuple]:
    """The state cut into what each session's check depends on: its own
    directory and its legal versions; everything else (listing, locks,
    breadcrumbs, work-in-progress directories) with all the versions."""
    groups: dict[str, list] = {}
    for d in state.dirs:
        groups.setdefault(_owner(d), []).append((d, None))
    for path, data in state.files.items():
        groups.setdefault(_owner(path), []).append((path, data))
    sigs = {sid: (allowed_versions(v, k)[0].end, len(allowed_versions(v, k))) for sid, v in rec.versions.items()}
    out = {("", _signature(rec, k))} if "" not in groups else set()
    for owner, items in groups.items():
        sub = CrashState(
            state.prefix, [p for p, d in items if d is None], {p: d for p, d in items if d is not None}
        ).key()
        out.add((owner, sub, sigs.get(owner) if owner else _signature(rec, k)))
    for sid in rec.versions:  # a session absent here is part of the picture too
        if sid not in groups:
            out.add((sid, None, sigs[sid]))
    return out


def _owner(path: str) -> str:
    parts = path.split("/")
    if parts[0] == "sessions" and len(parts) > 1 and not parts[1].startswith("."):
        return parts[1]
    return ""


def _draw(model: FsModel, rng: random.Random, want: int, where: tuple, seen_checks: set) -> list:
    """Up to ``want`` states of this prefix not checked yet, drawn uniformly.

    Generating a state costs far less than checking one: walk the prefix's
    combinations (up to a limit, then random draws) into a reservoir."""
    if want <= 0:
        return []
    sig = _signature(*where)
    fresh: set[bytes] = set()
    reservoir: list = []
    states = model.choices(exhaustive=False)
    limit = min(ENUMERATE_LIMIT, 40 * want + 40)
    for n in range(limit + 4 * want):
        state = next(states, None) if n < limit else None
        if state is None:
            if n < limit:
                break  # the whole prefix was enumerated
            state = model.sample(rng, False, mode="random")
        key = state.key()
        if key in fresh or (key, sig) in seen_checks:
            continue
        fresh.add(key)
        if len(reservoir) < want:
            reservoir.append(state)
        else:
            slot = rng.randrange(len(fresh))
            if slot < want:
                reservoir[slot] = state
    return reservoir


def _show(op: tuple) -> str:
    return repr(tuple(x if not isinstance(x, bytes) or len(x) < 60 else x[:57] + b"..." for x in op))


def _show_state(state) -> str:
    return ", ".join(f"{p}:{len(d)}" for p, d in sorted(state.files.items()))


@pytest.mark.timeout(7200 if EXHAUSTIVE else 300)
@pytest.mark.parametrize("durability", ["full", "off"])
@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_crash_states(name, durability, scratch):
    rec = record(name, durability, scratch)
    rng = random.Random(f"{SEED}-{name}-{durability}")
    counts = explore(rec, scratch, rng, budget=SAMPLED.get((name, durability), SAMPLED_DEFAULT), exhaustive=EXHAUSTIVE)
    record_figure("crash", f"{name}/{durability}", ops=len(rec.ops), **counts)
    assert counts["checks"] > len(rec.ops)


class _NoDataSync(RecordingFs):
    """A store that forgot its fdatasync: the model must catch it."""

    def fdatasync(self, fd: int, path: str = "?") -> None:
        pass


class _NoDirSync(RecordingFs):
    """A store that forgot its directory syncs."""

    def fsync_dir(self, path: str) -> None:
        pass


@pytest.mark.parametrize("fs_class,workload", [(_NoDataSync, "appends"), (_NoDirSync, "rotation")])
def test_crash_simulator_catches_a_missing_sync(fs_class, workload, scratch):
    """The family has teeth: with a sync left out, some crash state loses an
    acknowledged event and the check says so."""
    home = os.path.join(scratch, "recorded")
    os.makedirs(home)
    fs = fs_class(home)
    w = Workload(home, "full", fs)
    WORKLOADS[workload](w)
    w.close_all()
    rec = Recording(workload, "full", fs.ops, w.versions, w.chunk_size, w.blob_threshold)
    with pytest.raises(AssertionError, match=r"crash after \d+ of \d+ ops"):
        explore(rec, scratch, random.Random(SEED), budget=200, exhaustive=False)
