"""A row lease is kept alive by the writer's own commits, not only by its
renewer thread: a tight loop of commits could keep the renewer waiting for
the connection's lock past a short ``lease_ttl`` (seen at 0.5 s on a
machine saturated by make fuzz), and the writer then lost its lease while
it was plainly alive."""

from __future__ import annotations

import time

from agentlog import Store
from pg_support import needs_pg, pg_url


@needs_pg
def test_commits_keep_a_row_lease_alive_without_its_renewer(pg_schema: str) -> None:
    store = Store(pg_url(pg_schema, lease="row", lease_ttl="0.3"))
    writer = store.create(session_id="s")
    lease = writer.storage._lease  # type: ignore[attr-defined]  # the one peek: stop its renewer
    lease._stop.set()
    lease._renewer.join()
    acknowledged = []
    deadline = time.monotonic() + 1.2  # four times the ttl, with no renewal but the commits'
    while time.monotonic() < deadline:
        acknowledged.append(writer.append("custom", {"n": len(acknowledged)}).id)
        time.sleep(0.05)
    assert lease.lost is None
    time.sleep(0.5)  # then idle past the ttl, renewer stopped: now it lapses, and the writer is told
    taker = Store(pg_url(pg_schema, lease="row", lease_ttl="0.3")).open("s")
    taker.close()
    writer.close()
    with store.open("s", readonly=True) as reader:
        assert [e.id for e in reader.entries()] == acknowledged
    store.close()
