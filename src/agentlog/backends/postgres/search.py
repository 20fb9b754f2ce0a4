"""search() through PostgreSQL's own full-text index (``tsvector`` + GIN).

The same call and hit type as agentlog's SQLite FTS5 index: words (ANDed),
``"a phrase"``, OR, ``-word`` (websearch syntax), and ``prefix*``. Every
event of every branch is searched, inline records and blobs alike, with no
derived file to keep in step: the index is part of each commit.
"""

from __future__ import annotations

import re
from typing import Any

from ..base import SearchHit

__all__ = ["search_sql", "to_hits"]

_START, _STOP = "\x02", "\x03"  # highlight markers that no record text contains
_PREFIX = re.compile(r"^[\w-]+\*$")


def _tsquery(query: str) -> tuple[str, str]:
    """(SQL function, argument): prefix words need to_tsquery's ``:*``."""
    words = query.split()
    if words and any(_PREFIX.match(w) for w in words) and all(re.match(r"^[\w*-]+$", w) for w in words):
        terms = [w[:-1] + ":*" if w.endswith("*") else w for w in words]
        return "to_tsquery", " & ".join(re.sub(r"[^\w:*]", "", t) for t in terms)
    return "websearch_to_tsquery", query


def search_sql(
    query: str,
    *,
    session: str | None,
    kind: str | None,
    role: str | None,
    since: str | None,
    cwd: str | None,
    limit: int,
) -> tuple[str, dict[str, Any]]:
    function, argument = _tsquery(query)
    where = ["(e.search @@ q.q OR b.search @@ q.q)"]
    args: dict[str, Any] = {"query": argument, "limit": limit}
    for column, key, value in (
        ("e.session_id", "session", session),
        ("e.kind", "kind", kind),
        ("e.role", "role", role),
    ):
        if value is not None:
            where.append(f"{column} = %({key})s")
            args[key] = value
    if since is not None:
        where.append("e.ts >= %(since)s")
        args["since"] = since
    if cwd is not None:
        where.append("(s.meta->>'working_dir' = %(cwd)s OR starts_with(s.meta->>'working_dir', %(below)s))")
        args["cwd"] = cwd.rstrip("/") or "/"
        args["below"] = args["cwd"].rstrip("/") + "/"
    text = "coalesce(e.search_text, b.search_text, '')"  # the string values search indexed
    sql = f"""
        SELECT e.session_id, e.id::text, e.kind, e.role, e.ts,
               ts_headline('simple', {text}, q.q,
                           'StartSel={_START}, StopSel={_STOP}, MaxWords=24, MinWords=8, MaxFragments=1'),
               ts_rank(coalesce(e.search, b.search), q.q)
        FROM {function}('simple', %(query)s) AS q(q), events e
        JOIN sessions s ON s.id = e.session_id
        LEFT JOIN blobs b ON b.digest = e.digest
        WHERE {" AND ".join(where)}
        ORDER BY 7 DESC, e.id DESC LIMIT %(limit)s"""
    return sql, args


def _highlighted(text: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    length = 0
    for i, piece in enumerate(re.split(f"[{_START}{_STOP}]", text)):
        if i % 2 == 1:
            spans.append((length, length + len(piece)))
        out.append(piece)
        length += len(piece)
    return " ".join("".join(out).split()) if not spans else "".join(out), tuple(spans)


def to_hits(rows: list[tuple[Any, ...]]) -> list[SearchHit]:
    hits = []
    for session_id, event_id, kind, role, ts, headline, rank in rows:
        snippet, spans = _highlighted(str(headline))
        hits.append(SearchHit(str(session_id), event_id, kind, role, ts, snippet, spans, -float(rank)))
    return hits
