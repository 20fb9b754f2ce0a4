"""Content-addressed payloads: blobs/<sha256 hex>, written before the event."""

from __future__ import annotations

import errno
import os
import secrets

from ..._fs import OsFs
from ...errors import BlobIntegrityError, CorruptionError, StorageError
from ...event import digest_of

__all__ = ["LOST", "BlobStore"]

#: Suffix of the note ``fsck --repair`` leaves for a blob no file held: the
#: payload is gone and nothing brings it back, and the note says so from then
#: on (as ``.quarantine`` does for a blob whose bytes were damaged).
LOST = ".lost"


def _hex(digest: str, where: str) -> str:
    if not isinstance(digest, str):  # a checksum-valid record can still carry a wrong type
        raise CorruptionError(where, None, f"malformed digest {str(digest)[:80]!r}")
    algo, _, hexpart = digest.partition(":")
    if algo != "sha256" or len(hexpart) != 64 or any(c not in "0123456789abcdef" for c in hexpart):
        raise CorruptionError(where, None, f"malformed digest {digest[:80]!r}")
    return hexpart


class BlobStore:
    def __init__(self, fs: OsFs, directory: str, *, durable: bool) -> None:
        self.fs = fs
        self.dir = directory
        self.durable = durable
        # True while a blob present here may not have a durable directory
        # entry: one renamed in whose directory sync failed (a retry finds the
        # file and would skip the sync), or one a killed process left before
        # syncing. Until a directory sync succeeds, every commit naming a
        # blob syncs the directory; so it starts True.
        self.unsynced = True

    def path(self, digest: str) -> str:
        return os.path.join(self.dir, _hex(digest, self.dir))

    def put(self, digest: str, data: bytes) -> bool:
        """Store ``data`` under ``digest`` unless present; True if written.

        The caller syncs the directory once for all new blobs of a commit
        (``sync_dir``) before the event that names them is written."""
        final = self.path(digest)
        if self.fs.exists(final):
            return self.unsynced
        tmp = os.path.join(self.dir, f".tmp-{os.getpid()}-{secrets.token_hex(6)}")
        fd = self.fs.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
        try:
            self.fs.write(fd, data, tmp)
            if self.durable:
                self.fs.fsync(fd, tmp)
        except StorageError:
            self.fs.close(fd)
            self.fs.unlink(tmp)
            raise
        self.fs.close(fd)
        self.fs.rename(tmp, final)
        self.unsynced = True
        return True

    def sync_dir(self) -> None:
        if self.durable:
            self.fs.fsync_dir(self.dir)
        self.unsynced = False

    def get(self, digest: str) -> bytes:
        path = self.path(digest)
        try:
            data = self.fs.read_file(path)
        except StorageError as exc:
            # Only a blob that is not there is missing; a read the OS refused
            # (permissions, EIO) is its failure to say, never damage.
            if exc.errno == errno.ENOENT:
                raise BlobIntegrityError(path, None, f"blob {digest} is missing") from None
            raise
        actual = digest_of(data)
        if actual != digest:
            raise BlobIntegrityError(path, None, f"content hashes to {actual}, not {digest}")
        return data

    def clean_temporaries(self) -> list[str]:
        removed = []
        for name in self.fs.listdir(self.dir):
            if name.startswith(".tmp-"):
                self.fs.unlink(os.path.join(self.dir, name))
                removed.append(name)
        return removed
