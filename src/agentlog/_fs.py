"""The one thin layer through which the file backend touches the disk.

Every file-system effect (create, write, truncate, sync, rename, mkdir,
unlink, directory sync) goes through an ``OsFs`` method. That gives two
things: OS errors become ``StorageError`` in exactly one place, and a test
can substitute a recording or fault-injecting layer to enumerate crash
states and I/O failures without touching backend code.
"""

from __future__ import annotations

import errno as _errno
import os
from collections.abc import Iterator

from .errors import StorageError

__all__ = ["OsFs"]


def _wrap(op: str, path: str, exc: OSError) -> StorageError:
    return StorageError(op, path, exc.errno, exc.strerror or str(exc))


class OsFs:
    """Direct POSIX calls. Subclass to record or to inject faults."""

    # --- effects (recorded by crash simulators) -------------------------
    def open(self, path: str, flags: int, mode: int = 0o600) -> int:
        try:
            return os.open(path, flags | os.O_CLOEXEC, mode)
        except OSError as exc:
            raise _wrap("open", path, exc) from exc

    def write(self, fd: int, data: bytes, path: str = "?") -> None:
        """Write all of ``data`` (short writes are retried)."""
        try:
            n = os.write(fd, data)
            if n == len(data):
                return  # the common case, on every append: one call, no view
            if n <= 0:  # pragma: no cover - a zero-length write means no progress
                raise OSError(_errno.EIO, "write made no progress")
            view = memoryview(data)[n:]
            while view:
                n = os.write(fd, view)
                if n <= 0:  # pragma: no cover - a zero-length write means no progress
                    raise OSError(_errno.EIO, "write made no progress")
                view = view[n:]
        except OSError as exc:
            raise _wrap("write", path, exc) from exc

    def pwrite(self, fd: int, data: bytes, offset: int, path: str = "?") -> None:
        """Write all of ``data`` at ``offset`` (the file position is unchanged)."""
        try:
            n = os.pwrite(fd, data, offset)
            if n == len(data):
                return  # the common case, an index entry on every append: one call, no view
            if n <= 0:  # pragma: no cover - a zero-length write means no progress
                raise OSError(_errno.EIO, "write made no progress")
            view = memoryview(data)[n:]
            offset += n
            while view:
                n = os.pwrite(fd, view, offset)
                if n <= 0:  # pragma: no cover - a zero-length write means no progress
                    raise OSError(_errno.EIO, "write made no progress")
                view = view[n:]
                offset += n
        except OSError as exc:
            raise _wrap("write", path, exc) from exc

    def truncate(self, fd: int, size: int, path: str = "?") -> None:
        try:
            os.ftruncate(fd, size)
        except OSError as exc:
            raise _wrap("truncate", path, exc) from exc

    def fsync(self, fd: int, path: str = "?") -> None:
        try:
            os.fsync(fd)
        except OSError as exc:
            raise _wrap("fsync", path, exc) from exc

    def fdatasync(self, fd: int, path: str = "?") -> None:
        try:
            os.fdatasync(fd)
        except OSError as exc:
            raise _wrap("fdatasync", path, exc) from exc

    def rename(self, src: str, dst: str) -> None:
        try:
            os.rename(src, dst)
        except OSError as exc:
            raise _wrap("rename", f"{src} -> {dst}", exc) from exc

    def mkdir(self, path: str, mode: int = 0o700) -> None:
        try:
            os.mkdir(path, mode)
        except OSError as exc:
            raise _wrap("mkdir", path, exc) from exc

    def unlink(self, path: str) -> None:
        try:
            os.unlink(path)
        except OSError as exc:
            raise _wrap("unlink", path, exc) from exc

    def rmtree(self, path: str) -> None:
        import shutil

        try:
            shutil.rmtree(path)
        except OSError as exc:
            raise _wrap("rmtree", path, exc) from exc

    def link(self, src: str, dst: str) -> None:
        try:
            os.link(src, dst)
        except OSError as exc:
            raise _wrap("link", f"{src} -> {dst}", exc) from exc

    def set_mtime(self, path: str, mtime_ns: int) -> None:
        """Set a file's modification time (its access time too)."""
        try:
            os.utime(path, ns=(mtime_ns, mtime_ns))
        except OSError as exc:
            raise _wrap("utime", path, exc) from exc

    def fsync_dir(self, path: str) -> None:
        """Make a directory's entries (creates, renames) durable."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise _wrap("open", path, exc) from exc
        try:
            os.fsync(fd)
        except OSError as exc:
            raise _wrap("fsync", path, exc) from exc
        finally:
            os.close(fd)

    # --- reads and bookkeeping (no effect on durable state) -------------
    def close(self, fd: int) -> None:
        try:
            os.close(fd)
        except OSError as exc:
            raise _wrap("close", "?", exc) from exc

    def pread(self, fd: int, size: int, offset: int, path: str = "?") -> bytes:
        try:
            return os.pread(fd, size, offset)
        except OSError as exc:
            raise _wrap("read", path, exc) from exc

    def read_file(self, path: str) -> bytes:
        fd = self.open(path, os.O_RDONLY)
        try:
            chunks: list[bytes] = []
            offset = 0
            # Small files (session.json, HEAD: listing reads 10,000) in one
            # read of at most 64 KiB: a regular file reads short only at its
            # end, so no second read finds it. (A first read of 1 MiB made
            # every call map and unmap a fresh 1 MiB buffer: 6 us a file.)
            size = 1 << 16
            while True:
                data = self.pread(fd, size, offset, path)
                chunks.append(data)
                if len(data) < size:
                    return b"".join(chunks)
                offset += len(data)
                size = 1 << 20
        finally:
            os.close(fd)

    def size(self, fd: int, path: str = "?") -> int:
        try:
            return os.fstat(fd).st_size
        except OSError as exc:
            raise _wrap("stat", path, exc) from exc

    def listdir(self, path: str) -> list[str]:
        try:
            return os.listdir(path)
        except OSError as exc:
            raise _wrap("listdir", path, exc) from exc

    def scandir(self, path: str) -> Iterator[os.DirEntry[str]]:
        try:
            with os.scandir(path) as it:
                yield from it
        except OSError as exc:
            raise _wrap("listdir", path, exc) from exc

    def exists(self, path: str) -> bool:
        return os.path.lexists(path)

    def stat(self, path: str) -> os.stat_result:
        try:
            return os.stat(path)
        except OSError as exc:
            raise _wrap("stat", path, exc) from exc

    # --- composites ------------------------------------------------------
    def write_atomic(self, path: str, data: bytes, *, durable: bool, tmp: str | None = None) -> None:
        """Replace ``path`` with ``data``: temp file, (sync), rename, (dir sync).

        A reader sees the old bytes or the new ones, never a mix; after a
        crash the same holds. ``durable`` adds the syncs that make the new
        bytes survive a power loss once this returns."""
        directory = os.path.dirname(path)
        tmp = tmp or f"{path}.tmp"
        fd = self.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        try:
            try:
                self.write(fd, data, tmp)
                if durable:
                    self.fsync(fd, tmp)
            finally:
                self.close(fd)
            self.rename(tmp, path)
        except StorageError as exc:
            # Nothing names the temporary, so nothing would ever remove it:
            # on a full disk it would keep holding the bytes written. The
            # caller gets the first error; a failed removal is noted on it.
            try:
                self.unlink(tmp)
            except StorageError as again:
                exc.add_note(f"the temporary {tmp} was left behind: {again}")
            raise
        if durable:
            self.fsync_dir(directory)
