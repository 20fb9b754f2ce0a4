"""LangGraph ``BaseCheckpointSaver`` on agentlog timelines.

``AgentlogSaver(store=None)``: a thread is one agentlog session (id
``lg--<thread_id>``, or ``lg--h--<digest>`` for a thread id that is not a
valid session id); every namespace of the thread lives in it, so
``delete_thread`` and ``copy_thread`` act on the whole thread at once.

The session holds three kinds of events:

- ``lg.checkpoint``: one per checkpoint; its parent is the event of its
  parent checkpoint (a namespace's first checkpoint is a root), so
  ``agentlog tree`` shows the graph's history, forks included. Its record
  holds the checkpoint without its channel values, the metadata, and for
  each channel a reference ``[event id, sha256]`` to the value's event,
  or for a list its elements' events, as a delta on the parent's list
  (``_lg_refs``).
- ``lg.value``: one channel value, serialized with the saver's ``serde``.
  A value is written only when its channel's version changed *and* its
  bytes are not already stored in the thread (by sha256), so a value that
  does not change between checkpoints is stored once; large values go to
  agentlog's content-addressed blobs.
- ``lg.writes``: the pending writes of one ``put_writes`` call.

Values and writes hang on a side chain (its own root), so checkpoints keep
their parent links. A ``put`` appends the values first and the checkpoint
after them: a crash in between leaves only unreferenced values.

Opening a thread reads its checkpoint and writes records (not the values)
to build an in-memory index (``_lg_thread``); later calls read only what
they return. ``prune`` and ``delete_for_runs`` rewrite the thread into a
new session (``_lg_retention``). Requires the ``langgraph`` extra.

This module is the saver itself: its lock, and each LangGraph call mapped
onto the parts it uses: ``_lg_open`` opens a thread's session,
``_lg_read`` makes checkpoint tuples of the index, ``_lg_write`` appends
values, writes and checkpoints.
"""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import AbstractContextManager
from types import TracebackType
from typing import Any

try:
    from langchain_core.runnables import RunnableConfig
    from langgraph.checkpoint.base import (
        WRITES_IDX_MAP,
        BaseCheckpointSaver,
        ChannelVersions,
        Checkpoint,
        CheckpointMetadata,
        CheckpointTuple,
        get_checkpoint_id,
        get_checkpoint_metadata,
    )
    from langgraph.checkpoint.serde.base import SerializerProtocol
except ModuleNotFoundError as exc:  # the extra is not installed: say which
    from .._extras import extra_missing

    raise extra_missing(exc, extra="langgraph", module=__name__) from exc

from .. import InvalidOption, Store
from ._lg_open import FRAMEWORK, close_thread, open_reader, open_writer, stored_thread_ids, thread_session_id
from ._lg_read import checkpoint_tuple, list_thread
from ._lg_retention import Keep, rewrite
from ._lg_thread import WRITES, Thread, index_writes, pack, unpack
from ._lg_write import append_checkpoint, append_side, store_values
from ._locks import release_when_collected, shared_lock
from ._open_writers import OpenWriters

__all__ = ["AgentlogSaver"]

# ``list`` is a method name on the saver, so annotations inside the class use this.
Tuples = list[CheckpointTuple]


def _keep_latest(latest: dict[str, str]) -> Keep:
    """Keep each namespace's latest checkpoint (``latest``: ns -> id)."""
    return lambda record: latest.get(record["ns"]) == record["id"]


def _keep_unless(doomed: set[tuple[str, str]]) -> Keep:
    """Keep every checkpoint but the (ns, id) pairs in ``doomed``."""
    return lambda record: (record["ns"], record["id"]) not in doomed


#: Every saver of this process: deleting or rewriting a thread makes each of
#: them over the same store let go of it first (``_let_go``).
_SAVERS: weakref.WeakSet[AgentlogSaver] = weakref.WeakSet()


class AgentlogSaver(BaseCheckpointSaver[int]):
    """Checkpoints of LangGraph threads, kept as agentlog sessions.

    Each thread it writes stays open, holding agentlog's writer lease, until
    ``close()`` (at most ``max_open`` at once; past that the least recently
    used is closed and reopened on its next write); a saver in another
    process gets ``SessionLocked`` for it. Reading takes no lease. Safe to share
    between threads of one process (one lock, shared by every saver over the
    same store, each of which sees the others' checkpoints), and the async
    methods run the blocking store calls in a worker thread.
    """

    def __init__(
        self, store: Store | None = None, *, serde: SerializerProtocol | None = None, max_open: int = 256
    ) -> None:
        super().__init__(serde=serde)
        self.store = store if store is not None else Store()
        # Threads held open for writing; past ``max_open`` the least recently
        # used is closed (releasing its lease) and reopened on its next write.
        self._threads: OpenWriters[Thread] = OpenWriters(max_open, close_thread)
        release_when_collected(self, self._threads.close_all)  # dropped without close()
        # Shared with every saver over this store in the process: see _locks.
        self._lock = shared_lock(self.store, FRAMEWORK)
        _SAVERS.add(self)

    # --- lifecycle ------------------------------------------------------------------
    def close(self) -> None:
        """Close every open thread, releasing their writer leases."""
        with self._lock:
            self._threads.close_all()

    def __enter__(self) -> AgentlogSaver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    async def __aenter__(self) -> AgentlogSaver:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # --- threads ----------------------------------------------------------------------
    @staticmethod
    def session_id(thread_id: str) -> str:
        """The agentlog session id of a LangGraph thread."""
        return thread_session_id(thread_id)

    def _writer(self, thread_id: str) -> Thread:
        """The thread open for writing (created if new); kept open until ``close()``."""
        return open_writer(self.store, self._threads, thread_id)

    def _reader(self, thread_id: str) -> AbstractContextManager[Thread | None]:
        """The thread to read: ours if this saver writes it, else a read-only
        handle for this call only. None if the thread is absent."""
        return open_reader(self.store, self._threads, thread_id)

    # --- reading ----------------------------------------------------------------------
    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """The checkpoint ``config`` names, or the namespace's latest; None if absent."""
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        ns = configurable.get("checkpoint_ns", "")
        with self._lock, self._reader(thread_id) as thread:
            if thread is None:
                return None
            in_ns = thread.checkpoints.get(ns, {})
            checkpoint_id = get_checkpoint_id(config) or max(in_ns, default=None)
            if checkpoint_id is None or checkpoint_id not in in_ns:
                return None
            return checkpoint_tuple(self.serde, thread_id, ns, thread, in_ns[checkpoint_id])

    def list(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> Iterator[CheckpointTuple]:
        """Checkpoints newest first, by thread, namespace, metadata and ``before``."""
        with self._lock:
            results = self._list(config, filter, before, limit)
        yield from results

    def _list(
        self,
        config: RunnableConfig | None,
        filter: dict[str, Any] | None,
        before: RunnableConfig | None,
        limit: int | None,
    ) -> Tuples:
        if config is not None:
            thread_ids = [str(config["configurable"]["thread_id"])]
            want_ns = config["configurable"].get("checkpoint_ns")
            want_id = get_checkpoint_id(config)
        else:
            thread_ids, want_ns, want_id = stored_thread_ids(self.store), None, None
        before_id = get_checkpoint_id(before) if before else None
        out: Tuples = []
        for thread_id in thread_ids:
            with self._reader(thread_id) as thread:
                if thread is None:
                    continue
                if not list_thread(self.serde, thread_id, thread, out, want_ns, want_id, before_id, filter, limit):
                    return out
        return out

    # --- writing ----------------------------------------------------------------------
    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        """Store a checkpoint: changed values first (deduplicated), then the checkpoint."""
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        ns = configurable.get("checkpoint_ns", "")
        parent_id = configurable.get("checkpoint_id")
        skeleton = {k: v for k, v in checkpoint.items() if k != "channel_values"}
        values = checkpoint["channel_values"]
        with self._lock:
            thread = self._writer(thread_id)
            parent = thread.checkpoints.get(ns, {}).get(parent_id) if parent_id else None
            inherited = parent.record["values"] if parent is not None else {}
            refs, first_stored = store_values(
                self.serde,
                thread,
                values,
                checkpoint["channel_versions"],
                new_versions,
                ns=ns,
                parent_id=parent_id,
                inherited=inherited,
            )
            record = {
                "ns": ns,
                "id": checkpoint["id"],
                "parent": parent_id,
                "checkpoint": pack(self.serde.dumps_typed(skeleton)),
                "metadata": pack(self.serde.dumps_typed(get_checkpoint_metadata(config, metadata))),
                "values": refs,
                "new": {d: thread.digests[d] for d in first_stored},  # digests first stored here
            }
            append_checkpoint(thread, parent, record)
        return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ns, "checkpoint_id": checkpoint["id"]}}

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        """Store a task's pending writes for a checkpoint (idempotent per task and index)."""
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        ns = configurable.get("checkpoint_ns", "")
        checkpoint_id = configurable["checkpoint_id"]
        with self._lock:
            thread = self._writer(thread_id)
            existing = thread.writes.get((ns, checkpoint_id), {})
            rows = []
            for i, (channel, value) in enumerate(writes):
                idx = WRITES_IDX_MAP.get(channel, i)
                if idx >= 0 and (task_id, idx) in existing:
                    continue  # a retried task: its first writes stand (as in LangGraph's savers)
                rows.append([task_id, idx, channel, pack(self.serde.dumps_typed(value)), task_path])
            if not rows:
                return
            record = {"ns": ns, "checkpoint": checkpoint_id, "writes": rows}
            (event_id,) = append_side(thread, [(WRITES, record, None)])
            index_writes(thread, event_id, record)

    def delete_thread(self, thread_id: str) -> None:
        """Delete the thread's session: every namespace, checkpoint and write."""
        with self._lock:
            self._let_go(str(thread_id))
            sid = self.session_id(str(thread_id))
            if self.store.exists(sid):
                self.store.delete(sid)

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Copy a thread whole (every namespace, value and write): a fork with
        the same event ids, blobs shared with the source where the backend can."""
        if self.session_id(str(source_thread_id)) == self.session_id(str(target_thread_id)):
            return  # a thread copied onto itself is itself (deleting the target first lost it)
        with self._lock, self._reader(source_thread_id) as source:
            if source is None:
                return
            self.delete_thread(target_thread_id)
            target = self._writer(target_thread_id)
            session = source.session
            events = [session.event(entry.id) for entry in session.entries()]
            target.session.import_events(events, source=session)
            # The copied records are indexed by opening the copy afresh.
            close_thread(target)
            self._threads.pop(str(target_thread_id))
            self._writer(target_thread_id)

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """Retention: ``"keep_latest"`` keeps each namespace's latest checkpoint
        (with its values and pending writes), ``"delete"`` deletes the threads.

        The thread is rewritten into a new session (see ``_lg_retention``): the
        dropped history is gone, as LangGraph means by pruning. Not
        ``DeltaChannel``-aware (beta in LangGraph): a thread whose graph uses
        ``DeltaChannel`` must not be pruned with ``"keep_latest"``."""
        if strategy not in ("keep_latest", "delete"):
            raise InvalidOption(f"unknown prune strategy {strategy!r}: use 'keep_latest' or 'delete'")
        with self._lock:
            for thread_id in thread_ids:
                if strategy == "delete":
                    self.delete_thread(thread_id)
                    continue
                if not self.store.exists(self.session_id(str(thread_id))):
                    continue
                thread = self._writer(thread_id)
                latest = {ns: max(in_ns) for ns, in_ns in thread.checkpoints.items() if in_ns}
                self._rewrite(str(thread_id), thread, _keep_latest(latest))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) made by these runs, in every thread."""
        runs = {str(r) for r in run_ids}
        if not runs:
            return
        with self._lock:
            for thread_id in stored_thread_ids(self.store):
                thread = self._writer(thread_id)
                doomed = {
                    (ns, cid)
                    for ns, in_ns in thread.checkpoints.items()
                    for cid, stored in in_ns.items()
                    if self.serde.loads_typed(unpack(stored.record["metadata"])).get("run_id") in runs
                }
                if doomed:
                    self._rewrite(thread_id, thread, _keep_unless(doomed))

    def _rewrite(self, thread_id: str, thread: Thread, keep: Keep) -> None:
        self._threads.pop(thread_id)
        self._let_go(thread_id, keep=thread)
        rewrite(self.store, thread.session, thread_id, keep)

    def _let_go(self, thread_id: str, keep: Thread | None = None) -> None:
        """Every saver over this store in the process closes the thread (but
        ``keep``, the handle the caller goes on with), under the shared lock
        the caller holds: one holding it open for writing made a delete or a
        rewrite fail with SessionLocked against this very process. Each
        reads the thread afresh on its next call, as after another process's
        write."""
        for saver in [s for s in list(_SAVERS) if s.store.url == self.store.url]:
            held = saver._threads.pop(thread_id)
            if held is not None and held is not keep:
                close_thread(held)

    def get_next_version(self, current: int | None, channel: None = None) -> int:
        return 1 if current is None else int(current) + 1

    # --- async twins: the same calls, in a worker thread --------------------------------------
    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        def run() -> Tuples:
            with self._lock:
                return self._list(config, filter, before, limit)

        for item in await asyncio.to_thread(run):
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)
