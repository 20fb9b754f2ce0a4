"""The append-only chunk log: the session's single source of truth."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

from ..._fs import OsFs
from ...errors import CorruptionError, StorageError
from .layout import chunk_name, parse_chunk_name

__all__ = ["ChunkLog", "Line", "quarantine_path", "set_aside"]

_READ_BLOCK = 1 << 20
_FIRST_BLOCK = 1 << 16


@dataclass(slots=True)
class Line:
    """One line found by a scan: complete (ends in a newline) or torn."""

    chunk: int
    offset: int
    data: bytes
    complete: bool

    @property
    def length(self) -> int:
        return len(self.data)


def quarantine_path(chunk_path: str) -> str:
    """Where bytes taken out of a chunk are kept (never read as a chunk)."""
    return chunk_path + ".quarantine"


def set_aside(fs: OsFs, chunk_path: str, data: bytes) -> str:
    """Append ``data`` to the chunk's quarantine file, durably, before the
    caller removes it from the chunk: recovery and repair never delete what
    a log held. Returns the quarantine file's path."""
    path = quarantine_path(chunk_path)
    created = not fs.exists(path)
    fd = fs.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        fs.write(fd, data, path)
        fs.fdatasync(fd, path)
    finally:
        fs.close(fd)
    if created:
        fs.fsync_dir(os.path.dirname(path))
    return path


class ChunkLog:
    """Numbered chunk files; appends go to the last, rotating at a size.

    A record never spans two chunks, and a batch never does either, so a
    torn write can only be at the end of the last chunk."""

    def __init__(self, fs: OsFs, directory: str, *, chunk_size: int, durable: bool, writable: bool) -> None:
        self.fs = fs
        self.dir = directory
        self.chunk_size = chunk_size
        self.durable = durable
        self.writable = writable
        self._read_fds: dict[int, int] = {}
        self._paths: dict[int, str] = {}
        self._fd: int | None = None
        self.numbers = self._list()
        if not self.numbers:
            raise CorruptionError(directory, None, "no chunk files")
        self.current = self.numbers[-1]
        self.end = self.fs.stat(self.path(self.current)).st_size

    def _list(self) -> list[int]:
        numbers = []
        for name in self.fs.listdir(self.dir):
            number = parse_chunk_name(name)
            if number is not None:
                numbers.append(number)
        numbers.sort()
        if numbers != list(range(len(numbers))):
            raise CorruptionError(self.dir, None, f"chunk files are not numbered 0..n-1: {numbers[:10]}")
        return numbers

    def path(self, number: int) -> str:
        path = self._paths.get(number)
        if path is None:  # asked on every append and read (for messages): build once
            path = self._paths[number] = os.path.join(self.dir, chunk_name(number))
        return path

    def size(self, number: int) -> int:
        if number == self.current:
            return self.end
        return self.fs.stat(self.path(number)).st_size

    # --- reading -----------------------------------------------------------
    def _reader(self, number: int) -> int:
        fd = self._read_fds.get(number)
        if fd is None:
            if number not in range(len(self.numbers)):
                raise CorruptionError(self.path(number), None, "chunk does not exist")
            fd = self.fs.open(self.path(number), os.O_RDONLY)
            self._read_fds[number] = fd
        return fd

    def read(self, number: int, offset: int, length: int) -> bytes:
        return self.fs.pread(self._reader(number), length, offset, self.path(number))

    def scan(self, number: int = 0, offset: int = 0) -> Iterator[Line]:
        """Every line from (number, offset) to the end of the log.

        The last line of a chunk may be torn (no newline); callers decide
        whether that is a crash's torn tail or damage."""
        for n in range(number, len(self.numbers)):
            start = offset if n == number else 0
            fd = self._reader(n)
            path = self.path(n)
            pending = b""
            pos = start
            size = _FIRST_BLOCK  # a tail is usually small: grow only when it is not
            while True:
                block = self.fs.pread(fd, size, pos, path)
                size = min(size * 4, _READ_BLOCK)
                if not block:
                    break
                pos += len(block)
                data = pending + block if pending else block
                line_start = 0
                while True:
                    nl = data.find(b"\n", line_start)
                    if nl < 0:
                        break
                    yield Line(n, pos - len(data) + line_start, data[line_start : nl + 1], True)
                    line_start = nl + 1
                pending = data[line_start:]
            if pending:
                yield Line(n, pos - len(pending), pending, False)

    # --- writing -----------------------------------------------------------
    def _writer(self) -> int:
        if self._fd is None:
            self._fd = self.fs.open(self.path(self.current), os.O_WRONLY | os.O_APPEND)
        return self._fd

    def needs_rotation(self, nbytes: int) -> bool:
        return self.end > 0 and self.end + nbytes > self.chunk_size

    def rotate(self) -> None:
        """Start the next chunk; its directory entry is durable before use."""
        number = self.current + 1
        path = self.path(number)
        # No O_EXCL: a rotation that failed after creating the file left it
        # empty (nothing is written to a chunk before it is in use); reuse it.
        fd = self.fs.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            if self.fs.size(fd, path):
                raise CorruptionError(path, None, "the next chunk already holds data")
            if self.durable:
                self.fs.fsync(fd, path)
                self.fs.fsync_dir(self.dir)
        except BaseException:
            self._close_quietly(fd)
            raise
        old, self._fd = self._fd, fd
        self.numbers.append(number)
        self.current = number
        self.end = 0
        if old is not None:
            self._close_quietly(old)  # its bytes were synced before this rotation

    def _close_quietly(self, fd: int) -> None:
        try:
            self.fs.close(fd)
        except StorageError:
            pass  # the descriptor is gone either way; nothing unsynced rides on it

    def append(self, data: bytes) -> int:
        """Write ``data`` at the end of the current chunk; return its offset."""
        offset = self.end
        self.fs.write(self._writer(), data, self.path(self.current))
        self.end = offset + len(data)
        return offset

    def sync(self) -> None:
        if self.durable and self._fd is not None:
            self.fs.fdatasync(self._fd, self.path(self.current))

    def sync_chunk(self, number: int) -> None:
        """Sync chunk ``number``, whatever wrote it (a writer at durability
        "full" taking over a log that one at "off" may have left unsynced)."""
        path = self.path(number)
        if number == self.current and self._fd is not None:
            self.fs.fdatasync(self._fd, path)
            return
        fd = self.fs.open(path, os.O_WRONLY)  # (a sync is a write's: opened as one, writing nothing)
        try:
            self.fs.fdatasync(fd, path)
        finally:
            self.fs.close(fd)

    def truncate(self, number: int, size: int) -> None:
        """Cut chunk ``number`` back to ``size`` bytes (torn tail, rollback)."""
        path = self.path(number)
        if number == self.current:
            fd = self._writer()
            self.fs.truncate(fd, size, path)
            self.fs.fdatasync(fd, path)
            self.end = size
        else:
            fd = self.fs.open(path, os.O_WRONLY)
            try:
                self.fs.truncate(fd, size, path)
                self.fs.fdatasync(fd, path)
            finally:
                self.fs.close(fd)

    def refresh(self) -> None:
        """Re-read the chunk list and the last chunk's size (readers)."""
        self.numbers = self._list()
        self.current = self.numbers[-1]
        self.end = self.fs.stat(self.path(self.current)).st_size

    def close(self) -> None:
        fds = list(self._read_fds.values())
        if self._fd is not None:
            fds.append(self._fd)
        self._read_fds.clear()
        self._fd = None
        for fd in fds:
            self.fs.close(fd)
