"""Fuzzing stored bytes: chunk lines, index lines, session.json, HEAD, blobs.

Mutations: bit flips, truncations, duplicated ranges and lines, swapped
lines, huge lengths and numbers, invalid UTF-8, and checksum-valid rewrites
of single fields (the damage a CRC cannot see). For every damaged store:

* opening (read-only and for writing), reading the path and the context,
  listing, fsck and repair either succeed or raise a documented
  ``AgentlogError``; never another exception, never a hang (a per-case
  timer);
* plain fsck changes nothing (the tree hashes the same before and after);
* **events before the damage are never lost.** The damage point is the
  first changed byte. In log order (chunk number, then byte offset) every
  event whose line ends at or before it is *before the damage*; when the
  damaged file is not a chunk (index, HEAD, session.json, a blob) every
  event is. Each such event must be returned intact (same record, its blob
  resolved unless that blob is the damaged file) by
  ``Store.open(sid, readonly=True).event(id)``, or, if opening or reading
  raises a typed error, by the same call after ``Store.repair(sid)``.
  Repair quarantines a batch whole when a member is damaged (invariant 6),
  so after repair the guarantee is for every event whose *batch* ends
  before the damage; after a repair it must hold whether or not the
  read-only reads had succeeded;
* repair moves bytes, never deletes them: for each chunk, the bytes it
  quarantined and the bytes it kept, put back at their offsets, are the
  damaged chunk exactly; afterwards the session opens for writing, the
  next append works, and fsck finds no error.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import tempfile
import warnings

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlog import NIL_ID, Store
from agentlog._codec import LineError, decode_line, encode_line
from agentlog._fs import OsFs
from agentlog.backends.files.index import ENTRY_SIZE, HEADER_SIZE, pack_slot, read_intact_entries, unpack_slot
from agentlog.errors import AgentlogError

from .conftest import EXHAUSTIVE, SEED, record_figure
from .fuzzer import written_back as fuzz_written_back

SID = "fz"
OPTIONS = dict(chunk_size=2048, blob_threshold=300)
CASE_SECONDS = 20
EXAMPLES = 6000 if EXHAUSTIVE else 400

_counts: dict[str, int] = {}


class CaseTimeout(BaseException):
    """A case ran past CASE_SECONDS: a hang."""


def _alarm(signum, frame):
    raise CaseTimeout(f"a fuzz case ran longer than {CASE_SECONDS}s")


# --- the base session --------------------------------------------------------------


def _build(home: str) -> None:
    store = Store(home, **OPTIONS)
    with store.create(session_id=SID, name="fuzz") as s:
        first = [s.append("message", {"content": f"hello {i} " + "ab" * 30}, "user") for i in range(5)]
        s.append_many(
            [
                ("message", {"content": "batch a"}, "assistant"),
                ("tool_call", {"id": "t1", "name": "ls", "arguments": "{}"}, "assistant"),
                ("tool_result", {"tool_call_id": "t1", "content": "ok"}, "tool"),
            ]
        )
        s.append("tool_result", {"tool_call_id": "t2", "content": "big " + "x" * 900}, "tool")
        s.checkout(first[2].id)
        s.append("message", {"content": "branch " + "é" * 40}, "user")
        s.append("tool_result", {"tool_call_id": "t3", "content": "big2 " + "y" * 700}, "tool")
        for i in range(6):
            s.append("message", {"content": f"tail {i} " + "cd" * 60}, "assistant")
        s.update_meta(title="fuzzed")


def _tree(home: str) -> dict[str, bytes]:
    files = {}
    for dirpath, _, names in os.walk(home):
        for name in names:
            path = os.path.join(dirpath, name)
            files[os.path.relpath(path, home)] = open(path, "rb").read()
    return files


def _write_tree(files: dict[str, bytes], home: str) -> None:
    for rel, data in files.items():
        path = os.path.join(home, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)


def _digest_tree(home: str) -> str:
    h = hashlib.sha256()
    for dirpath, dirnames, names in sorted(os.walk(home)):
        dirnames.sort()
        h.update(dirpath.encode())
        for name in sorted(names):
            h.update(name.encode() + b"\0" + open(os.path.join(dirpath, name), "rb").read())
    return h.hexdigest()


class Base:
    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="agentlog-fuzz-base-")
        _build(self.dir)
        self.files = _tree(self.dir)
        sdir = f"sessions/{SID}/"
        self.index = read_intact_entries(OsFs(), os.path.join(self.dir, sdir, "index.bin"))
        store = Store(self.dir, **OPTIONS)
        self.records = {}
        with store.open(SID, readonly=True) as s:
            for e in self.index:
                ev = s.event(e.id)
                self.records[e.id] = (s.resolve(ev).record, ev.digest)
        self.targets = sorted(rel for rel in self.files if rel.startswith(sdir) and not rel.startswith("locks"))
        # Where each event's batch ends (a single event is its own batch).
        self.batch_end: dict[str, tuple[int, int]] = {}
        members: list[str] = []
        for e in self.index:
            chunk = self.files[f"{sdir}chunks/{e.chunk:06d}.jsonl"]
            txn = decode_line(chunk[e.offset : e.offset + e.length]).get("txn")
            members.append(e.id)
            if txn is None or txn[0] == txn[1] - 1:
                for m in members:
                    self.batch_end[m] = (e.chunk, e.offset + e.length)
                members = []

    def before(self, rel: str, offset: int, *, whole_batches: bool = False) -> list[str]:
        """Events whose line (or whole batch) ends at or before byte ``offset``
        of ``rel`` in log order; every event when ``rel`` is not a chunk."""
        if "/chunks/" not in rel:
            return [e.id for e in self.index]
        chunk = int(os.path.basename(rel).split(".")[0])
        out = []
        for e in self.index:
            end = self.batch_end[e.id] if whole_batches else (e.chunk, e.offset + e.length)
            if end[0] < chunk or (end[0] == chunk and end[1] <= offset):
                out.append(e.id)
        return out


@pytest.fixture(scope="module")
def base():
    b = Base()
    yield b
    shutil.rmtree(b.dir, ignore_errors=True)


# --- mutations ---------------------------------------------------------------------


def _lines(data: bytes) -> list[bytes]:
    return data.splitlines(keepends=True)


HOSTILE_VALUES = [
    None,
    -1,
    2**63,
    10**30,
    1.5,
    "",
    "x" * 5000,
    [],
    {},
    "../../../etc/passwd",
    "00000000-0000-0000-0000-000000000000",
    "ffffffff-ffff-ffff-ffff-ffffffffffff",
    "sha256:" + "0" * 64,
    "sha256:../x",
    [0, 1],
    [5, 2],
    [0, 10**12],
    "\u0000",
]


@st.composite
def mutation(draw, data: bytes, rel: str):
    """(mutated bytes, kind) for one file's bytes."""
    n = len(data)
    kinds = ["bitflip", "truncate", "duplicate", "invalid_utf8", "huge_line", "zeros"]
    lines = _lines(data)
    if len(lines) >= 2:
        kinds += ["swap_lines", "duplicate_line"]
    index = rel.endswith("index.bin")
    if index and len(data) >= HEADER_SIZE + ENTRY_SIZE:
        kinds += ["slot_rewrite", "slot_rewrite", "huge_length"]
    elif lines and "/chunks/" in rel:
        kinds += ["field_rewrite", "field_rewrite", "huge_length"]
    kind = draw(st.sampled_from(kinds))
    if n == 0 and kind not in ("huge_line", "invalid_utf8"):
        kind = "huge_line"
    pos = draw(st.integers(0, max(n - 1, 0)))
    if kind == "bitflip":
        bit = draw(st.integers(0, 7))
        out = bytearray(data)
        out[pos] ^= 1 << bit
        return bytes(out), kind
    if kind == "truncate":
        return data[:pos], kind
    if kind == "zeros":
        end = draw(st.integers(pos + 1, n))
        return data[:pos] + bytes(end - pos) + data[end:], kind
    if kind == "duplicate":
        end = draw(st.integers(pos, min(n, pos + 600)))
        at = draw(st.integers(0, n))
        return data[:at] + data[pos:end] + data[at:], kind
    if kind == "invalid_utf8":
        junk = draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x80\x80\x80"]))
        end = min(n, pos + draw(st.integers(0, 4)))
        return data[:pos] + junk + data[end:], kind
    if kind == "huge_line":
        size = draw(st.sampled_from([70_000, 1 << 20, 3 << 20]))
        newline = draw(st.booleans())
        at = draw(st.sampled_from([0, pos, n]))
        return data[:at] + b"{" + b"9" * size + (b"\n" if newline else b"") + data[at:], kind
    if index and kind in ("slot_rewrite", "huge_length"):
        return _slot_rewrite(draw, data, kind), kind
    i = draw(st.integers(0, len(lines) - 1))
    if kind == "swap_lines":
        j = draw(st.integers(0, len(lines) - 1))
        lines[i], lines[j] = lines[j], lines[i]
        return b"".join(lines), kind
    if kind == "duplicate_line":
        at = draw(st.integers(0, len(lines)))
        lines.insert(at, lines[i])
        return b"".join(lines), kind
    # Checksum-valid damage: decode a line, change one field, encode it again.
    try:
        obj = decode_line(lines[i])
    except ValueError:
        return data[:pos], "truncate"
    key = draw(st.sampled_from(sorted(obj) + ["txn", "op", "head"]))
    obj[key] = draw(st.sampled_from(HOSTILE_VALUES))
    try:
        line = encode_line(obj)
    except (ValueError, TypeError):
        return data[:pos], "truncate"
    lines[i] = line
    return b"".join(lines), kind


#: Raw fields of an index slot (index.unpack_slot) and hostile values for each.
_SLOT_VALUES = {
    1: [bytes(16), b"\xff" * 16],  # parent
    2: [0, -1, 2**62],  # timestamp ns
    3: [0, 2**40, 2**63],  # offset
    4: [0, 1, 2**31, 2**32 - 1],  # length
    5: [1, 7, 2**32 - 1],  # chunk
    6: [0, 1, 126, 200, 255],  # kind code
    7: [0, 1, 126, 200, 255],  # role code
    8: [0, 1, 2, 3, 255],  # flags
}


def _slot_rewrite(draw, data: bytes, kind: str) -> bytes:
    """Checksum-valid damage to the binary index: one field of one slot."""
    i = draw(st.integers(0, (len(data) - HEADER_SIZE) // ENTRY_SIZE - 1))
    at = HEADER_SIZE + i * ENTRY_SIZE
    fields = unpack_slot(data[at : at + ENTRY_SIZE])
    if fields is None:
        return data[:at]
    field = draw(st.sampled_from([3, 4, 5] if kind == "huge_length" else sorted(_SLOT_VALUES)))
    changed = list(fields)
    changed[field] = draw(st.sampled_from(_SLOT_VALUES[field]))
    return data[:at] + pack_slot(tuple(changed)) + data[at + ENTRY_SIZE :]


# --- the check ---------------------------------------------------------------------


def _same(base: Base, s, event_id: str, damaged_blob: str | None) -> None:
    ev = s.event(event_id)
    record, digest = base.records[event_id]
    assert ev.digest == digest, f"{event_id}: digest changed"
    if digest is None:
        assert ev.record == record, f"{event_id}: record changed"
    elif damaged_blob is None or not digest.endswith(damaged_blob):
        assert s.resolve(ev).record == record, f"{event_id}: blob changed"


def _quarantine_parts(path: str) -> list[tuple[int, bytes]]:
    data = open(path, "rb").read()
    parts, pos = [], 0
    while pos < len(data):
        nl = data.index(b"\n", pos)
        header = orjson.loads(data[pos:nl])
        start = nl + 1
        parts.append((header["offset"], data[start : start + header["length"]]))
        assert data[start + header["length"] : start + header["length"] + 1] == b"\n"
        pos = start + header["length"] + 1
    return parts


def exercise(base: Base, home: str, rel: str, damage_at: int) -> str:
    """Everything a user can do to the damaged session; returns an outcome label.
    Repair writes a tombstone in place of each damaged event record it can
    identify (backends/files/tombstone.py)."""
    damaged_blob = os.path.basename(rel) if "/blobs/" in rel else None
    must_read = base.before(rel, damage_at)
    # Repair quarantines a batch whole when one member is damaged (invariant
    # 6), so after repair the guarantee holds at batch granularity.
    must_survive_repair = base.before(rel, damage_at, whole_batches=True)
    store = Store(home, **OPTIONS)
    store.scan()
    store.list()
    read_ok = False
    try:
        with store.open(SID, readonly=True) as s:
            s.path()
            s.context()
            for event_id in must_read:
                _same(base, s, event_id, damaged_blob)
            read_ok = True
    except AgentlogError:
        pass
    before = _digest_tree(home)
    problems = store.fsck(SID)
    assert _digest_tree(home) == before, "plain fsck changed the store"
    errors = [p for p in problems if p.severity == "error"]
    try:
        with store.open(SID) as s:
            s.path()
            s.context()
    except AgentlogError:
        pass
    if read_ok and not errors:
        return "read intact, fsck clean"
    # Repair: quarantine, rebuild; the prefix must come back whole.
    chunk_dir = os.path.join(home, "sessions", SID, "chunks")
    damaged = {n: open(os.path.join(chunk_dir, n), "rb").read() for n in os.listdir(chunk_dir) if n.endswith(".jsonl")}
    old_quarantine = {
        n: len(_quarantine_parts(os.path.join(chunk_dir, n)))
        for n in os.listdir(chunk_dir)
        if n.endswith(".quarantine")
    }
    actions = store.repair(SID)
    stones = 0
    for name, original in damaged.items():
        kept = open(os.path.join(chunk_dir, name), "rb").read()
        # what repair wrote in place of quarantined records
        lines = [line + b"\n" for line in kept.split(b"\n")[:-1]] + (
            [kept.rsplit(b"\n", 1)[-1]] if not kept.endswith(b"\n") and kept else []
        )
        qpath = os.path.join(chunk_dir, name + ".quarantine")
        moved = _quarantine_parts(qpath)[old_quarantine.get(name + ".quarantine", 0) :] if os.path.exists(qpath) else []
        # What repair wrote in place of quarantined pieces: tombstones, and
        # the intact members of an acknowledged batch cut short, written
        # back with their marker renumbered (their bytes as they were are
        # among the pieces: docs/format.md, "Quarantine").
        written_back = fuzz_written_back(lines, [piece for _, piece in moved], decode_line, LineError)
        kept = b"".join(line for line in lines if not _is_tombstone(line) and line not in written_back)
        stones += sum(_is_tombstone(line) for line in lines)
        # Put each quarantined piece back at its offset, kept bytes between.
        rebuilt, k = bytearray(), 0
        for offset, chunk in sorted(moved):
            gap = offset - len(rebuilt)
            rebuilt += kept[k : k + gap]
            k += gap
            rebuilt += chunk
        rebuilt += kept[k:]
        assert bytes(rebuilt[: len(original)]) == original, f"repair lost bytes of {name}"
        for line in bytes(rebuilt[len(original) :]).splitlines(keepends=True):
            # All repair may add is a checkout keeping HEAD on a whole path.
            assert decode_line(line).get("op") == "checkout", f"repair added {line[:80]!r}"
    named: set[str] = set()
    for a in actions:
        if "reachable from the root" in a:
            named |= set(a.split(": ", 1)[1].split(", "))
    with store.open(SID, readonly=True) as s:
        for event_id in must_survive_repair:
            _same(base, s, event_id, damaged_blob)
        # Every event reaches the root, or the report names it, exactly.
        parents = {e.id: e.parent_id for e in s.entries()}
        reachable = {NIL_ID}
        for event_id in sorted(parents):
            if parents[event_id] in reachable:
                reachable.add(event_id)
        assert named == set(parents) - reachable, f"report names {named}, cut {set(parents) - reachable}"
        assert s.head in reachable, "HEAD is not on a whole path after repair"
    with store.open(SID) as s:
        try:
            ev = s.append("message", {"content": "after repair"}, "user")
            assert s.head == ev.id
        except AgentlogError:
            # Only refusal allowed: damage made the newest id the largest
            # UUID, and ids must increase (invariant 11).
            if not any(e.id == "ffffffff-ffff-ffff-ffff-ffffffffffff" for e in s.entries()):
                raise
    # What repair cannot undo, because no byte of it is left to move: a
    # parent the damage cut away outright, a blob that is not there. fsck
    # keeps saying so. Anything else must be gone.
    remaining = [
        str(p)
        for p in store.fsck(SID)
        if p.severity == "error" and "names a missing parent" not in p.message and " is missing (event" not in p.message
    ]
    if damaged_blob is None:
        assert not remaining, f"fsck after repair: {remaining}"
    if stones:
        return "repaired with tombstones"
    return "repaired" if read_ok or errors else "opened after repair"


def _is_tombstone(line: bytes) -> bool:
    try:
        return decode_line(line).get("kind") == "tombstone"
    except LineError:
        return False  # a damaged line repair kept is not one it wrote


def _run(base: Base, rel: str, data: bytes, root: str) -> str:
    home = tempfile.mkdtemp(dir=root)
    try:
        _write_tree(base.files, home)
        path = os.path.join(home, rel)
        original = base.files[rel]
        with open(path, "wb") as f:
            f.write(data)
        damage_at = next(
            (i for i, (a, b) in enumerate(zip(original, data, strict=False)) if a != b), min(len(original), len(data))
        )
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, CASE_SECONDS)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return exercise(base, home, rel, damage_at)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
    finally:
        shutil.rmtree(home, ignore_errors=True)


FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    derandomize=not EXHAUSTIVE,
    print_blob=True,
    suppress_health_check=list(HealthCheck),
)


@pytest.mark.timeout(1800 if EXHAUSTIVE else 300)
def test_fuzz_stored_bytes(base, scratch):
    outcomes: dict[str, int] = {}

    @FUZZ_SETTINGS
    @given(st.data())
    def case(data):
        rel = data.draw(st.sampled_from(base.targets), label="file")
        mutated, kind = data.draw(mutation(base.files[rel], rel), label="mutation")
        if mutated == base.files[rel]:
            return
        outcome = _run(base, rel, mutated, scratch)
        key = f"{kind}:{outcome}"
        outcomes[key] = outcomes.get(key, 0) + 1

    case()
    total = sum(outcomes.values())
    by_outcome: dict[str, int] = {}
    for key, n in outcomes.items():
        out = key.split(":", 1)[1].replace(" ", "_").replace(",", "")
        by_outcome[out] = by_outcome.get(out, 0) + n
    record_figure("fuzz", "stored bytes (hypothesis)", cases=total, **by_outcome)
    assert total > EXAMPLES // 2


# --- repair, case by case ------------------------------------------------------------


def _damaged_copy(base: Base, root: str, rel: str, data: bytes) -> str:
    home = tempfile.mkdtemp(dir=root)
    _write_tree(base.files, home)
    with open(os.path.join(home, rel), "wb") as f:
        f.write(data)
    return home


def _reassemble(chunk_path: str, without_tombstones: bool = False) -> bytes:
    """The chunk as it was before repair: kept bytes (tombstones taken out)
    with the quarantined pieces put back."""
    kept = open(chunk_path, "rb").read()
    if without_tombstones:
        kept = b"".join(line + b"\n" for line in kept.split(b"\n")[:-1] if not _is_tombstone(line + b"\n"))
    qpath = chunk_path + ".quarantine"
    rebuilt, k = bytearray(), 0
    for offset, piece in sorted(_quarantine_parts(qpath) if os.path.exists(qpath) else []):
        gap = offset - len(rebuilt)
        rebuilt += kept[k : k + gap]
        k += gap
        rebuilt += piece
    return bytes(rebuilt + kept[k:])


def _last_chunk(base: Base) -> str:
    return max(rel for rel in base.targets if "/chunks/" in rel)


def test_repair_moves_a_damaged_record_to_quarantine_and_says_why(base, scratch):
    """A flipped byte in a record: the record goes to quarantine (its bytes
    kept, the header says where from and why), a tombstone with its id and
    parent takes its place, every other event and HEAD stay."""
    rel = f"sessions/{SID}/chunks/000000.jsonl"
    original = base.files[rel]
    second = original.index(b"\n") + 1
    flipped = bytearray(original)
    flipped[second + 20] ^= 0x04  # inside the id: the index still knows it
    home = _damaged_copy(base, scratch, rel, bytes(flipped))
    store = Store(home, **OPTIONS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        actions = store.repair(SID)
    path = os.path.join(home, rel)
    length = original.index(b"\n", second) + 1 - second
    damaged_id = base.index[1].id
    moved = [a for a in actions if " bytes at " in a]
    assert moved == [
        f"moved {length} bytes at {path}@{second} to {path}.quarantine: "
        f"checksum mismatch" + moved[0].split("checksum mismatch", 1)[1]
    ]
    assert f"wrote a tombstone for event {damaged_id} in its place: its children keep their path" in actions
    assert not any("moved HEAD" in a or "reachable" in a for a in actions), actions
    stone_line = open(path, "rb").read()[second:].split(b"\n", 1)[0] + b"\n"
    assert _is_tombstone(stone_line)
    assert _reassemble(path, without_tombstones=True) == bytes(flipped)
    header = orjson.loads(open(path + ".quarantine", "rb").read().split(b"\n", 1)[0])
    assert (header["offset"], header["length"], header["from"]) == (second, length, "000000.jsonl")
    assert any("index.bin" in a for a in actions)  # the index is rebuilt from the chunks
    with store.open(SID, readonly=True) as s:
        stone = s.event(damaged_id)
        assert stone.kind == "tombstone" and stone.parent_id == base.index[0].id
        assert stone.record["quarantined"]["offset"] == second
        for e in base.index:
            if e.id != damaged_id:
                _same(base, s, e.id, None)
        assert [e.id for e in s.entries()] == [e.id for e in base.index]
    assert [p for p in store.fsck(SID) if p.severity == "error"] == []


def test_plain_fsck_never_changes_a_damaged_store(base, scratch):
    targets = [
        f"sessions/{SID}/chunks/000000.jsonl",
        f"sessions/{SID}/index.bin",
        f"sessions/{SID}/HEAD",
        f"sessions/{SID}/session.json",
        _last_chunk(base),
    ]
    for rel in targets:
        data = base.files[rel]
        for damaged in (data[: len(data) // 2], data[:1] + b"\xff" + data[2:], data + b"{torn"):
            home = _damaged_copy(base, scratch, rel, damaged)
            before = _digest_tree(home)
            problems = Store(home, **OPTIONS).fsck(SID)
            assert problems, f"{rel}: damage not reported"
            assert _digest_tree(home) == before, f"fsck changed the store ({rel})"
            shutil.rmtree(home)


# --- coverage-guided (fuzzer.py) ------------------------------------------------------

#: cases per target under ``make fuzz`` (1,000,000 in all); AGENTLOG_FUZZ_SCALE scales them
ATHERIS_CASES = {"scan": 600_000, "index": 150_000, "log": 100_000, "repair": 150_000}
PLAIN_CASES = 150  # per target, in `make test`: the harness's own properties on random byte damage


@pytest.mark.parametrize("target", sorted(ATHERIS_CASES))
def test_fuzz_harness_sampled(target, scratch):
    """The coverage-guided harness's cases, driven by plain random byte
    mutations (flips, cuts, inserts, copies, zeros): the same properties
    ``make fuzz`` checks a million times (tests/reliability/fuzzer.py)."""
    from . import fuzzer

    h = fuzzer.run_plain(target, scratch, PLAIN_CASES, SEED)
    record_figure("fuzz", f"harness {target} (plain, sampled)", cases=h.cases, **_labels(h.outcomes))
    assert h.cases == PLAIN_CASES


def _labels(outcomes: dict[str, int]) -> dict[str, int]:
    return {
        k.replace(" ", "_").replace(",", "").replace(":", "").replace("(", "").replace(")", ""): v
        for k, v in outcomes.items()
    }


@pytest.mark.skipif(not EXHAUSTIVE, reason="coverage-guided fuzzing runs under `make fuzz` only")
@pytest.mark.timeout(3 * 3600)
def test_fuzz_atheris_coverage_guided(tmp_path):
    """libFuzzer (atheris) on the recovery, index and repair code: one
    process per target, all at once, each in its own tmpfs directory, for
    ATHERIS_CASES cases. A failed property or an exception that is not an
    AgentlogError stops that fuzzer with a crash file, and fails this test."""
    pytest.importorskip("atheris", reason="atheris is the `fuzz` extra (pip install -e '.[fuzz]')")
    import subprocess
    import sys
    import time

    scale = float(os.environ.get("AGENTLOG_FUZZ_SCALE", "1"))
    base = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else str(tmp_path)
    root = tempfile.mkdtemp(prefix="agentlog-atheris-", dir=base)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    procs = {}
    start = time.monotonic()
    load_before = os.getloadavg()
    only = os.environ.get("AGENTLOG_FUZZ_TARGETS")  # a comma-separated subset, to rerun one
    chosen = {t: n for t, n in ATHERIS_CASES.items() if not only or t in only.split(",")}
    for target, cases in sorted(chosen.items()):
        work = os.path.join(root, target)
        os.makedirs(work)
        runs = max(int(cases * scale), 1)
        log = open(os.path.join(work, "libfuzzer.log"), "w")
        procs[target] = (
            runs,
            work,
            log,
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tests.reliability.fuzzer",
                    target,
                    work,
                    f"-runs={runs}",
                    f"-seed={SEED}",
                    # a chunk of the base session is under 1.2 kB; the index 4 kB + 64 B an event
                    f"-max_len={8192 if target == 'index' else 3072}",
                    "-len_control=0",
                    # the seeds are the base session's files, undamaged, so they all
                    # cover the same code; kept anyway, each is a file to mutate
                    "-keep_seed=1",
                    "-timeout=20",
                    "-rss_limit_mb=4096",
                    "-print_final_stats=1",
                    f"-artifact_prefix={work}/",
                ],
                cwd=repo,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            ),
        )
    failures, total = [], 0
    for target, (_runs, work, log, proc) in procs.items():
        proc.wait()
        log.close()
        text = open(os.path.join(work, "libfuzzer.log"), errors="replace").read()
        done = [line for line in text.splitlines() if line.startswith("Done ")]
        if proc.returncode != 0 or not done:
            failures.append(f"{target}: exit {proc.returncode}\n{text[-4000:]}")
            continue
        ran = int(done[-1].split()[1])
        stats = {}
        for name in os.listdir(work):
            if name.startswith("stats-") and name.endswith(".json"):
                with open(os.path.join(work, name)) as f:
                    stats = json.load(f)
        cov = [line for line in text.splitlines() if line.startswith("#") and "cov:" in line]
        edges = int(cov[-1].split("cov:")[1].split()[0]) if cov else 0
        seconds = int(done[-1].split(" in ")[1].split()[0])
        record_figure(
            "fuzz",
            f"atheris {target}",
            cases=ran,
            seconds=seconds,
            coverage_edges=edges,
            **_labels(stats.get("outcomes", {})),
        )
        total += ran
    load_after = os.getloadavg()
    record_figure(
        "fuzz",
        "atheris, all targets",
        cases_in_all=total,
        wall_seconds=int(time.monotonic() - start),
        load_before=f"{load_before[0]:.2f}",
        load_after=f"{load_after[0]:.2f}",
    )
    assert not failures, "\n\n".join(failures)
    shutil.rmtree(root, ignore_errors=True)  # kept when a target failed: its crash file is the reproducer
    assert total >= int(sum(chosen.values()) * scale)
