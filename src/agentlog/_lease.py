"""The writer's lease: one advisory lock file per session, held for a lifetime.

flock(2) locks belong to an open file description, so the kernel drops the
lease when the process dies, however it dies. Lock files live in
``<home>/locks/`` and are never deleted: deleting one would let two
processes lock two different files under the same name.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
import threading
import time

from .errors import SessionLocked, StorageError

__all__ = ["Lease", "acquire", "writer_is_live"]

_registry_lock = threading.Lock()
_held: dict[str, Lease] = {}


class Lease:
    def __init__(self, path: str, session_id: str, fd: int) -> None:
        self.path = path
        self.session_id = session_id
        self._fd = fd
        self._count = 1

    def release(self) -> None:
        with _registry_lock:
            if self._count <= 0:
                return  # already released: never close a descriptor twice
            self._count -= 1
            if self._count > 0:
                return
            _held.pop(self.path, None)
            try:
                # Empty the note while still holding the lock, so a process
                # that loses the next race never names this one (gone).
                os.ftruncate(self._fd, 0)
            except OSError:
                pass  # the note is informational; releasing the lock is what matters
            # Closing the descriptor releases the flock; the file stays.
            os.close(self._fd)

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _holder(path: str) -> str | None:
    # The holder empties the file, then writes its note: a look in between
    # finds it empty, so look again briefly rather than name nobody.
    for _ in range(20):
        try:
            with open(path, "rb") as f:
                text = f.read(256).decode("utf-8", "replace").strip()
        except OSError:
            return None  # who holds it is a courtesy; the lock itself was decided
        if text:
            return text
        time.sleep(0.001)
    return None


def acquire(lock_dir: str, session_id: str) -> Lease:
    """Take the writer's lease at once or raise SessionLocked.

    A second acquisition in the same process reuses the lease (nested
    management calls under a running writer)."""
    path = os.path.join(lock_dir, f"{session_id}.lock")
    with _registry_lock:
        lease = _held.get(path)
        if lease is not None:
            lease._count += 1
            return lease
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise StorageError("open", path, exc.errno, exc.strerror or str(exc)) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise SessionLocked(session_id, _holder(path)) from None
            raise StorageError("lock", path, exc.errno, exc.strerror or str(exc)) from exc
        since = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        note = f"pid {os.getpid()} on {socket.gethostname()} since {since}\n"
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, note.encode(), 0)
        except OSError:
            pass  # the holder note is informational; the flock is what excludes
        lease = Lease(path, session_id, fd)
        _held[path] = lease
        return lease


def writer_is_live(lock_dir: str, session_id: str) -> bool | None:
    """Whether a writer holds the session's lease right now, found without
    touching the lock (taking it, even for a moment, would refuse a writer
    opening at that moment): this process's own leases, then the kernel's
    table of flock locks. None where that table cannot be read (not Linux)."""
    path = os.path.join(lock_dir, f"{session_id}.lock")
    with _registry_lock:
        if path in _held:
            return True
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False  # never written: its lock file is made by the first writer
    except OSError:
        return None
    # /proc/locks: "1: FLOCK  ADVISORY  WRITE 4242 fd:01:131090 0 EOF"
    # (major and minor in hex, the inode in decimal).
    wanted = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as f:
            table = f.read()
    except OSError:
        return None
    for line in table.splitlines():
        fields = line.split()
        if "FLOCK" in fields and wanted in fields and "->" not in fields:
            return True
    return False
