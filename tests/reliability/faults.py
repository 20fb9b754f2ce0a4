"""A fault-injecting file system: the Nth operation fails, once or for good.

``FaultyFs`` is an ``OsFs`` that numbers every call the file backend makes
through it (effects and reads alike) and, when armed, makes call number N
fail with a chosen errno, raised as ``StorageError`` exactly the way
``OsFs`` raises a real one. ``persistent`` keeps failing every later call
the errno applies to until ``disarm()`` (a disk that stays full, a file
system remounted read-only, a dying disk). ``partial`` makes a failing
``write`` first write half its bytes, as a real short write followed by
ENOSPC does.

Which calls an errno applies to: ENOSPC and EROFS hit calls that change
something (open for writing, write, truncate, syncs, rename, mkdir,
unlink, link, rmtree); EIO hits every call, reads and close included.
"""

from __future__ import annotations

import contextlib
import errno
import os

from agentlog._fs import OsFs, _wrap

__all__ = ["FaultyFs", "ERRNOS"]

ERRNOS = {"ENOSPC": errno.ENOSPC, "EIO": errno.EIO, "EROFS": errno.EROFS}

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC


class FaultyFs(OsFs):
    def __init__(self) -> None:
        self.count = 0
        self.calls: list[tuple[str, bool]] = []  # (operation, is an effect)
        self.fail_at: int | None = None
        self.errno = errno.EIO
        self.persistent = False
        self.partial = False
        self.fired: list[tuple[int, str, str]] = []  # (call number, operation, path)
        self._quiet = 0

    # --- control ----------------------------------------------------------------
    def arm(self, n: int, err: int, *, persistent: bool = False, partial: bool = False) -> None:
        self.fail_at, self.errno, self.persistent, self.partial = n, err, persistent, partial

    def disarm(self) -> None:
        self.fail_at = None

    def position(self) -> int:
        return self.count

    @contextlib.contextmanager
    def quiet(self):
        """Calls the harness makes itself (snapshots) are neither counted nor failed."""
        self._quiet += 1
        try:
            yield
        finally:
            self._quiet -= 1

    def applies(self, effect: bool, err: int) -> bool:
        return effect or err == errno.EIO

    def _gate(self, op: str, path: str, effect: bool) -> bool:
        """Count the call; True if it must fail."""
        if self._quiet:
            return False
        self.count += 1
        self.calls.append((op, effect))
        if self.fail_at is None or not self.applies(effect, self.errno):
            return False
        if self.count == self.fail_at or (self.persistent and self.count > self.fail_at):
            self.fired.append((self.count, op, path))
            return True
        return False

    def _fail(self, op: str, path: str) -> None:
        raise _wrap(op, path, OSError(self.errno, os.strerror(self.errno)))

    # --- effects --------------------------------------------------------------------
    def open(self, path: str, flags: int, mode: int = 0o600) -> int:
        if self._gate("open", path, bool(flags & _WRITE_FLAGS)):
            self._fail("open", path)
        return super().open(path, flags, mode)

    def write(self, fd: int, data: bytes, path: str = "?") -> None:
        if self._gate("write", path, True):
            if self.partial and len(data) > 1:
                os.write(fd, bytes(data[: len(data) // 2]))
            self._fail("write", path)
        super().write(fd, data, path)

    def pwrite(self, fd: int, data: bytes, offset: int, path: str = "?") -> None:
        if self._gate("write", path, True):
            if self.partial and len(data) > 1:
                os.pwrite(fd, bytes(data[: len(data) // 2]), offset)
            self._fail("write", path)
        super().pwrite(fd, data, offset, path)

    def truncate(self, fd: int, size: int, path: str = "?") -> None:
        if self._gate("truncate", path, True):
            self._fail("truncate", path)
        super().truncate(fd, size, path)

    def fsync(self, fd: int, path: str = "?") -> None:
        if self._gate("fsync", path, True):
            self._fail("fsync", path)
        super().fsync(fd, path)

    def fdatasync(self, fd: int, path: str = "?") -> None:
        if self._gate("fdatasync", path, True):
            self._fail("fdatasync", path)
        super().fdatasync(fd, path)

    def rename(self, src: str, dst: str) -> None:
        if self._gate("rename", src, True):
            self._fail("rename", f"{src} -> {dst}")
        super().rename(src, dst)

    def mkdir(self, path: str, mode: int = 0o700) -> None:
        if self._gate("mkdir", path, True):
            self._fail("mkdir", path)
        super().mkdir(path, mode)

    def unlink(self, path: str) -> None:
        if self._gate("unlink", path, True):
            self._fail("unlink", path)
        super().unlink(path)

    def rmtree(self, path: str) -> None:
        if self._gate("rmtree", path, True):
            self._fail("rmtree", path)
        super().rmtree(path)

    def link(self, src: str, dst: str) -> None:
        if self._gate("link", src, True):
            self._fail("link", f"{src} -> {dst}")
        super().link(src, dst)

    def fsync_dir(self, path: str) -> None:
        if self._gate("fsync_dir", path, True):
            self._fail("fsync", path)
        super().fsync_dir(path)

    # --- reads ------------------------------------------------------------------------
    def close(self, fd: int) -> None:
        if self._gate("close", "?", False):
            os.close(fd)  # Linux frees the descriptor even when close reports EIO
            self._fail("close", "?")
        super().close(fd)

    def pread(self, fd: int, size: int, offset: int, path: str = "?") -> bytes:
        if self._gate("read", path, False):
            self._fail("read", path)
        return super().pread(fd, size, offset, path)

    def size(self, fd: int, path: str = "?") -> int:
        if self._gate("stat", path, False):
            self._fail("stat", path)
        return super().size(fd, path)

    def stat(self, path: str) -> os.stat_result:
        if self._gate("stat", path, False):
            self._fail("stat", path)
        return super().stat(path)

    def listdir(self, path: str) -> list[str]:
        if self._gate("listdir", path, False):
            self._fail("listdir", path)
        return super().listdir(path)

    def scandir(self, path: str):
        if self._gate("listdir", path, False):
            self._fail("listdir", path)
        return super().scandir(path)
