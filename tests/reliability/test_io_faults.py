"""I/O errors: the Nth file-system call of a workload fails, for every N.

Each run arms ``FaultyFs`` to fail call N with ENOSPC, EIO or EROFS, once
or persistently, or to write half a record and then fail (a short write).
The workload stops at the first error. Then (invariants 1, 6, 12):

* the caller got a typed error: a ``StorageError`` carrying the injected
  errno (``SessionPoisoned`` is one);
* once the fault clears, the next append succeeds: on the same Session
  object if the storage rolled the failure back, after closing and
  reopening if it raised ``SessionPoisoned`` (docs/durability.md);
* reopened through a healthy file system, nothing acknowledged is lost,
  the failed operation is all there or not at all, HEAD is the append
  made after the fault, fsck finds no error, and no half-written record
  is glued to the next one (fsck would see a line that fails its CRC).
"""

from __future__ import annotations

import errno as errno_mod
import random
import shutil
import tempfile
import warnings
from collections import Counter

import orjson
import pytest

from agentlog import NIL_ID, SessionPoisoned, StorageError, Store
from agentlog.errors import AgentlogError

from .conftest import EXHAUSTIVE, SEED, record_figure
from .faults import ERRNOS, FaultyFs
from .workloads import WORKLOADS, StopWorkload, Workload, snapshot

#: Runs per workload when sampling (every call N is covered by some errno
#: and mode; the rest is a seeded sample). Exhaustive runs them all.
SAMPLED_RUNS = 250


def dry_run(name: str, root: str) -> list[tuple[str, bool]]:
    home = tempfile.mkdtemp(dir=root)
    fs = FaultyFs()
    w = Workload(home, "full", fs)
    WORKLOADS[name](w)
    w.close_all()
    shutil.rmtree(home)
    return fs.calls


def plan(calls: list[tuple[str, bool]], rng: random.Random, exhaustive: bool) -> list[tuple]:
    """(n, errno name, persistent, partial) for every run to make."""
    runs = []
    for n, (op, effect) in enumerate(calls, start=1):
        for name, err in ERRNOS.items():
            if not (effect or err == errno_mod.EIO):
                continue
            for persistent in (False, True):
                runs.append((n, name, persistent, False))
        if op == "write":
            runs += [(n, "ENOSPC", False, True), (n, "ENOSPC", True, True)]
    if exhaustive:
        return runs
    # Every N at least once (rotating errno and mode), then a random sample.
    by_n: dict[int, list] = {}
    for r in runs:
        by_n.setdefault(r[0], []).append(r)
    chosen = {rng.choice(options) for options in by_n.values()}
    partial = [r for r in runs if r[3]]
    chosen.update(rng.sample(partial, min(len(partial), 12)))
    rest = [r for r in runs if r not in chosen]
    chosen.update(rng.sample(rest, max(0, min(len(rest), SAMPLED_RUNS - len(chosen)))))
    return sorted(chosen)


class FaultContractError(AssertionError):
    pass


def run_case(name: str, n: int, err_name: str, persistent: bool, partial: bool, root: str) -> str:
    err = ERRNOS[err_name]
    home = tempfile.mkdtemp(dir=root)
    fs = FaultyFs()
    fs.arm(n, err, persistent=persistent, partial=partial)
    where = (
        f"{name}: call {n} fails with {err_name}{' for good' if persistent else ''}"
        f"{' after half a write' if partial else ''}"
    )
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            w = Workload(home, "full", fs, catch=True)
            if w.store is not None:
                try:
                    WORKLOADS[name](w)
                    w.close_all()
                except StopWorkload:
                    pass
            failure = w.failure
            if failure is not None:
                where += f", in step {failure.label!r}: {failure.error!r}"
                _check_error(failure.error, err, where)
            fs.disarm()
            outcome, recovered = _recover(w, failure, where)
            _verify(w, failure, recovered, home, where)
        if not fs.fired:
            outcome = "not reached"
        return outcome
    finally:
        shutil.rmtree(home, ignore_errors=True)


def _check_error(exc: BaseException, err: int, where: str) -> None:
    if not isinstance(exc, StorageError):
        raise FaultContractError(f"{where}: expected a StorageError, got {type(exc).__name__}")
    if exc.errno != err:
        raise FaultContractError(f"{where}: the error carries errno {exc.errno}, not {err}")


def _append(session) -> object:
    return session.append("message", {"content": "after the fault"}, "user")


def _recover(w: Workload, failure, where: str) -> tuple[str, dict]:
    """The next append once the fault is gone; how it had to be made."""
    recovered: dict[str, object] = {}
    if w.store is None:
        w.store = w.new_store()
    if failure is None:
        return "absorbed", recovered
    if not failure.session_ids:  # the store itself failed to start
        with w.store.create(session_id="fresh") as s:
            recovered["fresh"] = _append(s)
        return "store reopened", recovered
    sid = failure.session_ids[0]
    live = w.sessions.get(sid)
    if live is not None and not live._closed:
        try:
            recovered[sid] = _append(live)
            return "same session", recovered
        except SessionPoisoned:
            live.close()
            w.sessions.pop(sid)
            outcome = "reopened after SessionPoisoned"
        except AgentlogError as exc:
            raise FaultContractError(
                f"{where}: the next append on the same session fails once the fault is gone: {exc!r}"
            ) from exc
    else:
        outcome = "reopened (the step had closed it)"
    if w.store.exists(sid):
        with w.store.open(sid) as s:
            recovered[sid] = _append(s)
    elif failure.label == "delete":
        return "deleted", recovered
    else:
        with w.store.create(session_id=sid) as s:
            recovered[sid] = _append(s)
        outcome = "created again"
    return outcome, recovered


#: Steps the harness knows write no event; an append or batch says what it
#: tried to write. Any other step (compaction, fork, lifecycle writes added
#: as ``w.step``) is opaque here: whether it happened whole is the crash
#: family's question, which has the snapshots before and after it.
_NO_EVENTS = {"store", "create", "open", "close", "delete", "select", "meta"}


def _verify(w: Workload, failure, recovered: dict, home: str, where: str) -> None:
    w.close_all()
    store = Store(home, "full", chunk_size=w.chunk_size, blob_threshold=w.blob_threshold)
    touched = set(failure.session_ids) if failure else set()
    for sid in sorted(set(w.versions) | set(recovered)):
        last = w.versions[sid][-1].snap if sid in w.versions else None
        ev = recovered.get(sid)
        if not store.exists(sid):
            if ev is not None or (last is not None and not (sid in touched and failure.label == "delete")):
                raise FaultContractError(f"{where}: session {sid} is gone")
            continue
        with store.open(sid, readonly=True) as ro:
            seen = snapshot(ro)
        problems = [str(p) for p in store.fsck(sid) if p.severity == "error"]
        if problems:
            raise FaultContractError(f"{where}: fsck of {sid}: {problems}")
        acked = last.entries if last is not None else frozenset()
        lost = acked - seen.entries
        if lost:
            raise FaultContractError(f"{where}: acknowledged events of {sid} lost: {sorted(lost)}")
        extra = {e for e in seen.entries if ev is None or e[0] != ev.id} - acked
        opaque = sid in touched and failure.label not in _NO_EVENTS | {"append", "batch"}
        if extra and not opaque:
            drafts = failure.drafts if sid in touched else None
            if not drafts or len(extra) != len(drafts) or failure.label not in ("append", "batch"):
                raise FaultContractError(
                    f"{where}: {sid} holds {len(extra)} events nobody was told about "
                    f"(failed step wrote {len(drafts or [])})"
                )
        if ev is not None:
            if seen.head != ev.id:
                raise FaultContractError(f"{where}: HEAD of {sid} is {seen.head}, not {ev.id}")
        elif opaque or last is None:
            if seen.head != NIL_ID and seen.head not in {e[0] for e in seen.entries}:
                raise FaultContractError(f"{where}: HEAD of {sid} names no event: {seen.head}")
        elif seen.head != last.head:
            raise FaultContractError(f"{where}: HEAD of {sid} is {seen.head}, expected {last.head}")
        if last is not None and seen.meta != last.meta and not opaque:
            changes = failure.drafts[0] if failure and failure.label == "meta" and sid in touched else None
            meta = orjson.loads(seen.meta)
            if not changes or any(meta.get(k) != v for k, v in changes.items()):
                raise FaultContractError(f"{where}: session.json of {sid} is neither old nor new")


@pytest.mark.timeout(3600 if EXHAUSTIVE else 300)
@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_io_faults(name, scratch):
    rng = random.Random(f"{SEED}-faults-{name}")
    calls = dry_run(name, scratch)
    runs = plan(calls, rng, EXHAUSTIVE)
    outcomes: Counter = Counter()
    for n, err_name, persistent, partial in runs:
        outcomes[run_case(name, n, err_name, persistent, partial, scratch)] += 1
    record_figure(
        "faults",
        name,
        calls=len(calls),
        runs=len(runs),
        **{k.replace(" ", "_"): v for k, v in sorted(outcomes.items())},
    )
    assert sum(outcomes.values()) == len(runs)
