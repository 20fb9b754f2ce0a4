"""The embedded default backend: sessions as directories under a home."""

from __future__ import annotations

import errno
import hashlib
import os
import secrets
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import orjson

from ..._fs import OsFs
from ..._lease import Lease, acquire
from ...errors import (
    AgentlogError,
    CorruptionError,
    InvalidOption,
    SessionExists,
    SessionLocked,
    SessionNotFound,
    StorageError,
    UnknownBackend,
)
from ...event import NIL_ID, check_session_id, is_session_id
from ..base import Backend, Commit, ListingRow, Problem, SessionStats, check_durability
from ..registry import local_path
from .fsck import verify_session
from .index import ENTRY_SIZE, HEADER_SIZE, LEGACY_INDEX_WIDTH, empty_index
from .layout import Layout, chunk_name, parse_chunk_name
from .meta import encode_meta, parse_meta
from .migrate import legacy_meta, migrate_legacy, needs_migration
from .repair import repair_session
from .storage import FileSessionStorage

DEFAULT_CHUNK_SIZE = 64 * 1024 * 1024

__all__ = ["FileBackend"]


class _StagedLayout(Layout):
    """A session's paths while it is built in its ``.new-*`` directory."""

    def __init__(self, home: str, directory: str) -> None:
        super().__init__(home)
        self._directory = directory

    def session_dir(self, session_id: str) -> str:
        return self._directory


class _LeasedStorage(FileSessionStorage):
    """A writer's storage that releases its lease when closed."""

    lease: Lease

    def close(self) -> None:
        try:
            super().close()
        finally:
            self.lease.release()


class FileBackend(Backend):
    """Sessions in ``<home>/sessions/<id>/`` (chunks, blobs, index, HEAD).

    ``fs`` is the I/O layer every file effect goes through; the default
    talks to the OS, and crash or fault tests pass a recording one."""

    def __init__(
        self,
        home: str,
        *,
        durability: str = "full",
        chunk_size: int = DEFAULT_CHUNK_SIZE,
        fs: OsFs | None = None,
    ) -> None:
        check_durability(durability)
        if type(chunk_size) is not int or chunk_size < 1:
            raise InvalidOption(f"chunk_size must be a whole number of bytes above 0, not {chunk_size!r}")
        self.fs = fs or OsFs()
        self.layout = Layout(home)
        self.durability = durability
        self.durable = durability == "full"
        self.chunk_size = chunk_size
        # from_url unquotes: a "?" or "%" in the name survives, and so do bytes
        # that are not UTF-8. The resolved path: the URL is what one process's
        # writers are keyed by, and a home reached through a symlink is the
        # same store (it was refused as "open for writing elsewhere").
        self.url = "file://" + quote(os.fsencode(os.path.realpath(self.layout.home)))
        self._mkdirs()

    @classmethod
    def from_url(cls, url: str, *, durability: str = "full", **options: Any) -> FileBackend:
        """``file:///abs/path``, ``file:relative/path`` or a plain path."""
        path = local_path("file", url)
        if not path:
            raise UnknownBackend(f"{url!r} names no directory")
        return cls(path, durability=durability, **options)

    @property
    def home(self) -> str:
        return self.layout.home

    def _mkdirs(self) -> None:
        """Create the home's directories; in ``full`` mode each new entry is
        synced into its parent, or a power loss could take every session
        with it."""
        for path in (self.layout.home, self.layout.sessions, self.layout.locks):
            if os.path.isdir(path):
                continue
            parent = os.path.dirname(path)
            if not os.path.isdir(parent):
                try:
                    os.makedirs(parent, mode=0o700, exist_ok=True)
                except OSError as exc:
                    raise StorageError("mkdir", parent, exc.errno, exc.strerror or str(exc)) from exc
            try:
                self.fs.mkdir(path)
            except StorageError:
                if not os.path.isdir(path):  # another process may have made it meanwhile
                    raise
            if self.durable:
                self.fs.fsync_dir(parent)

    def lease(self, session_id: str) -> Lease:
        return acquire(self.layout.locks, check_session_id(session_id))

    # --- sessions ----------------------------------------------------------------
    def storage(self, session_id: str, *, readonly: bool) -> FileSessionStorage:
        """A storage object without taking the lease: a writer's caller
        (fsck's repair, migration) must already hold it."""
        return FileSessionStorage(
            self.fs,
            self.layout,
            session_id,
            readonly=readonly,
            durable=self.durable,
            chunk_size=self.chunk_size,
        )

    def create(self, session_id: str, meta: dict[str, Any], initial: Commit | None = None) -> FileSessionStorage:
        check_session_id(session_id)
        lease = self.lease(session_id)
        try:
            if self.fs.exists(self.layout.session_dir(session_id)):
                raise SessionExists(session_id)
            self._build(session_id, meta, initial)
        except BaseException:
            lease.release()
            raise
        return self._leased(session_id, lease)

    def _leased(self, session_id: str, lease: Lease) -> FileSessionStorage:
        try:
            storage = _LeasedStorage(
                self.fs,
                self.layout,
                session_id,
                readonly=False,
                durable=self.durable,
                chunk_size=self.chunk_size,
            )
        except BaseException:
            lease.release()
            raise
        storage.lease = lease
        return storage

    def _build(self, session_id: str, meta: dict[str, Any], initial: Commit | None) -> None:
        """Lay a new session out beside its final name, then rename it in.

        The rename makes creation atomic: after a crash the session is
        there whole, or not at all (a leftover ``.new-*`` is ignored)."""
        fs, durable = self.fs, self.durable
        tmp = os.path.join(self.layout.sessions, f".new-{session_id}-{secrets.token_hex(4)}")
        fs.mkdir(tmp)
        for sub in ("chunks", "blobs"):
            fs.mkdir(os.path.join(tmp, sub))
        for path, data in (
            (os.path.join(tmp, "chunks", chunk_name(0)), b""),
            (os.path.join(tmp, "index.bin"), empty_index(synced=durable)),
            (os.path.join(tmp, "HEAD"), NIL_ID.encode() + b"\n"),
            (os.path.join(tmp, "session.json"), encode_meta(meta)),
        ):
            fd = fs.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
            try:
                if data:
                    fs.write(fd, data, path)
                if durable:
                    fs.fsync(fd, path)
            finally:
                fs.close(fd)
        if initial is not None:
            # Initial events (a fork, the lazy gate) go in before the rename,
            # so the new session appears with them or not at all.
            try:
                staged = FileSessionStorage(
                    fs,
                    _StagedLayout(self.layout.home, tmp),
                    session_id,
                    readonly=False,
                    durable=durable,
                    chunk_size=self.chunk_size,
                )
            except BaseException:
                fs.rmtree(tmp)  # never renamed in: nothing of it was visible
                raise
            try:
                staged.commit(initial).wait()
            except BaseException:
                staged.close()
                fs.rmtree(tmp)
                raise
            staged.close()
        if durable:
            for sub in ("chunks", "blobs", ""):
                fs.fsync_dir(os.path.join(tmp, sub) if sub else tmp)
        try:
            fs.rename(tmp, self.layout.session_dir(session_id))
        except StorageError:
            fs.rmtree(tmp)
            if fs.exists(self.layout.session_dir(session_id)):
                raise SessionExists(session_id) from None
            raise
        if durable:
            fs.fsync_dir(self.layout.sessions)

    def open(self, session_id: str, *, readonly: bool) -> FileSessionStorage:
        check_session_id(session_id)
        directory = self.layout.session_dir(session_id)
        if not os.path.isdir(directory):
            raise SessionNotFound(session_id)
        if needs_migration(self.fs, self.layout, session_id):
            with self.lease(session_id):
                migrate_legacy(self.fs, self.layout, session_id, lambda: self.storage(session_id, readonly=False))
        if readonly:
            return self.storage(session_id, readonly=True)
        return self._leased(session_id, self.lease(session_id))

    def exists(self, session_id: str) -> bool:
        return os.path.isdir(self.layout.session_dir(session_id))

    def session_ids(self) -> Iterator[str]:
        for entry in self.fs.scandir(self.layout.sessions):
            name = entry.name
            # work in progress (.new-*, .del-*), or a name that is nothing of ours
            if not name.startswith(".") and is_session_id(name) and entry.is_dir():
                yield name

    def listing(self) -> Iterator[ListingRow]:
        """The base class's listing, with each session's two paths built once
        from the name just listed (one scan of ``sessions/``, as
        ``session_ids``). A file where a session's directory should be is
        reported, never skipped."""
        sessions = self.layout.sessions + os.sep
        for entry in self.fs.scandir(self.layout.sessions):
            session_id = entry.name
            if session_id.startswith(".") or not is_session_id(session_id):
                continue  # work in progress (.new-*, .del-*), or nothing of ours
            if not entry.is_dir():
                reason = "is not a directory: a session is a directory of its own"
                yield ListingRow(session_id, {}, None, CorruptionError(entry.path, None, reason))
                continue
            where = sessions + session_id + os.sep
            try:
                meta = self._read_meta(session_id, where + "session.json")
                stats = self._stats(session_id, where + "index.bin")
            except SessionNotFound:
                continue  # deleted between listing and reading it: not a session any more
            except AgentlogError as exc:
                yield ListingRow(session_id, {}, None, exc)
            else:
                yield ListingRow(session_id, meta, stats)

    def read_meta(self, session_id: str) -> dict[str, Any]:
        return self._read_meta(session_id, self.layout.meta(session_id))

    def _read_meta(self, session_id: str, path: str) -> dict[str, Any]:
        # Listing calls this for every session: one open in the common case;
        # the rarer layouts are looked for only when session.json is absent.
        try:
            data = self.fs.read_file(path)
        except StorageError as exc:
            if exc.errno != errno.ENOENT:
                raise  # the OS failed (EIO...): say so, not that the file is damaged
            if not self.exists(session_id):
                raise SessionNotFound(session_id) from None
            if needs_migration(self.fs, self.layout, session_id):
                return legacy_meta(self.fs, self.layout, session_id)
            raise CorruptionError(path, None, f"cannot read session.json: {exc.detail}") from None
        return parse_meta(path, data, session_id)

    def stats(self, session_id: str) -> SessionStats:
        """From one stat of the index: its size counts entries, its mtime dates them.

        The index may lag the log after a crash until the session is next
        opened for writing; the count is then a lower bound."""
        return self._stats(session_id, self.layout.index(session_id))

    def _stats(self, session_id: str, index_path: str) -> SessionStats:
        try:
            st = self.fs.stat(index_path)
        except StorageError as exc:
            if exc.errno != errno.ENOENT:
                raise
            try:  # format version 1, not opened by a writer since: its index counts the same
                st = self.fs.stat(self.layout.legacy_index(session_id))
                return SessionStats(st.st_size // LEGACY_INDEX_WIDTH, st.st_mtime_ns)
            except StorageError as exc2:
                if exc2.errno != errno.ENOENT:
                    raise
                if not needs_migration(self.fs, self.layout, session_id):
                    # index.bin is derived and gone (deleted, or lost with a
                    # disk): the session is still whole in its log, and the
                    # next writer rebuilds the index. Dated by the log; the
                    # count is a lower bound, as it is for a lagging index.
                    chunks = self.layout.chunks(session_id)
                    names = [n for n in self.fs.listdir(chunks) if parse_chunk_name(n) is not None]
                    st = self.fs.stat(os.path.join(chunks, max(names)) if names else chunks)
                    return SessionStats(0, st.st_mtime_ns)
            # A legacy layout not yet upgraded: count its lines (until it is).
            path = os.path.join(self.layout.session_dir(session_id), "events.jsonl")
            data = self.fs.read_file(path)
            return SessionStats(max(data.count(b"\n") - 1, 0), self.fs.stat(path).st_mtime_ns)
        return SessionStats(max(st.st_size - HEADER_SIZE, 0) // ENTRY_SIZE, st.st_mtime_ns)

    def delete(self, session_id: str) -> None:
        check_session_id(session_id)
        if not self.exists(session_id):
            raise SessionNotFound(session_id)
        with self.lease(session_id) as lease:
            if lease._count > 1:
                # A writer in this process holds the lease (it is reentrant):
                # deleting its files under it would lose its next acknowledged append.
                raise SessionLocked(session_id, f"pid {os.getpid()} (this process)")
            doomed = os.path.join(self.layout.sessions, f".del-{session_id}-{secrets.token_hex(4)}")
            self.fs.rename(self.layout.session_dir(session_id), doomed)
            if self.durable:
                self.fs.fsync_dir(self.layout.sessions)
            self.fs.rmtree(doomed)

    def _breadcrumb_path(self, working_dir: str) -> str:
        key = hashlib.sha256(os.fsencode(os.path.abspath(working_dir))).hexdigest()[:32]
        return os.path.join(self.layout.breadcrumbs, f"{key}.json")

    def put_breadcrumb(self, working_dir: str, session_id: str) -> None:
        """Remember the latest session of a working directory (atomic replace)."""
        check_session_id(session_id)
        if not os.path.isdir(self.layout.breadcrumbs):
            self.fs.mkdir(self.layout.breadcrumbs)
            if self.durable:
                self.fs.fsync_dir(self.layout.home)
        data = orjson.dumps({"working_dir": os.path.abspath(working_dir), "session_id": session_id})
        path = self._breadcrumb_path(working_dir)
        # No lease guards a breadcrumb: a unique temp name keeps two
        # processes' replacements from writing into one temp file.
        self.fs.write_atomic(path, data, durable=self.durable, tmp=f"{path}.{os.getpid()}.{secrets.token_hex(4)}.tmp")

    def get_breadcrumb(self, working_dir: str) -> str | None:
        path = self._breadcrumb_path(working_dir)
        if not os.path.exists(path):
            return None
        try:
            crumb = orjson.loads(self.fs.read_file(path))
            session_id = check_session_id(crumb["session_id"])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise CorruptionError(path, None, f"unreadable breadcrumb: {exc}") from None
        if crumb.get("working_dir") != os.path.abspath(working_dir):
            return None  # a hash collision on the key: not this directory's
        return session_id

    def verify(self, session_id: str) -> list[Problem]:
        if needs_migration(self.fs, self.layout, check_session_id(session_id)):
            return [
                Problem(
                    session_id,
                    self.layout.session_dir(session_id),
                    None,
                    "legacy single-file layout; the first open upgrades it",
                    "warning",
                )
            ]
        return verify_session(self.fs, self.layout, session_id)

    def repair(self, session_id: str) -> list[str]:
        check_session_id(session_id)
        with self.lease(session_id):
            return repair_session(
                self.fs,
                self.layout,
                session_id,
                self.chunk_size,
                lambda: self.storage(session_id, readonly=False),
            )
