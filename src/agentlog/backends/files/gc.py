"""Garbage collection and disk usage for the file backend's home.

What ``collect`` removes (see docs/format.md for the layout):

- **orphaned blobs**: ``blobs/<hex>`` that no event line of the session
  names. A writer stores a blob *before* the line naming it, so a blob is
  only collected while the session's writer lease is held by gc itself
  (a session being written is skipped and reported busy) and once it is
  older than ``grace_s``;
- **leftover work directories**: ``sessions/.new-*`` (a create that crashed
  before its rename) and ``sessions/.del-*`` (a delete that crashed after
  its rename), and ``blobs/.tmp-*`` files, all older than ``grace_s`` so a
  create or delete running right now is left alone;
- **quarantine files** (``chunks/*.quarantine``, ``blobs/*.quarantine``
  and ``session.json.quarantine``: bytes ``fsck --repair`` moved aside):
  only with ``quarantine=True`` (the CLI asks first) and only those older
  than ``quarantine_age_s``.

Blob references are found by scanning chunk and quarantine bytes for
``"digest":"sha256:<hex>"``. A record that happens to contain such text
keeps a blob alive; nothing referenced is ever taken, which is the side
to err on. A session with a damaged or torn chunk line, or a quarantine
file, keeps every blob (``GcReport.damaged``): the damaged bytes may be
the only reference to one.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import orjson

from ..._codec import checksum_ok
from ..._fs import OsFs
from .blobs import LOST

__all__ = ["DEFAULT_GRACE_S", "GcItem", "GcReport", "SessionUsage", "collect", "usage"]

DEFAULT_GRACE_S = 3600.0
_DIGEST = re.compile(rb'"digest":"sha256:([0-9a-f]{64})"')
_BLOB_NAME = re.compile(r"[0-9a-f]{64}\Z")
_READ = 1 << 20

Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class GcItem:
    """One thing gc removes (or, in a dry run, would remove)."""

    path: str
    #: "orphan-blob", "temp-file", "leftover-create", "leftover-delete", "quarantine".
    what: str
    bytes: int
    session_id: str | None


@dataclass(slots=True)
class GcReport:
    items: list[GcItem] = field(default_factory=list)
    #: Sessions skipped because a writer holds their lease.
    busy: list[str] = field(default_factory=list)
    #: Quarantine files kept because ``quarantine`` was not given.
    quarantine_kept: list[GcItem] = field(default_factory=list)
    #: (session, where): sessions whose blobs were all kept because a line
    #: is damaged or a quarantine file exists (a reference may be unreadable).
    damaged: list[tuple[str, str]] = field(default_factory=list)
    dry_run: bool = False

    @property
    def bytes(self) -> int:
        return sum(i.bytes for i in self.items)


@dataclass(frozen=True, slots=True)
class SessionUsage:
    """Bytes on disk of one session directory, by part."""

    session_id: str
    chunks: int
    chunk_files: int
    blobs: int
    blob_files: int
    index: int
    quarantine: int
    other: int
    #: Of ``blobs``, bytes in files a session listed before this one also
    #: holds (a fork's or a copy's blobs are hard links): a home's total
    #: counts them once.
    blobs_shared: int = 0

    @property
    def total(self) -> int:
        return self.chunks + self.blobs + self.index + self.quarantine + self.other


def _size(path: str) -> int:
    """Bytes under ``path`` (a file or a tree); 0 if it went away."""
    try:
        if not os.path.isdir(path) or os.path.islink(path):
            return os.lstat(path).st_size
    except FileNotFoundError:
        return 0
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            with contextlib.suppress(FileNotFoundError):  # removed while we walked
                total += os.lstat(os.path.join(root, name)).st_size
    return total


def _older(path: str, age_s: float, now: float) -> bool:
    try:
        return now - os.lstat(path).st_mtime >= age_s
    except FileNotFoundError:
        return False


def _scandir(path: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(path) as it:
            return sorted(it, key=lambda e: e.name)
    except FileNotFoundError:
        return []


@contextlib.contextmanager
def _lease(home: str, session_id: str, *, dry_run: bool = False) -> Iterator[bool]:
    """Try the session's writer lease (``locks/<id>.lock``, an flock);
    yields whether gc holds it.

    A dry run writes nothing, so it works on a home it may not write (a
    read-only copy): it opens an existing lock file read-only (an flock
    needs no write access) and, where there is none, no writer has ever
    taken the lease, so it holds nothing to wait for."""
    path = os.path.join(home, "locks", f"{session_id}.lock")
    if dry_run:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            yield True
            return
    else:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _referenced(chunks_dir: str) -> tuple[set[str], str | None]:
    """The blob digests the session's lines name, and why a reference may
    be missing from them, if one may: a chunk line that fails its
    checksum or is torn (its digest may be the damaged part), or a
    quarantine file (``fsck --repair`` moved damaged bytes there, and the
    tombstone it left keeps a blob's digest only when the index knew it)."""
    found: set[str] = set()
    damage: str | None = None
    for entry in _scandir(chunks_dir):
        if not entry.is_file():
            continue
        if entry.name.endswith(".quarantine"):
            found |= _digests(entry.path)
            damage = damage or f"{entry.name} holds bytes fsck --repair moved aside"
        else:
            digests, problem = _scan_chunk(entry.path, entry.name)
            found |= digests
            damage = damage or problem
    return found, damage


def _digests(path: str) -> set[str]:
    found: set[str] = set()
    with open(path, "rb") as f:
        tail = b""
        while block := f.read(_READ):
            data = tail + block
            found.update(m.decode() for m in _DIGEST.findall(data))
            tail = data[-100:]  # a reference split across two reads
    return found


def _scan_chunk(path: str, name: str) -> tuple[set[str], str | None]:
    """The digests a chunk names, and where its first damaged line is."""
    found: set[str] = set()
    problem: str | None = None
    pending = b""  # an incomplete line, carried to the next read
    offset = 0  # the file offset of ``pending``'s first byte
    with open(path, "rb") as f:
        while block := f.read(_READ):
            data = pending + block
            cut = data.rfind(b"\n") + 1
            complete, pending = data[:cut], data[cut:]
            found.update(m.decode() for m in _DIGEST.findall(complete))
            if problem is None:
                problem = _damaged_line(name, complete, offset)
            offset += cut
    if pending:
        found.update(m.decode() for m in _DIGEST.findall(pending))
        problem = problem or f"{name} ends in a torn line at byte {offset}"
    return found, problem


def _damaged_line(name: str, lines: bytes, offset: int) -> str | None:
    """Where the first line of ``lines`` that fails its checksum starts."""
    at = 0
    for line in lines.split(b"\n")[:-1]:
        if not checksum_ok(line):
            return f"{name} has a damaged line at byte {offset + at}"
        at += len(line) + 1
    return None


def _session_items(
    home: str,
    sid: str,
    directory: str,
    *,
    grace_s: float,
    quarantine_age_s: float,
    now: float,
    report: GcReport,
    dry_run: bool,
) -> list[GcItem]:
    items: list[GcItem] = []
    chunks = os.path.join(directory, "chunks")
    blobs = os.path.join(directory, "blobs")
    # fsck --repair moves damaged bytes aside in all three places: chunk
    # records, blobs whose content no longer matches their digest, and a
    # session.json it could not read.
    for entry in (*_scandir(chunks), *_scandir(blobs), *_scandir(directory)):
        if entry.name.endswith(".quarantine") and entry.is_file() and _older(entry.path, quarantine_age_s, now):
            report.quarantine_kept.append(GcItem(entry.path, "quarantine", _size(entry.path), sid))
    candidates = _scandir(blobs)
    if not candidates:
        return items
    with _lease(home, sid, dry_run=dry_run) as held:
        if not held:
            report.busy.append(sid)
            return items
        referenced, damage = _referenced(chunks)
        if damage is not None:
            # A damaged line may be the only one naming a blob: no blob of
            # this session is called an orphan until fsck has been run and
            # its quarantine removed.
            report.damaged.append((sid, damage))
        for entry in candidates:
            if not _older(entry.path, grace_s, now):
                continue
            if entry.name.startswith(".tmp-"):
                items.append(GcItem(entry.path, "temp-file", _size(entry.path), sid))
            elif _BLOB_NAME.match(entry.name) and entry.name not in referenced and damage is None:
                items.append(GcItem(entry.path, "orphan-blob", _size(entry.path), sid))
        if not dry_run:
            # Under the lease: a writer that found this blob already there
            # would reference it without writing it again (blobs are
            # content-addressed), so removing it after releasing could
            # take a blob a new line names.
            for item in items:
                _remove(item.path)
    return items


def _note_lost(blob: str) -> None:
    """Leave ``fsck --repair``'s note of a lost blob (``<hex>.lost``) where
    the damaged bytes it had set aside were removed: without it, fsck found
    a plain missing blob again, an error, on a session it had called clean."""
    note = {
        "lost_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "digest": "sha256:" + os.path.basename(blob),
        "reason": "its damaged bytes, set aside by fsck --repair, were removed by gc --quarantine",
    }
    if not os.path.exists(blob + LOST):
        OsFs().write_atomic(blob + LOST, orjson.dumps(note) + b"\n", durable=True)


def _remove(path: str) -> None:
    try:
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        else:
            os.unlink(path)
    except FileNotFoundError:
        pass  # another gc, or the delete that left it, got there first


def collect(
    home: str,
    *,
    dry_run: bool = False,
    quarantine: bool = False,
    grace_s: float = DEFAULT_GRACE_S,
    quarantine_age_s: float = 0.0,
    progress: Progress | None = None,
) -> GcReport:
    """Find (and unless ``dry_run``, remove) what no session needs."""
    now = time.time()
    report = GcReport(dry_run=dry_run)
    sessions = os.path.join(home, "sessions")
    entries = _scandir(sessions)
    for n, entry in enumerate(entries):
        if progress is not None:
            progress(n, len(entries))
        if entry.name.startswith(".new-") or entry.name.startswith(".del-"):
            if _older(entry.path, grace_s, now):
                what = "leftover-create" if entry.name.startswith(".new-") else "leftover-delete"
                report.items.append(GcItem(entry.path, what, _size(entry.path), None))
            continue
        if entry.name.startswith(".") or not entry.is_dir():
            continue
        report.items += _session_items(
            home,
            entry.name,
            entry.path,
            grace_s=grace_s,
            quarantine_age_s=quarantine_age_s,
            now=now,
            report=report,
            dry_run=dry_run,
        )
    if quarantine:
        report.items += report.quarantine_kept
        if not dry_run:
            for item in report.quarantine_kept:
                _remove(item.path)
                if os.path.basename(os.path.dirname(item.path)) == "blobs":
                    _note_lost(item.path[: -len(".quarantine")])
        report.quarantine_kept = []
    if not dry_run:
        for item in report.items:
            if item.what.startswith("leftover"):
                _remove(item.path)
    if progress is not None:
        progress(len(entries), len(entries))
    return report


def usage(home: str) -> list[SessionUsage]:
    """Bytes on disk of every session under ``home``, by part."""
    out = []
    linked: set[tuple[int, int]] = set()  # (device, inode) of every blob file with more than one link
    for entry in _scandir(os.path.join(home, "sessions")):
        if entry.name.startswith(".") or not entry.is_dir():
            continue
        chunks = blobs = quarantine = chunk_files = blob_files = shared = 0
        for c in _scandir(os.path.join(entry.path, "chunks")):
            size = _size(c.path)
            if c.name.endswith(".quarantine"):
                quarantine += size
            else:
                chunks += size
                chunk_files += 1
        for b in _scandir(os.path.join(entry.path, "blobs")):
            size = _size(b.path)
            if b.name.endswith(".quarantine"):
                quarantine += size
                continue
            blobs += size
            blob_files += 1 if _BLOB_NAME.match(b.name) else 0
            try:
                st = b.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue  # gone since the listing
            if st.st_nlink > 1:
                if (st.st_dev, st.st_ino) in linked:
                    shared += size
                linked.add((st.st_dev, st.st_ino))
        quarantine += sum(_size(q.path) for q in _scandir(entry.path) if q.name.endswith(".quarantine"))
        index = sum(_size(os.path.join(entry.path, name)) for name in ("index.bin", "index.jsonl"))
        other = _size(entry.path) - chunks - blobs - quarantine - index
        out.append(
            SessionUsage(entry.name, chunks, chunk_files, blobs, blob_files, index, quarantine, max(other, 0), shared)
        )
    return out
