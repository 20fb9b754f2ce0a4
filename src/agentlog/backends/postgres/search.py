"""search() through PostgreSQL's own full-text index (``tsvector`` + GIN).

The same call, hit type and query language as agentlog's SQLite FTS5 index
(``agentlog.search.query``): the query is parsed there, with FTS5's
meaning (words, ``"a phrase"``, ``prefix*``, ``OR``, ``a NOT b``, ``AND``),
and written as a ``to_tsquery`` expression, so no query reads one way on
one backend and another way here. Words are split as the SQLite index
splits them: the indexed text has its ASCII punctuation turned into
spaces (schema migration 0005), so ``cache_manager_v1`` in a path is
three words on both. Snippets come from ``agentlog.search.snippet``, as on
the other backends. Every event of every branch is searched, inline
records and blobs alike, with no derived file to keep in step: the index
is part of each commit.
"""

from __future__ import annotations

from typing import Any

from ...search.query import Node, highlight_words, parse_query
from ...search.snippet import make_snippet
from ..base import SearchHit

__all__ = ["search_sql", "to_hits", "to_tsquery"]


def _lexeme(word: str) -> str:
    # A word is letters and digits only (``parse_query``), so quoting it
    # needs no escapes; doubling a quote keeps that true if it ever changes.
    return "'" + word.replace("'", "''") + "'"


def to_tsquery(query: str) -> str:
    """The ``to_tsquery`` text of ``query`` (SearchError as ``to_match``)."""

    def write(node: Node) -> str:
        if len(node) == 2:  # a term: its words in sequence, the last one perhaps a prefix
            words, prefix = node
            text = " <-> ".join(_lexeme(w) for w in words)
            return f"({text}:*)" if prefix else f"({text})"
        operator, left, right = node
        if operator == "NOT":
            return f"({write(left)} & !{write(right)})"
        return f"({write(left)} {'|' if operator == 'OR' else '&'} {write(right)})"

    return write(parse_query(query))


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
    argument = to_tsquery(query)
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
        # An imported session's directory is its source_cwd (as the SQLite index reads it).
        directory = "coalesce(s.meta->>'working_dir', s.meta->>'source_cwd')"
        where.append(f"({directory} = %(cwd)s OR starts_with({directory}, %(below)s))")
        args["cwd"] = cwd.rstrip("/") or "/"
        args["below"] = args["cwd"].rstrip("/") + "/"
    text = "coalesce(e.search_text, b.search_text, '')"  # the string values search indexed
    sql = f"""
        SELECT e.session_id, e.id::text, e.kind, e.role, e.ts, {text},
               ts_rank(coalesce(e.search, b.search), q.q)
        FROM to_tsquery('simple', %(query)s) AS q(q), events e
        JOIN sessions s ON s.id = e.session_id
        LEFT JOIN blobs b ON b.digest = e.digest
        WHERE {" AND ".join(where)}
        ORDER BY 7 DESC, e.id DESC LIMIT %(limit)s"""
    return sql, args


def to_hits(rows: list[tuple[Any, ...]], query: str) -> list[SearchHit]:
    words = highlight_words(query)
    hits = []
    for session_id, event_id, kind, role, ts, text, rank in rows:
        snippet, spans = make_snippet(str(text), words)
        hits.append(SearchHit(str(session_id), event_id, kind, role, ts, snippet, spans, -float(rank)))
    return hits
