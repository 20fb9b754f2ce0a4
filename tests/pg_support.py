"""PostgreSQL helpers for tests that need raw SQL beside a store, on a
schema of their own (conftest's ``pg_schema`` fixture). Tests marked
``needs_pg`` skip cleanly without AGENTLOG_TEST_PG."""

from __future__ import annotations

import pytest

from conftest import PG_DSN

__all__ = ["needs_pg", "pg_url", "sql"]

needs_pg = pytest.mark.skipif(not PG_DSN, reason="AGENTLOG_TEST_PG is not set: no PostgreSQL to test against")


def sql(statement: str, *args: object) -> list[tuple[object, ...]]:
    """Run ``statement`` on its own autocommit connection; its rows, if any."""
    import psycopg  # only when PostgreSQL is under test: the extra may be absent

    with psycopg.connect(PG_DSN or "", autocommit=True) as conn:
        cur = conn.execute(statement, args)
        return cur.fetchall() if cur.description else []


def pg_url(schema: str, **params: str) -> str:
    """The store URL of ``schema`` on the test server, with backend options."""
    assert PG_DSN
    extra = "".join(f"&{k}={v}" for k, v in params.items())
    return f"{PG_DSN}{'&' if '?' in PG_DSN else '?'}schema={schema}{extra}"
