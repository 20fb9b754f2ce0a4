"""Coverage-guided fuzzing of recovery, the index and repair (``make fuzz``).

One process per target runs libFuzzer (atheris) for millions of cases; each
case is one damaged session, opened, read, checked and (``repair``) repaired
in a tmpfs home that is put back byte for byte before the next case. The
input is one stored file of a small base session: its first byte picks the
file, the rest is the file's new content, and libFuzzer mutates from the
real files (the seed corpus) towards new code paths. The harness knows the
files only by their paths (``Layout``) and the chunk log's line framing,
never the index's encoding.

Targets (each raises AssertionError, which libFuzzer reports as a crash,
when a property fails; any exception not an ``AgentlogError`` crashes too):

* ``scan``: a chunk replaced; repair's planning alone, no file written:
  fsck's log scan, the re-joining of split records and cutting of merged
  ones, the tombstone plan. The scan's events have increasing ids and
  frame lines that decode to them; the bad ranges lie inside the chunk and
  do not overlap; each planned line is a tombstone of a new id that sorts
  between its neighbours (or an intact batch member kept); when the damage
  is a same-length change inside one event line, that event is planned a
  tombstone (or still reads). The cheapest target: most of the cases.
* ``log``: a chunk replaced. Read-only and writer opens, the path, the
  context with blobs resolved, fsck, either work or raise a typed error;
  every event whose line ends before the first changed byte (in log order)
  reads back identical when the open works; plain fsck writes nothing.
* ``index``: the index or the HEAD file replaced. They are caches derived
  from the log, so both opens must work and see exactly the base session
  (every event, the path, HEAD), and after a writer's open fsck is clean.
* ``repair``: a chunk replaced, then ``repair``. Repair moves bytes, never
  deletes them (kept bytes, tombstones taken out, plus the quarantined
  pieces put back equal the damaged chunk); every *intact* event is still
  there, identical (intact: its line and the newline before it unchanged,
  its batch whole, and no complete record forged in the damage); every
  event is reachable from the root or named, exactly, in the report; HEAD
  stays unless its path was cut, which the report then says; when the
  damage sits inside one event line of the same length (the index still
  frames it), nothing at all is cut; fsck then finds nothing but what no
  byte is left to fix.

Run ``python -m tests.reliability.fuzzer TARGET WORKDIR [libFuzzer flags]``
(``--plain N`` runs N cases of random byte mutations without atheris, as
``make test`` does).
"""

from __future__ import annotations

import json
import os
import random
import sys
import warnings
from collections.abc import Callable
from typing import Any

from .lineforms import as_format_2

SID = "fz"
NIL = "00000000-0000-0000-0000-000000000000"
CHUNK_SIZE, BLOB_THRESHOLD = 1024, 300
TARGETS = ("scan", "log", "index", "repair")
#: instrumented for coverage: what opens, recovers, indexes and repairs a session
COVERED = (
    "agentlog._codec",
    "agentlog.backends.files.chunklog",
    "agentlog.backends.files.fsck",
    "agentlog.backends.files.index",
    "agentlog.backends.files.index_format",
    "agentlog.backends.files.index_lookup",
    "agentlog.backends.files.lines",
    "agentlog.backends.files.log_tail",
    "agentlog.backends.files.pathread",
    "agentlog.backends.files.recovery",
    "agentlog.backends.files.repair",
    "agentlog.backends.files.repair_plan",
    "agentlog.backends.files.session_base",
    "agentlog.backends.files.sidecars",
    "agentlog.backends.files.storage",
    "agentlog.backends.files.tombstone",
)


#: the scan target runs repair's planning only: coverage of that code alone
SCAN_COVERED = (
    "agentlog._codec",
    "agentlog.backends.files.chunklog",
    "agentlog.backends.files.fsck",
    "agentlog.backends.files.repair_plan",
    "agentlog.backends.files.tombstone",
)


def instrumented_modules(src: str, target: str) -> tuple[list[str], list[str]]:
    """(covered, excluded) agentlog module names, from the source tree."""
    names = []
    root = os.path.join(src, "agentlog")
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(dirpath, f), src)[:-3].replace(os.sep, ".")
                names.append(rel[: -len(".__init__")] if rel.endswith(".__init__") else rel)
    covered = [n for n in names if n in (SCAN_COVERED if target == "scan" else COVERED)]
    return covered, [n for n in names if n not in covered]


class Base:
    """The base session, its files and what they hold (from the chunk lines)."""

    def __init__(self, root: str) -> None:
        from agentlog import Store
        from agentlog._codec import decode_line
        from agentlog.backends.files.backend import FileBackend
        from agentlog.backends.files.layout import Layout

        self.home = os.path.join(root, "base")
        layout = Layout(self.home)
        if not os.path.isdir(layout.session_dir(SID)):
            store = Store(backend=FileBackend(self.home, chunk_size=CHUNK_SIZE), blob_threshold=BLOB_THRESHOLD)
            with store.create(session_id=SID, name="fuzz") as s:
                first = [s.append("message", {"content": f"hello {i} " + "ab" * 20}, "user") for i in range(3)]
                s.append_many(
                    [
                        ("message", {"content": "batch a"}, "assistant"),
                        ("tool_call", {"id": "t1", "name": "ls", "arguments": "{}"}, "assistant"),
                        ("tool_result", {"tool_call_id": "t1", "content": "ok"}, "tool"),
                    ]
                )
                s.append("tool_result", {"tool_call_id": "t2", "content": "big " + "x" * 400}, "tool")
                s.checkout(first[2].id)
                s.append("message", {"content": "branch " + "é" * 30}, "user")
                for i in range(2):
                    s.append("message", {"content": f"tail {i} " + "cd" * 40}, "assistant")
                s.append_many([("message", {"content": f"end {k}"}, "assistant") for k in range(2)])
                s.update_meta(title="fuzzed")
            _in_both_forms(store, layout)
        self.layout = layout
        self.files: dict[str, bytes] = {}
        for dirpath, _, names in os.walk(layout.session_dir(SID)):
            for name in names:
                path = os.path.join(dirpath, name)
                with open(path, "rb") as f:
                    self.files[os.path.relpath(path, self.home)] = f.read()
        self.chunks = sorted(
            rel for rel in self.files if rel.startswith(os.path.relpath(layout.chunks(SID), self.home))
        )
        self.index = os.path.relpath(layout.index(SID), self.home)
        self.head_file = os.path.relpath(layout.head(SID), self.home)
        # Every event line: id -> (chunk rel, offset, end, record, batch key)
        self.lines: dict[str, tuple[str, int, int, dict[str, Any], int]] = {}
        self.batches: dict[int, list[str]] = {}
        self.order: list[str] = []
        batch_no, head = 0, NIL
        for rel in self.chunks:
            pos = 0
            for line in _split(self.files[rel]):
                rec = decode_line(line)
                if "op" in rec:
                    head = rec["head"]
                else:
                    txn = rec.get("txn")
                    self.lines[rec["id"]] = (rel, pos, pos + len(line), rec, batch_no)
                    self.batches.setdefault(batch_no, []).append(rec["id"])
                    self.order.append(rec["id"])
                    head = rec["id"]
                    if txn is None or txn[0] == txn[1] - 1:
                        batch_no += 1
                pos += len(line)
        self.head = head
        self.parent = {i: self.lines[i][3]["parent_id"] for i in self.order}
        self.path = []
        at = head
        while at != NIL:
            self.path.append(at)
            at = self.parent[at]
        self.path.reverse()
        blobs = {}
        for rel, data in self.files.items():
            if rel.startswith(os.path.relpath(layout.blobs(SID), self.home)):
                blobs["sha256:" + os.path.basename(rel)] = json.loads(data)
        self.records = {
            i: (rec["record"] if rec.get("digest") is None else blobs[rec["digest"]], rec.get("digest"))
            for i, (_, _, _, rec, _) in self.lines.items()
        }


def _in_both_forms(store: Any, layout: Any) -> None:
    """Rewrite every other event line as a version-2 build wrote it (a null
    ``branch_from`` and ``digest`` written out, docs/format.md "Versions"),
    as a session appended to by builds of both versions holds it; then
    let a writer derive the index again. So every target meets both forms,
    and the log target's two loops (C and Python) must agree on both."""
    from agentlog._codec import decode_line, encode_line

    n = 0
    for name in sorted(os.listdir(layout.chunks(SID))):
        path = os.path.join(layout.chunks(SID), name)
        with open(path, "rb") as f:
            lines = _split(f.read())
        out = []
        for line in lines:
            rec = decode_line(line)
            if "op" not in rec:
                n += 1
                if n % 2:
                    line = encode_line(as_format_2(rec))
            out.append(line)
        with open(path, "wb") as f:
            f.write(b"".join(out))
    os.unlink(layout.index(SID))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "index rebuilt": what this asks for
        store.open(SID).close()


class Harness:
    def __init__(self, target: str, work: str) -> None:
        if target not in TARGETS:
            raise SystemExit(f"target must be one of {TARGETS}")
        from agentlog import Store
        from agentlog._codec import LineError, decode_line
        from agentlog.backends.files.backend import FileBackend
        from agentlog.errors import AgentlogError

        self.target = target
        self.base = Base(work)
        self.home = os.path.join(work, "home")
        self.sdir = os.path.join(self.home, "sessions", SID)
        self.store = Store(backend=FileBackend(self.home, chunk_size=CHUNK_SIZE), blob_threshold=BLOB_THRESHOLD)
        self.candidates = list(self.base.chunks) if target != "index" else [self.base.index, self.base.head_file]
        from agentlog._fs import OsFs
        from agentlog.backends.files import fsck, repair_plan
        from agentlog.backends.files.chunklog import ChunkLog
        from agentlog.backends.files.tombstone import index_entries_by_location

        self.fs = OsFs()
        self.fsck = fsck
        self.plan = repair_plan
        self.ChunkLog = ChunkLog
        # the base session's intact index, keyed by location (what repair reads)
        self.entries = index_entries_by_location(self.fs, os.path.join(self.base.home, self.base.index))
        self.Typed = AgentlogError
        self.LineError = LineError
        self.decode_line = decode_line
        self.outcomes: dict[str, int] = {}
        self.cases = 0
        self.stats = os.path.join(work, f"stats-{target}-{os.getpid()}.json")
        warnings.simplefilter("ignore")  # recovery warns (torn tail, index rebuilt): expected here
        self.originals = {os.path.join(self.home, rel): data for rel, data in self.base.files.items()}
        self.dirs = sorted({os.path.dirname(p) for p in self.originals} | {self.sdir})
        for d in self.dirs:
            os.makedirs(d, exist_ok=True)
        self._restore()

    # --- the tree -------------------------------------------------------------------
    def _restore(self) -> None:
        """Put the base session back: rewrite every file, remove any other."""
        for d in self.dirs:
            for name in os.listdir(d):
                path = os.path.join(d, name)
                if path not in self.originals and not os.path.isdir(path):
                    os.unlink(path)
        for path, data in self.originals.items():
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            except FileNotFoundError:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.write(fd, data)
            os.close(fd)

    def _snapshot(self) -> dict[str, tuple[int, int]]:
        out = {}
        for d in self.dirs:
            for entry in os.scandir(d):
                st = entry.stat()
                out[entry.path] = (st.st_size, st.st_mtime_ns)
        return out

    def seeds(self) -> list[bytes]:
        return [bytes([i]) + self.base.files[rel] for i, rel in enumerate(self.candidates)]

    # --- one case -------------------------------------------------------------------
    def one(self, data: bytes) -> None:
        if not data:
            return
        rel = self.candidates[data[0] % len(self.candidates)]
        content = data[1:]
        original = self.base.files[rel]
        self.cases += 1
        path = os.path.join(self.home, rel)
        if self.target != "scan":
            self._restore()
        with open(path, "wb") as f:
            f.write(content)
        try:
            outcome = getattr(self, "_" + self.target)(rel, original, content)
        finally:
            if self.target == "scan":  # it writes nothing: only this file to put back
                with open(path, "wb") as f:
                    f.write(original)
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
        if self.cases % 500 == 0:
            self.dump()

    def dump(self) -> None:
        with open(self.stats + ".tmp", "w") as f:
            json.dump({"target": self.target, "cases": self.cases, "outcomes": self.outcomes}, f)
        os.replace(self.stats + ".tmp", self.stats)

    def _same(self, s: Any, event_id: str) -> None:
        ev = s.event(event_id)
        record, digest = self.base.records[event_id]
        assert ev.digest == digest, f"{event_id}: digest changed"
        assert ev.parent_id == self.base.parent[event_id], f"{event_id}: parent changed"
        got = s.resolve(ev).record if digest else ev.record
        assert got == record, f"{event_id}: record changed"

    def _before_damage(self, rel: str, at: int) -> list[str]:
        """Events whose line ends at or before byte ``at`` of chunk ``rel``, in log order."""
        return [i for i, (r, _, end, _, _) in self.base.lines.items() if r < rel or (r == rel and end <= at)]

    # --- targets --------------------------------------------------------------------
    def _scan(self, rel: str, original: bytes, content: bytes) -> str:
        f, p = self.fsck, self.plan
        log = self.ChunkLog(
            self.fs, os.path.join(self.sdir, "chunks"), chunk_size=1 << 62, durable=False, writable=False
        )
        try:
            scan = f.scan_log(log)
            assert scan.order == sorted(set(scan.order)), "scan: event ids do not increase"
            for event_id in scan.order:
                chunk, offset, length = scan.events[event_id]["_loc"]
                rec = self.decode_line(log.read(chunk, offset, length))
                assert rec["id"] == event_id, "scan: an event's location frames another record"
            assert scan.head == NIL or scan.head in scan.events, "scan: HEAD names no event"
            bads = p.split_merged(p.merge_split(scan.bad, self.entries), self.entries, log)
            ends: dict[int, int] = {}
            for b in sorted(bads, key=lambda b: (b.chunk, b.offset)):
                assert b.length > 0 and b.offset >= ends.get(b.chunk, 0), f"scan: bad ranges overlap: {bads}"
                ends[b.chunk] = b.offset + b.length
                assert ends[b.chunk] <= os.path.getsize(log.path(b.chunk)), "scan: a bad range past the end"
            scan.bad = bads
            plan = p.plan_tombstones(self.entries, log, scan)
            starts = {(b.chunk, b.offset) for b in bads}
            stones = set()
            for at, line in plan.lines.items():
                assert at in starts, "plan: a line planned where no bad line starts"
                if line == p.KEEP:
                    continue
                rec = self.decode_line(line)
                assert rec["kind"] == "tombstone" and rec["id"] not in scan.events, "plan: a tombstone for a present id"
                assert rec["id"] not in stones, "plan: two tombstones for one id"
                stones.add(rec["id"])
            assert p.cut_before(scan, plan) <= set(scan.order)
        finally:
            log.close()
        _intact, _head, strong = self._intact(rel, original, content)
        if strong:
            lo = _first_difference(original, content)
            hit = [i for i, (r, off, end, _, _) in self.base.lines.items() if r == rel and off <= lo < end]
            assert hit and (hit[0] in stones or hit[0] in scan.events), (
                f"a same-length damage of {hit} got no tombstone"
            )
        return "planned tombstones" if stones else ("planned, none" if bads else "no damage found")

    def _log(self, rel: str, original: bytes, content: bytes) -> str:
        at = _first_difference(original, content)
        must = self._before_damage(rel, at)
        opened = []
        for readonly in (True, False):
            try:
                with self.store.open(SID, readonly=readonly) as s:
                    path = s.path()
                    if readonly:
                        s.context(resolve=True)
                    assert not path or path[-1].id == s.head, "the path does not end at HEAD"
                    for event_id in must:
                        self._same(s, event_id)
                    opened.append("ro" if readonly else "rw")
            except self.Typed:
                pass  # damage a writer's recovery may not fix: reported, typed
        self._both_loops_agree()
        before = self._snapshot()
        problems = self.store.fsck(SID)
        assert self._snapshot() == before, "plain fsck changed the store"
        if "rw" in opened and not any(p.severity == "error" for p in problems):
            return "recovered, fsck clean"
        return "opened: " + ("+".join(opened) or "refused (typed)")

    def _both_loops_agree(self) -> None:
        """The whole-path read's C loop (``agentlog._speedups``) and its
        Python reference read the damaged session alike: the same events,
        or the same typed error. Each from a fresh read-only open, so that
        what one read learns about the damage cannot steer the other."""
        from agentlog.backends.files import pathread

        loops = {
            "c": (pathread.follow, pathread.follow_block),
            "python": (pathread._follow, pathread._follow_block),
        }
        seen = {}
        try:
            for name, (follow, follow_block) in loops.items():
                pathread.follow, pathread.follow_block = follow, follow_block
                try:
                    with self.store.open(SID, readonly=True) as s:
                        seen[name] = [json.dumps(e.to_dict(), sort_keys=True) for e in s.path()]
                except self.Typed as exc:
                    seen[name] = [type(exc).__name__]
        finally:
            pathread.follow, pathread.follow_block = loops["c"]
        assert seen["c"] == seen["python"], f"the C and Python loops read the path differently: {seen}"

    def _index(self, rel: str, original: bytes, content: bytes) -> str:
        for readonly in (True, False):
            with self.store.open(SID, readonly=readonly) as s:
                assert s.head == self.base.head, f"HEAD {s.head}, the log says {self.base.head}"
                assert [e.id for e in s.path()] == self.base.path, "the path changed"
                assert sorted(e.id for e in s.entries()) == sorted(self.base.order), "the events changed"
                if readonly:  # every record, through the index the reader built
                    for event_id in self.base.order:
                        self._same(s, event_id)
        errors = [str(p) for p in self.store.fsck(SID) if p.severity == "error"]
        assert not errors, f"fsck after a writer's open: {errors}"
        return "read the log exactly"

    def _repair(self, rel: str, original: bytes, content: bytes) -> str:
        chunk_dir = os.path.join(self.sdir, "chunks")
        damaged = {}
        for name in os.listdir(chunk_dir):
            with open(os.path.join(chunk_dir, name), "rb") as f:
                damaged[name] = f.read()
        actions = self.store.repair(SID)
        stones = _check_bytes_kept(self, chunk_dir, damaged)
        intact, head_intact, strong = self._intact(rel, original, content)
        cut_named: set[str] = set()
        for a in actions:
            if "reachable from the root" in a:  # this repair's cut, and lines gone whole
                cut_named |= set(a.split(": ", 1)[1].split(", "))
        moved_head = any(a.startswith("moved HEAD to ") for a in actions)
        with self.store.open(SID) as s:
            entries = {e.id: e.parent_id for e in s.entries()}
            reachable = {NIL}
            for event_id in sorted(entries):  # ids increase along every path
                if entries[event_id] in reachable:
                    reachable.add(event_id)
            unreachable = set(entries) - reachable
            assert cut_named == unreachable, f"report names {sorted(cut_named)}, unreachable {sorted(unreachable)}"
            for event_id in intact:
                assert event_id in entries, f"intact event {event_id} lost by repair: {actions}"
                self._same(s, event_id)
            assert s.head == NIL or s.head in reachable, "HEAD is not on a whole path"
            if head_intact:
                if self.base.head in unreachable:
                    assert moved_head, "HEAD's path was cut and HEAD not moved"
                else:
                    assert s.head == self.base.head, f"HEAD moved from {self.base.head} to {s.head}: {actions}"
            if strong:
                assert not unreachable, f"a same-length damage inside one event line cut {unreachable}: {actions}"
                assert set(self.base.order) <= set(entries), f"events lost: {actions}"
        # (an append after repair: the hypothesis family checks it, at a cost this volume cannot pay)
        remaining = [
            str(p)
            for p in self.store.fsck(SID)
            if p.severity == "error"
            and "names a missing parent" not in p.message
            and " is missing (event" not in p.message
        ]
        assert not remaining, f"fsck after repair: {remaining}"
        if not actions:
            return "nothing to repair"
        if unreachable:
            return "repaired, some cut (named)"
        return "repaired with tombstones" if stones else "repaired"

    def _intact(self, rel: str, original: bytes, content: bytes) -> tuple[set[str], bool, bool]:
        """(intact events, whether the log's last line is intact, whether the
        damage is a same-length change inside one event line)."""
        start = _first_difference(original, content)
        tail = _common_suffix(original, content, start)
        lo, hi = start, len(original) - tail  # the changed range of the original
        shift = len(content) - len(original)
        # A forged record: a complete, checksum-valid line in the damage.
        # (whole lines: from the start of the first changed one to the end of the last)
        end = content.find(b"\n", max(hi + shift - 1, 0))
        region = content[max(0, content.rfind(b"\n", 0, lo) + 1) : len(content) if end < 0 else end + 1]
        forged = any(_valid(self, line) for line in _split(region))
        intact_lines = set()
        for event_id, (r, off, end, _rec, _b) in self.base.lines.items():
            if r != rel:
                if r < rel or not forged:
                    intact_lines.add(event_id)
            elif end <= lo or (not forged and (off > hi or (off == hi and shift == 0))):
                # after the damage: whole, and found where the index framed it
                intact_lines.add(event_id)
        intact = {i for i in intact_lines if all(m in intact_lines for m in self.base.batches[self.base.lines[i][4]])}
        last_rel = self.base.chunks[-1]
        last_off = self.base.files[last_rel].rstrip(b"\n").rfind(b"\n") + 1
        head_intact = self.base.head in intact and not forged and (rel != last_rel or last_off > hi)
        strong = False
        if shift == 0 and not forged:
            for _event_id, (r, off, end, _rec, _b) in self.base.lines.items():
                if r == rel and off <= lo and hi <= end - 1:  # the newline unchanged
                    strong = True
        return intact, head_intact, strong


def _split(data: bytes) -> list[bytes]:
    """Lines as the chunk log frames them: on newlines only (not on \\r)."""
    parts = data.split(b"\n")
    return [p + b"\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def _valid(h: Harness, line: bytes) -> bool:
    try:
        h.decode_line(line)
    except h.LineError:
        return False
    return True


def _first_difference(a: bytes, b: bytes) -> int:
    """Length of the common prefix (a binary search on slice comparisons: C speed)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: bytes, b: bytes, start: int) -> int:
    """Bytes at the end that are the same, not reaching back before ``start``."""
    lo, hi = 0, min(len(a), len(b)) - start
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _quarantine_parts(path: str) -> list[tuple[int, bytes]]:
    with open(path, "rb") as f:
        data = f.read()
    parts, pos = [], 0
    while pos < len(data):
        nl = data.index(b"\n", pos)
        header = json.loads(data[pos:nl])
        start = nl + 1
        parts.append((header["offset"], data[start : start + header["length"]]))
        assert data[start + header["length"] : start + header["length"] + 1] == b"\n", "quarantine framing"
        pos = start + header["length"] + 1
    return parts


def _check_bytes_kept(h: Harness, chunk_dir: str, damaged: dict[str, bytes]) -> int:
    """Kept bytes, tombstones taken out, plus the quarantined pieces put back
    at their offsets, are the damaged chunk; anything after it is a checkout
    repair appended. Returns how many tombstones repair wrote."""
    stones = 0
    for name, before in damaged.items():
        if name.endswith(".quarantine"):
            continue
        with open(os.path.join(chunk_dir, name), "rb") as f:
            lines = _split(f.read())
        qpath = os.path.join(chunk_dir, name + ".quarantine")
        moved = _quarantine_parts(qpath) if os.path.exists(qpath) else []  # the base has none
        back = written_back(lines, [piece for _, piece in moved], h.decode_line, h.LineError)
        kept_lines = [ln for ln in lines if not _tombstone(h, ln)]
        stones += len(lines) - len(kept_lines)
        kept = b"".join(ln for ln in kept_lines if ln not in back)
        rebuilt, k = bytearray(), 0
        for offset, piece in sorted(moved):
            gap = offset - len(rebuilt)
            rebuilt += kept[k : k + gap]
            k += gap
            rebuilt += piece
        rebuilt += kept[k:]
        assert bytes(rebuilt[: len(before)]) == before, f"repair lost bytes of {name}"
        for line in _split(bytes(rebuilt[len(before) :])):
            assert h.decode_line(line).get("op") == "checkout", f"repair added {line[:80]!r}"
    return stones


def written_back(
    lines: list[bytes], pieces: list[bytes], decode: Callable[[bytes], dict[str, Any]], line_error: type[Exception]
) -> set[bytes]:
    """The lines repair wrote in place of quarantined pieces as the same
    record with another batch marker (the intact members of an acknowledged
    batch cut short: docs/format.md, "Quarantine"): ``txn`` and ``crc`` aside,
    a piece's record."""

    def body(raw: bytes) -> str | None:
        try:
            rec = decode(raw)
        except line_error:
            return None
        return json.dumps({k: v for k, v in rec.items() if k not in ("txn", "crc")}, sort_keys=True)

    originals = {b for b in map(body, pieces) if b is not None}
    return {line for line in lines if line not in pieces and body(line) in originals}


def _tombstone(h: Harness, line: bytes) -> bool:
    try:
        return h.decode_line(line).get("kind") == "tombstone"
    except h.LineError:
        return False  # a damaged line repair kept is not one it wrote


def mutate(rng: random.Random, data: bytes) -> bytes:
    """A generic byte mutation (for the plain runs): flip, cut, insert, copy, zero."""
    out = bytearray(data)
    for _ in range(rng.choice((1, 1, 1, 2, 3))):
        n = len(out)
        op = rng.randrange(6)
        pos = rng.randrange(n + 1)
        if op == 0 and n:
            out[min(pos, n - 1)] ^= 1 << rng.randrange(8)
        elif op == 1:
            del out[pos : pos + rng.randrange(1, 64)]
        elif op == 2:
            out[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 16)))
        elif op == 3 and n:
            a = rng.randrange(n)
            out[pos:pos] = out[a : a + rng.randrange(1, 200)]
        elif op == 4:
            out[pos : pos + rng.randrange(1, 32)] = bytes(len(out[pos : pos + 32]))
        else:
            out[pos:pos] = rng.choice((b"\n", b'{"id":"', b"\xff", b"}", b'"', b"0"))
    return bytes(out)


def run_plain(target: str, work: str, cases: int, seed: int) -> Harness:
    """``cases`` random mutations of the seeds, without atheris."""
    h = Harness(target, work)
    rng = random.Random(seed)
    seeds = h.seeds()
    for _ in range(cases):
        s = rng.choice(seeds)
        h.one(s[:1] + mutate(rng, s[1:]))
    h.dump()
    return h


def main(argv: list[str]) -> None:
    target, work = argv[1], argv[2]
    if argv[3:4] == ["--replay"]:  # a crash libFuzzer saved: run it again, plainly
        h = Harness(target, work)
        for path in argv[4:]:
            with open(path, "rb") as f:
                h.one(f.read())
        print(json.dumps({"cases": h.cases, "outcomes": h.outcomes}))
        return
    if argv[3:4] == ["--plain"]:
        h = run_plain(target, work, int(argv[4]), int(argv[5]) if len(argv) > 5 else 0)
        print(json.dumps({"cases": h.cases, "outcomes": h.outcomes}))
        return
    import importlib.util

    import atheris

    spec = importlib.util.find_spec("agentlog")  # found, not imported: imports below are instrumented
    assert spec is not None and spec.origin is not None
    src = os.path.dirname(os.path.dirname(spec.origin))
    covered, excluded = instrumented_modules(src, target)
    with atheris.instrument_imports(include=["agentlog"], exclude=excluded):
        for name in covered:
            __import__(name)
    h = Harness(target, work)
    corpus = os.path.join(work, f"corpus-{target}")
    os.makedirs(corpus, exist_ok=True)
    for i, seed in enumerate(h.seeds()):
        with open(os.path.join(corpus, f"seed-{i}"), "wb") as f:
            f.write(seed)
    one: Callable[[bytes], None] = h.one
    atheris.Setup([argv[0], *argv[3:], corpus], one)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
