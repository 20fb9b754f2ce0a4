"""Workloads for the crash, fault and kill families, and the contract they check.

A workload is a plain function ``def name(w: Workload) -> None`` that drives
the store through ``w``'s step methods. Each step is one operation the
store promises to make atomic (an append, a batch, a checkout, a metadata
update, a create, a delete...). ``Workload`` notes where in the file-system
operation log each step began and where it was acknowledged (returned), and
takes a ``Snapshot`` of the touched session right after it returned.

The contract after a crash (or a failed operation) is then uniform: a
session's state must equal one of the snapshots between the last
acknowledged step and the last step begun. That alone says acknowledged
events are kept, a batch is all or nothing, HEAD names a durable event and
session.json is the old or the new version, never a mix.

To add a workload (compaction, fork, lifecycle...): write a function that
uses ``w.step(label, session_ids, fn)`` for each atomic operation (or the
helpers below, which call it), and add it to ``WORKLOADS``. An operation
that is several atomic steps (say, an append then a metadata update) must
be several ``w.step`` calls: the states between them are then legal.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from agentlog import NIL_ID, Store
from agentlog.errors import AgentlogError

__all__ = ["Snapshot", "Version", "Workload", "WORKLOADS", "allowed_versions", "snapshot"]


@dataclass(frozen=True)
class Snapshot:
    """What a reader can observe of one session (None stands for 'absent')."""

    entries: frozenset  # (id, parent, kind, role, digest, branch_from)
    head: str
    meta: bytes  # canonical JSON of session.json
    path: tuple  # (id, canonical record) root to HEAD, blobs resolved

    def describe(self) -> str:
        return f"{len(self.entries)} events, head {self.head[:13]}, path {len(self.path)}"


def _canon(value: Any) -> bytes:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def snapshot(session) -> Snapshot:
    entries = frozenset((e.id, e.parent_id, e.kind, e.role, e.digest, e.branch_from) for e in session.entries())
    path = tuple((e.id, _canon(session.resolve(e).record)) for e in session.path())
    return Snapshot(entries, session.head, _canon(session.meta), path)


@dataclass
class Version:
    label: str
    start: int  # operations issued before the step began
    end: int  # operations issued when it returned
    snap: Snapshot | None


def allowed_versions(versions: list[Version], k: int) -> list[Version]:
    """Versions legal after a crash once ``k`` operations were issued."""
    acked = max(i for i, v in enumerate(versions) if v.end <= k)
    begun = max(i for i, v in enumerate(versions) if v.start < k or v.end <= k)
    return versions[acked : begun + 1]


class StopWorkload(Exception):
    """A step failed (fault injection); the workload ends there."""


@dataclass
class Failure:
    label: str
    session_ids: tuple
    error: BaseException
    drafts: list | None = None  # what a failed append tried to write


class Workload:
    """Drives a store through ``fs`` and records each step's span and result.

    ``position()`` tells how many operations ``fs`` has issued (a recording
    counts its log, a fault injector its calls)."""

    def __init__(
        self, home: str, durability: str, fs, *, chunk_size: int = 1500, blob_threshold: int = 200, catch: bool = False
    ) -> None:
        self.home = home
        self.durability = durability
        self.fs = fs
        self.chunk_size = chunk_size
        self.blob_threshold = blob_threshold
        self.catch = catch
        self.sessions: dict[str, Any] = {}
        self.versions: dict[str, list[Version]] = {}
        self.acked_events: dict[str, list] = {}
        self.failure: Failure | None = None
        self.store: Store | None = None
        try:
            self.store = self._call("store", (), None, self.new_store)
        except StopWorkload:
            pass  # the failure is in self.failure; the caller sees store is None

    def new_store(self, fs=None) -> Store:
        return Store(
            self.home, self.durability, fs=fs or self.fs, chunk_size=self.chunk_size, blob_threshold=self.blob_threshold
        )

    def position(self) -> int:
        return self.fs.position()

    # --- the step machinery -------------------------------------------------
    def _call(self, label: str, sids: tuple, drafts, fn: Callable[[], Any]) -> Any:
        try:
            return fn()
        except AgentlogError as exc:
            if not self.catch:
                raise
            self.failure = Failure(label, sids, exc, drafts)
            raise StopWorkload(label) from exc

    def step(self, label: str, sids: str | Iterable[str], fn: Callable[[], Any], *, drafts: list | None = None) -> Any:
        sids = (sids,) if isinstance(sids, str) else tuple(sids)
        for sid in sids:
            self.versions.setdefault(sid, [Version("absent", 0, 0, None)])
        start = self.position()
        result = self._call(label, sids, drafts, fn)
        end = self.position()
        for sid in sids:
            self.versions[sid].append(Version(label, start, end, self._snap(sid)))
        return result

    def _snap(self, sid: str) -> Snapshot | None:
        with self.fs.quiet():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                live = self.sessions.get(sid)
                if live is not None:
                    return snapshot(live)
                if not self.store.exists(sid):
                    return None
                with self.store.open(sid, readonly=True) as s:
                    return snapshot(s)

    # --- steps ----------------------------------------------------------------
    def create(self, sid: str, **meta: Any):
        s = self.step("create", sid, lambda: self.store.create(session_id=sid, **meta))
        self.sessions[sid] = s
        return s

    def open(self, sid: str):
        s = self.step("open", sid, lambda: self.store.open(sid))
        self.sessions[sid] = s
        return s

    def close(self, sid: str) -> None:
        s = self.sessions.pop(sid)
        self.step("close", sid, s.close)

    def append(self, sid: str, kind: str = "message", record: Any = None, role: str | None = "user"):
        s = self.sessions[sid]
        ev = self.step("append", sid, lambda: s.append(kind, record, role), drafts=[(kind, record, role)])
        self.acked_events.setdefault(sid, []).append(ev)
        return ev

    def append_many(self, sid: str, items: list[tuple]):
        s = self.sessions[sid]
        evs = self.step("batch", sid, lambda: s.append_many(items), drafts=list(items))
        self.acked_events.setdefault(sid, []).extend(evs)
        return evs

    def checkout(self, sid: str, target: str) -> None:
        s = self.sessions[sid]
        self.step("checkout", sid, lambda: s.checkout(target))

    def select(self, sid: str, target: str | None) -> None:
        s = self.sessions[sid]
        self._call("select", (sid,), None, lambda: s.select(target))  # reads only: not a step

    def update_meta(self, sid: str, **changes: Any) -> None:
        s = self.sessions[sid]
        self.step("meta", sid, lambda: s.update_meta(**changes), drafts=[changes])

    def delete(self, sid: str) -> None:
        if sid in self.sessions:
            self.close(sid)
        self.step("delete", sid, lambda: self.store.delete(sid))

    def close_all(self) -> None:
        for sid in list(self.sessions):
            self.close(sid)


# --- payload helpers -----------------------------------------------------------


def text(n: int, tag: str = "") -> dict:
    return {"content": (tag + " " + "lorem ipsum " * (n // 12 + 1))[:n]}


def big(n: int, tag: str) -> dict:
    return {"content": tag + "x" * n}


# --- the store workloads ----------------------------------------------------------


def appends(w: Workload) -> None:
    """Single appends, a batch, a metadata update: the common path."""
    w.create("s1", name="appends")
    for i in range(5):
        w.append("s1", record=text(40, f"a{i}"), role="user" if i % 2 == 0 else "assistant")
    w.append_many(
        "s1",
        [
            ("message", text(30, "b0"), "assistant"),
            ("tool_call", {"id": "c1", "name": "ls", "arguments": "{}"}, "assistant"),
            ("tool_result", {"tool_call_id": "c1", "content": "ok"}, "tool"),
        ],
    )
    w.update_meta("s1", title="first title")
    w.append("s1", record=text(20, "after meta"))
    w.close("s1")


def blobs(w: Workload) -> None:
    """Payloads over the blob threshold: blob written, synced, then the event."""
    w.create("s1")
    w.append("s1", record=text(20, "small"))
    w.append("s1", "tool_result", big(400, "blob-one"), "tool")
    w.append("s1", "tool_result", big(400, "blob-one"), "tool")  # same payload: deduplicated
    w.append_many(
        "s1",
        [
            ("tool_call", {"id": "c2", "name": "cat", "arguments": "{}"}, "assistant"),
            ("tool_result", big(600, "blob-two"), "tool"),
            ("tool_result", big(300, "blob-three"), "tool"),
        ],
    )
    w.append("s1", record=text(20, "tail"))
    w.close("s1")


def rotation(w: Workload) -> None:
    """Enough bytes to start new chunks, a batch that forces a rotation."""
    w.create("s1")
    for i in range(8):
        w.append("s1", record=text(260, f"r{i}"))
    w.append_many("s1", [("message", text(300, "rb0"), "assistant"), ("message", text(300, "rb1"), "assistant")])
    w.append("s1", record=text(100, "last"))
    w.close("s1")


def checkout(w: Workload) -> None:
    """HEAD moves: checkout back, branch by select + append, checkout the root."""
    w.create("s1")
    evs = [w.append("s1", record=text(30, f"c{i}")) for i in range(4)]
    w.checkout("s1", evs[1].id)
    w.append("s1", record=text(30, "branch"))
    w.select("s1", evs[2].id)
    w.append("s1", record=text(30, "second branch"))
    w.checkout("s1", NIL_ID)
    w.append("s1", record=text(30, "new root"))
    w.checkout("s1", evs[3].id)
    w.close("s1")


def sessions(w: Workload) -> None:
    """Create, reopen, metadata updates and delete across two sessions."""
    w.create("s1", name="one")
    w.append("s1", record=text(30, "one"))
    w.create("s2", name="two")
    w.append("s2", record=text(30, "two"))
    w.close("s1")
    w.update_meta("s2", title="renamed")
    w.delete("s2")
    w.open("s1")
    w.append("s1", record=text(30, "one again"))
    w.close("s1")
    w.create("s2", name="two reborn")
    w.close("s2")


def compaction(w: Workload) -> None:
    """Compaction and a branch summary: new events only, nothing rewritten."""
    w.create("s1")
    evs = [w.append("s1", record=text(60, f"k{i}"), role="user" if i % 2 == 0 else "assistant") for i in range(6)]
    s = w.sessions["s1"]
    w.step("compact", "s1", lambda: s.compact(keep_tokens=40))
    w.select("s1", evs[1].id)
    w.step("branch_summary", "s1", lambda: s.summarize_branch())
    w.append("s1", record=text(30, "after the branch"))
    w.close("s1")


def fork(w: Workload) -> None:
    """A fork: a new session holding a path, its blobs hard-linked."""
    w.create("s1")
    w.append("s1", record=text(30, "f0"))
    w.append("s1", "tool_result", big(400, "fork-blob"), "tool")
    w.append("s1", record=text(30, "f2"))
    s = w.sessions["s1"]
    w.sessions["s2"] = w.step("fork", ("s1", "s2"), lambda: s.fork(session_id="s2"))
    w.append("s2", record=text(30, "in the fork"))
    w.close_all()


def lifecycle(w: Workload) -> None:
    """The lifecycle writes: breadcrumb, draft, summary, archive, --continue."""
    project = os.path.join(w.home, "project")
    w.create("s1", working_dir=project)
    w.append("s1", record=text(30, "l0"))
    s = w.sessions["s1"]
    w.step("draft", "s1", lambda: s.set_draft("unsent words"))
    w.step("summary", "s1", lambda: s.set_summary(goal="fix it", completed=["read"], remaining=["test"]))
    w.update_meta("s1", archived=True)
    w.step("draft cleared", "s1", lambda: s.set_draft(None))
    w.update_meta("s1", archived=False)  # --continue skips archived sessions, as ls hides them
    w.close("s1")
    w.step("continue", "s1", lambda: w.store.continue_session(project).close())


WORKLOADS: dict[str, Callable[[Workload], None]] = {
    "appends": appends,
    "blobs": blobs,
    "rotation": rotation,
    "checkout": checkout,
    "sessions": sessions,
    "compaction": compaction,
    "fork": fork,
    "lifecycle": lifecycle,
}


# --- the contract after a crash ---------------------------------------------------


class Violation(AssertionError):
    """The store broke its contract in this state."""


def _explain(sid: str, seen: Snapshot | None, allowed: list[Version]) -> str:
    lines = [f"session {sid}: state matches none of the legal versions"]
    lines.append(f"  seen: {seen.describe() if seen else 'absent'}")
    for v in allowed:
        lines.append(f"  legal after {v.label}@{v.start}-{v.end}: {v.snap.describe() if v.snap else 'absent'}")
    acked = allowed[0].snap
    if acked is not None and seen is not None:
        lost = acked.entries - seen.entries
        if lost:
            lines.append(f"  acknowledged events lost: {sorted(e[0] for e in lost)}")
        if acked.meta != seen.meta and all(v.snap is None or v.snap.meta != seen.meta for v in allowed):
            lines.append(f"  session.json: {seen.meta[:200]!r}")
    return "\n".join(lines)


def check_recovered(
    home: str, versions: dict[str, list[Version]], k: int, *, durability: str, chunk_size: int, blob_threshold: int
) -> int:
    """Check the crash state in ``home`` against the versions legal after
    ``k`` operations; return how many sessions were checked.

    For every session: it is listed, a reader sees one legal version, plain
    fsck finds no error, a writer's recovery sees the same version, the next
    append works and is durable, and fsck afterwards finds nothing at all.
    A session absent (legally) can be created again."""
    store = Store(home, durability, chunk_size=chunk_size, blob_threshold=blob_threshold)
    rows, broken = store.scan()
    if broken:
        raise Violation(f"sessions that cannot be listed: {broken}")
    present = set(store.backend.session_ids())
    checked = 0
    for sid in sorted(set(versions) | present):
        if sid not in versions:
            raise Violation(f"a session nobody created: {sid}")
        allowed = allowed_versions(versions[sid], k)
        snaps = [v.snap for v in allowed]
        checked += 1
        if sid not in present:
            if None not in snaps:
                raise Violation(_explain(sid, None, allowed))
            # A crashed create or delete must not block creating it again.
            with store.create(session_id=sid) as s:
                ev = s.append("message", {"content": "recreated"}, "user")
            _check_after_append(store, sid, ev)
            continue
        with store.open(sid, readonly=True) as ro:
            seen = snapshot(ro)
        if seen not in snaps:
            raise Violation(_explain(sid, seen, allowed))
        errors = [str(p) for p in store.fsck(sid) if p.severity == "error"]
        if errors:
            raise Violation(f"session {sid}: plain fsck finds errors: {errors}")
        with store.open(sid) as s:
            entries = frozenset((e.id, e.parent_id, e.kind, e.role, e.digest, e.branch_from) for e in s.entries())
            if (entries, s.head) != (seen.entries, seen.head):
                raise Violation(
                    f"session {sid}: the writer recovered {len(entries)} events, "
                    f"head {s.head}; a reader saw {seen.describe()}"
                )
            ev = s.append("message", {"content": "after the crash"}, "user")
        _check_after_append(store, sid, ev)
    return checked


def _check_after_append(store: Store, sid: str, ev) -> None:
    with store.open(sid, readonly=True) as ro:
        if ro.head != ev.id:
            raise Violation(f"session {sid}: HEAD is {ro.head}, not the append {ev.id}")
        if ro.event(ev.id).record != ev.record:
            raise Violation(f"session {sid}: the append after the crash reads back differently")
    # Left alone on purpose: a crashed blob write's temporary file (never
    # named by an event; open does not list the blob directory, repair
    # removes it). Everything else recovery must have settled.
    problems = [
        str(p) for p in store.fsck(sid) if not (p.severity == "warning" and "leftover temporary blob" in p.message)
    ]
    if problems:
        raise Violation(f"session {sid}: fsck after recovery and an append: {problems}")


def repair_all(home: str, *, durability: str, chunk_size: int, blob_threshold: int) -> list[str]:
    """After damage the contract does not cover (``off`` across a power loss):
    explicit repair must make every session writable again, and lose no
    intact event (check_repair)."""
    store = Store(home, durability, chunk_size=chunk_size, blob_threshold=blob_threshold)
    actions = []
    for sid in sorted(store.backend.session_ids()):
        actions += check_repair(store, sid)
        with store.open(sid) as s:
            ev = s.append("message", {"content": "after repair"}, "user")
        with store.open(sid, readonly=True) as ro:
            if ro.head != ev.id:
                raise Violation(f"session {sid}: after repair HEAD is {ro.head}, not {ev.id}")
    return actions


def intact_events(store: Store, sid: str) -> set[str]:
    """Ids of the event records whose line is whole and checksum-valid in the
    chunk files, and whose batch (if any) is whole: what repair must keep."""
    from agentlog._codec import LineError, decode_line

    chunks = os.path.join(store.backend.home, "sessions", sid, "chunks")  # type: ignore[attr-defined]
    if not os.path.isdir(chunks):
        return set()
    out: set[str] = set()
    batch: list[dict[str, Any] | None] = []
    for name in sorted(n for n in os.listdir(chunks) if n.endswith(".jsonl")):
        with open(os.path.join(chunks, name), "rb") as f:
            lines = f.read().split(b"\n")[:-1]  # past the last newline: torn
        for line in lines:
            try:
                rec: dict[str, Any] | None = decode_line(line)
            except LineError:
                rec = None
            txn = rec.get("txn") if rec is not None else None
            if txn is None:
                if batch:  # a batch cut short
                    batch = []
                if rec is not None and "op" not in rec:
                    out.add(rec["id"])
                continue
            if txn[0] != len(batch):
                batch = []
                if txn[0]:
                    continue  # a member whose batch did not start here
            batch.append(rec)
            if len(batch) == txn[1]:
                out.update(r["id"] for r in batch if r is not None and "op" not in r)
                batch = []
    return out


def check_repair(store: Store, sid: str, seen: Snapshot | None = None) -> list[str]:
    """Repair ``sid`` and check that it lost no intact event: each is still
    there, every event reaches the root or is named, exactly, as cut in the
    report, HEAD is on a whole path; with ``seen`` (what a reader saw before,
    on a state the contract covers) repair changes no event and no HEAD."""
    intact = intact_events(store, sid)
    actions = store.repair(sid)
    named: set[str] = set()
    for a in actions:
        if "reachable from the root" in a:
            named |= set(a.split(": ", 1)[1].split(", "))
    with store.open(sid, readonly=True) as ro:
        parents = {e.id: e.parent_id for e in ro.entries()}
        reachable = {NIL_ID}
        for event_id in sorted(parents):  # ids increase along every path
            if parents[event_id] in reachable:
                reachable.add(event_id)
        lost = intact - set(parents)
        if lost:
            raise Violation(f"session {sid}: repair lost intact events {sorted(lost)}: {actions}")
        if named != set(parents) - reachable:
            raise Violation(f"session {sid}: report names {sorted(named)}, cut {sorted(set(parents) - reachable)}")
        if ro.head not in reachable:
            raise Violation(f"session {sid}: after repair HEAD {ro.head} is not on a whole path")
        if seen is not None and (snapshot(ro).entries, ro.head) != (seen.entries, seen.head):
            raise Violation(f"session {sid}: repair of a legal crash state changed it: {actions}")
    return actions
