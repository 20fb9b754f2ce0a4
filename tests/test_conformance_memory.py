"""The conformance suite on the in-memory backend."""

from __future__ import annotations

from agentlog import Store
from conformance import BackendConformance


class TestMemoryBackend(BackendConformance):
    __test__ = True

    def make_store(self, tmp_path, **options):
        return Store.memory(**options)

    def stored_blob_count(self, store, session_id):
        # Nothing public counts a memory backend's blobs; this is the one peek.
        return len(store.backend._sessions[session_id].blobs)

