"""PostgreSQL: a session created with its first events (fork, copy, a
bundle's import, the lazy gate) makes their rows before its transaction
opens. It made them inside, where the server waits idle, and the lease's
guard ends a transaction idle for lease_ttl: a fork of a session holding
a 50 MB tool output (about 30 s of search text) failed with "server
closed the connection unexpectedly"."""

from __future__ import annotations

import time
from typing import Any

import pytest

from agentlog import Store
from conftest import PG_DSN

pytestmark = pytest.mark.skipif(not PG_DSN, reason="needs AGENTLOG_TEST_PG (make test and CI set it)")


def test_a_slow_first_commit_is_made_before_the_transaction(pg_schema: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentlog.backends.postgres import storage

    store = Store(f"{PG_DSN}?schema={pg_schema}&lease_ttl=1")
    with store.create() as source:
        for i in range(3):
            source.append("message", {"content": f"m{i}"}, role="user")
        real = storage.searchable_text

        def slow(kind: str, payload: bytes) -> Any:
            time.sleep(0.5)  # 1.5 s in all: past lease_ttl, were it inside the transaction
            return real(kind, payload)

        monkeypatch.setattr(storage, "searchable_text", slow)
        with source.fork() as forked:
            assert [e.record["content"] for e in forked.transcript()] == ["m0", "m1", "m2"]
    store.close()
