"""Crash states a POSIX file system may legally leave behind, from a recording.

``RecordingFs`` runs a workload on a real directory and logs every
file-system effect the file backend makes through ``agentlog._fs.OsFs``.
``FsModel`` replays that log into an inode-level model that keeps, for
every file, its durable bytes (as of its last fsync/fdatasync) and the
writes and truncations issued since, and for every directory its durable
entries (as of its last directory fsync) and the entry changes since.

A crash state after the first ``k`` operations is the durable state plus,
per object, some of what was still volatile:

* a file keeps a prefix of its unsynced data operations, the next one
  possibly cut short (a torn write) or present as zeros (its size reached
  the disk, its data did not), independently of every other file;
* a directory keeps a prefix of its unsynced entry changes (creates,
  renames, unlinks), independently of every other directory; a same-
  directory rename is atomic, so it is one change.

Only objects reachable through the chosen directory states matter, so the
enumeration walks the tree: it picks a state for each reachable directory,
then for each file reachable in it. With every choice at "all applied" the
state is what a killed process leaves (the page cache survives); with every
choice at "none" it is the bare durable state after a power loss.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field

from agentlog._fs import OsFs

__all__ = ["FsModel", "RecordingFs", "CrashState", "materialize"]

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC


class RecordingFs(OsFs):
    """An OsFs that performs every call and logs the effects under ``root``.

    Paths are logged relative to ``root``; a path outside it is a bug the
    recording refuses to hide (invariant 8)."""

    def __init__(self, root: str) -> None:
        self.root = os.path.abspath(root)
        self.ops: list[tuple] = []
        self._tokens: dict[int, int] = {}
        self._next_token = 0

    def position(self) -> int:
        return len(self.ops)

    @contextlib.contextmanager
    def quiet(self):
        """Reads the harness makes between steps (nothing is recorded anyway:
        read-only opens and reads are not effects)."""
        yield

    def rel(self, path: str) -> str:
        full = os.path.abspath(path)
        if full != self.root and not full.startswith(self.root + os.sep):
            raise AssertionError(f"file effect outside the store's root: {path!r}")
        return os.path.relpath(full, self.root)

    def open(self, path: str, flags: int, mode: int = 0o600) -> int:
        fd = super().open(path, flags, mode)
        if flags & _WRITE_FLAGS:
            token = self._next_token
            self._next_token += 1
            self._tokens[fd] = token
            self.ops.append(("open", self.rel(path), flags, token))
        return fd

    def close(self, fd: int) -> None:
        self._tokens.pop(fd, None)
        super().close(fd)

    def write(self, fd: int, data: bytes, path: str = "?") -> None:
        super().write(fd, data, path)
        self.ops.append(("write", self._tokens[fd], bytes(data)))

    def pwrite(self, fd: int, data: bytes, offset: int, path: str = "?") -> None:
        super().pwrite(fd, data, offset, path)
        self.ops.append(("pwrite", self._tokens[fd], offset, bytes(data)))

    def truncate(self, fd: int, size: int, path: str = "?") -> None:
        super().truncate(fd, size, path)
        self.ops.append(("truncate", self._tokens[fd], size))

    def fsync(self, fd: int, path: str = "?") -> None:
        super().fsync(fd, path)
        self.ops.append(("sync", self._tokens[fd]))

    def fdatasync(self, fd: int, path: str = "?") -> None:
        super().fdatasync(fd, path)
        self.ops.append(("sync", self._tokens[fd]))

    def rename(self, src: str, dst: str) -> None:
        super().rename(src, dst)
        self.ops.append(("rename", self.rel(src), self.rel(dst)))

    def mkdir(self, path: str, mode: int = 0o700) -> None:
        super().mkdir(path, mode)
        self.ops.append(("mkdir", self.rel(path)))

    def unlink(self, path: str) -> None:
        super().unlink(path)
        self.ops.append(("unlink", self.rel(path)))

    def link(self, src: str, dst: str) -> None:
        super().link(src, dst)
        self.ops.append(("link", self.rel(src), self.rel(dst)))

    def rmtree(self, path: str) -> None:
        # Logged as the unlinks and rmdirs it amounts to, deepest first.
        removals = []
        for dirpath, dirnames, filenames in os.walk(path, topdown=False):
            removals += [("unlink", self.rel(os.path.join(dirpath, f))) for f in filenames]
            removals += [("rmdir", self.rel(os.path.join(dirpath, d))) for d in dirnames]
        removals.append(("rmdir", self.rel(path)))
        super().rmtree(path)
        self.ops.extend(removals)

    def fsync_dir(self, path: str) -> None:
        super().fsync_dir(path)
        self.ops.append(("fsync_dir", self.rel(path)))


# --- the model ------------------------------------------------------------------


@dataclass
class _File:
    durable: bytes = b""
    pending: list[tuple] = field(default_factory=list)  # ("w", off, data) | ("t", size)
    data: bytearray = field(default_factory=bytearray)


@dataclass
class _Dir:
    durable: dict[str, int] = field(default_factory=dict)
    pending: list[tuple] = field(default_factory=list)  # each: ((name, ino|None), ...)
    entries: dict[str, int] = field(default_factory=dict)


#: A "cut" that keeps a write's length but not its bytes: the file's size
#: reached the disk, its data did not (delayed allocation, writeback mode).
ZEROS = -1


def _apply_data(buf: bytearray, op: tuple, cut: int | None = None) -> None:
    if op[0] == "t":
        size = op[1]
        if size < len(buf):
            del buf[size:]
        else:
            buf.extend(b"\0" * (size - len(buf)))
        return
    _, off, data = op
    if cut == ZEROS:
        data = bytes(len(data))
    elif cut is not None:
        data = data[:cut]
    if off > len(buf):
        buf.extend(b"\0" * (off - len(buf)))
    buf[off : off + len(data)] = data


def tear_points(data: bytes, exhaustive: bool) -> list[int]:
    """Where a torn write may stop: one byte in, the middle, one byte short,
    and just after each line it carries (a batch cut at a record boundary)."""
    n = len(data)
    points = {1, n // 2, n - 1}
    start = 0
    lines = []
    while True:
        nl = data.find(b"\n", start)
        if nl < 0 or nl + 1 >= n:
            break
        lines.append(nl + 1)
        start = nl + 1
    if not exhaustive and len(lines) > 6:
        lines = lines[:3] + lines[-3:]
    points.update(lines)
    return sorted(p for p in points if 0 < p < n)


class FsModel:
    """Replays a recording; yields the crash states after each prefix."""

    ROOT = 0

    def __init__(self) -> None:
        self.inodes: dict[int, _File | _Dir] = {self.ROOT: _Dir()}
        self.tokens: dict[int, list] = {}  # token -> [ino, pos, append]
        self.applied = 0

    # --- replay ------------------------------------------------------------
    def _lookup(self, rel: str) -> tuple[int, str]:
        parts = [p for p in rel.split(os.sep) if p and p != "."]
        ino = self.ROOT
        for p in parts[:-1]:
            ino = self.inodes[ino].entries[p]
        return ino, parts[-1]

    def _dir_change(self, dir_ino: int, *changes: tuple[str, int | None]) -> None:
        d = self.inodes[dir_ino]
        for name, target in changes:
            if target is None:
                d.entries.pop(name, None)
            else:
                d.entries[name] = target
        d.pending.append(changes)

    def _new(self, node: _File | _Dir) -> int:
        ino = len(self.inodes)
        self.inodes[ino] = node
        return ino

    def apply(self, op: tuple) -> None:
        kind = op[0]
        if kind == "open":
            _, rel, flags, token = op
            parent, name = self._lookup(rel)
            ino = self.inodes[parent].entries.get(name)
            if ino is None:
                ino = self._new(_File())
                self._dir_change(parent, (name, ino))
            f = self.inodes[ino]
            if flags & os.O_TRUNC and f.data:
                f.pending.append(("t", 0))
                del f.data[:]
            self.tokens[token] = [ino, 0, bool(flags & os.O_APPEND)]
        elif kind == "write":
            _, token, data = op
            slot = self.tokens[token]
            f = self.inodes[slot[0]]
            off = len(f.data) if slot[2] else slot[1]
            f.pending.append(("w", off, data))
            _apply_data(f.data, ("w", off, data))
            slot[1] = off + len(data)
        elif kind == "pwrite":
            _, token, off, data = op
            f = self.inodes[self.tokens[token][0]]
            f.pending.append(("w", off, data))
            _apply_data(f.data, ("w", off, data))
        elif kind == "truncate":
            _, token, size = op
            f = self.inodes[self.tokens[token][0]]
            f.pending.append(("t", size))
            _apply_data(f.data, ("t", size))
        elif kind == "sync":
            f = self.inodes[self.tokens[op[1]][0]]
            f.durable = bytes(f.data)
            f.pending = []
        elif kind == "mkdir":
            parent, name = self._lookup(op[1])
            self._dir_change(parent, (name, self._new(_Dir())))
        elif kind == "rename":
            sp, sn = self._lookup(op[1])
            dp, dn = self._lookup(op[2])
            ino = self.inodes[sp].entries[sn]
            if sp == dp:
                self._dir_change(sp, (sn, None), (dn, ino))
            else:
                self._dir_change(dp, (dn, ino))
                self._dir_change(sp, (sn, None))
        elif kind in ("unlink", "rmdir"):
            parent, name = self._lookup(op[1])
            self._dir_change(parent, (name, None))
        elif kind == "link":
            sp, sn = self._lookup(op[1])
            dp, dn = self._lookup(op[2])
            self._dir_change(dp, (dn, self.inodes[sp].entries[sn]))
        elif kind == "fsync_dir":
            parent, name = self._lookup(op[1]) if op[1] != "." else (None, None)
            ino = self.ROOT if parent is None else self.inodes[parent].entries[name]
            d = self.inodes[ino]
            d.durable = dict(d.entries)
            d.pending = []
        else:  # pragma: no cover - a new op kind must be modelled first
            raise AssertionError(f"unmodelled op {op!r}")
        self.applied += 1

    # --- crash states ------------------------------------------------------
    def _dir_state(self, d: _Dir, n: int) -> dict[str, int]:
        if n == len(d.pending):
            return d.entries
        entries = dict(d.durable)
        for changes in d.pending[:n]:
            for name, target in changes:
                if target is None:
                    entries.pop(name, None)
                else:
                    entries[name] = target
        return entries

    def file_options(self, f: _File, exhaustive: bool) -> list[tuple[int, int | None]]:
        """(ops kept, cut of the next one) for each plausible data state."""
        n = len(f.pending)
        options: list[tuple[int, int | None]] = [(i, None) for i in range(n)]
        for i, op in enumerate(f.pending):
            if op[0] == "w":
                options += [(i, cut) for cut in tear_points(op[2], exhaustive)]
                options.append((i, ZEROS))
        options.append((n, None))  # last: enumeration starts from the process-crash state
        return options

    def file_bytes(self, f: _File, choice: tuple[int, int | None]) -> bytes:
        kept, cut = choice
        if kept == len(f.pending):
            return bytes(f.data)
        buf = bytearray(f.durable)
        for op in f.pending[:kept]:
            _apply_data(buf, op)
        if cut is not None:
            _apply_data(buf, f.pending[kept], cut)
        return bytes(buf)

    def state(self, chooser) -> CrashState:
        """Walk the tree, asking ``chooser(kind, ino, options)`` for each choice."""
        files: dict[str, bytes] = {}
        dirs: list[str] = []

        def walk(ino: int, prefix: str, depth: int, frozen: bool) -> None:
            # Inside a directory the store never reads (see CrashState.key)
            # one variant stands for all: no choices are offered there.
            d = self.inodes[ino]
            n = chooser("dir", ino, list(range(len(d.pending) + 1))) if d.pending and not frozen else len(d.pending)
            for name, child in sorted(self._dir_state(d, n).items()):
                path = f"{prefix}{name}"
                node = self.inodes[child]
                if isinstance(node, _Dir):
                    if depth > 32:  # pragma: no cover - a loop would be a model bug
                        raise AssertionError("directory loop")
                    dirs.append(path)
                    walk(child, path + "/", depth + 1, frozen or _ignored(path))
                else:
                    if node.pending and not frozen:
                        choice = chooser("file", child, None)
                    else:
                        choice = (len(node.pending), None)
                    files[path] = self.file_bytes(node, choice)

        walk(self.ROOT, "", 0, False)
        return CrashState(self.applied, dirs, files)

    def choices(self, exhaustive: bool) -> Iterator[CrashState]:
        """Every crash state at this prefix (a depth-first product)."""
        # Enumerate by re-walking with an odometer over the choices met so
        # far: the set of reachable objects depends on earlier choices.
        trail: list[int] = []  # chosen option index per choice point, in walk order
        sizes: list[int] = []
        while True:
            pos = 0

            def chooser(kind, ino, options):
                nonlocal pos
                if options is None:
                    options = self.file_options(self.inodes[ino], exhaustive)
                if pos == len(trail):
                    trail.append(len(options) - 1)  # start from "all applied"
                    sizes.append(len(options))
                sizes[pos] = len(options)
                value = options[trail[pos]]
                pos += 1
                return value

            yield self.state(chooser)
            del trail[pos:]
            del sizes[pos:]
            # advance the odometer from the end
            while trail and trail[-1] == 0:
                trail.pop()
                sizes.pop()
            if not trail:
                return
            trail[-1] -= 1

    def sample(self, rng: random.Random, exhaustive: bool, *, mode: str) -> CrashState:
        """One state: ``all`` (process crash), ``none`` (bare durable), or ``random``."""

        def chooser(kind, ino, options):
            if options is None:
                options = self.file_options(self.inodes[ino], exhaustive)
            if mode == "all":
                return options[-1]
            if mode == "none":
                return options[0]
            return rng.choice(options)

        return self.state(chooser)


@dataclass
class CrashState:
    prefix: int  # how many recorded operations were issued
    dirs: list[str]
    files: dict[str, bytes]

    def key(self) -> bytes:
        """Identity for deduplication. Inside a directory the store never
        reads (``sessions/.new-*`` being built, ``sessions/.del-*`` being
        removed) only the directory's presence counts: states that differ
        only there are one state to the store."""
        h = hashlib.blake2b(digest_size=16)
        for d in self.dirs:
            if not _ignored(d) or d.count("/") == 1:
                h.update(b"D" + d.encode() + b"\0")
        for path in sorted(self.files):
            if _ignored(path):
                continue
            data = self.files[path]
            h.update(b"F" + path.encode() + b"\0" + len(data).to_bytes(8, "little"))
            h.update(data)
        return h.digest()


def _ignored(path: str) -> bool:
    return path.startswith(("sessions/.new-", "sessions/.del-"))


def materialize(state: CrashState, target: str) -> None:
    """Write ``state`` into the empty or absent directory ``target``."""
    if os.path.exists(target):
        shutil.rmtree(target)
    os.makedirs(target)
    for d in state.dirs:
        os.mkdir(os.path.join(target, d))
    for path, data in state.files.items():
        with open(os.path.join(target, path), "wb") as f:
            f.write(data)
