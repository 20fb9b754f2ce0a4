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
is part of each commit. A text too long for one ``tsvector`` is held in
parts (``textparts``) and judged term by term over all of them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from ...search.diacritics import strip_diacritics
from ...search.index import SKIPPED_KINDS
from ...search.query import Node, highlight_words, parse_query
from ...search.snippet import make_snippet
from ..base import SearchHit

__all__ = ["search_sql", "to_hits", "unfolded_case"]


def unfolded_case(conn: psycopg.Connection[Any]) -> str | None:
    """Why search on this database tells letters beyond ASCII apart by their
    case, or None where it does not. PostgreSQL lowercases a text's words
    and a query's by the database's ``LC_CTYPE``: under ``C`` (not
    ``C.UTF-8``) only ASCII letters, so ``ошибка`` never finds ``Ошибка``.
    The database is fixed when created, so the search says so instead."""
    # What search does, not lower(): a database whose collations come from
    # ICU lowercases with lower() and still parses words by LC_CTYPE.
    row = conn.execute(
        "SELECT to_tsvector('simple', %s) = to_tsvector('simple', %s), datctype"
        " FROM pg_database WHERE datname = current_database()",
        ("ÄΣЖ", "äσж"),
    ).fetchone()
    if row is None or row[0]:
        return None
    return (
        f"this PostgreSQL database lowercases ASCII letters only (its LC_CTYPE is {row[1]}), so search"
        " finds other letters (Cyrillic, Greek) only in the case they were written;"
        " a database created with a UTF-8 LC_CTYPE (such as C.UTF-8) finds them in either"
    )


def _lexeme(word: str) -> str:
    # A word is letters and digits only (``parse_query``), so quoting it
    # needs no escapes; doubling a quote keeps that true if it ever changes.
    # Its diacritics go as the indexed text's went (migration 0012).
    return "'" + strip_diacritics(word).replace("'", "''") + "'"


def _term(words: Sequence[str], prefix: bool) -> str:
    text = " <-> ".join(_lexeme(w) for w in words)
    return f"({text}:*)" if prefix else f"({text})"


def _written(node: Node) -> str:
    """The ``to_tsquery`` text of a parsed query."""
    if len(node) == 2:  # a term: its words in sequence, the last one perhaps a prefix
        return _term(*node)
    operator, left, right = node
    if operator == "NOT":
        return f"({_written(left)} & !{_written(right)})"
    return f"({_written(left)} {'|' if operator == 'OR' else '&'} {_written(right)})"


def _terms(node: Node) -> list[str]:
    """The ``to_tsquery`` text of each distinct term of ``node``, in order."""
    if len(node) == 2:
        return [_term(*node)]
    _operator, left, right = node
    return list(dict.fromkeys(_terms(left) + _terms(right)))


def _any_of(terms: list[str]) -> str:
    # Balanced, as parse_query builds its trees: PostgreSQL's parser recurses.
    if len(terms) == 1:
        return terms[0]
    half = len(terms) // 2
    return f"({_any_of(terms[:half])} | {_any_of(terms[half:])})"


def _in_parts(node: Node, numbers: dict[str, int]) -> str:
    """``node`` as an SQL condition on ``c.found``, the numbers of the terms
    found in any part of a text held in parts (``textparts``): the query's
    AND, OR and NOT are taken over those answers, so the text matches as it
    would whole (a word in one part and a word in another satisfy an AND,
    and a NOT excludes a word found in any part)."""
    if len(node) == 2:
        return f"{numbers[_term(*node)]} = ANY(c.found)"
    operator, left, right = node
    first, second = _in_parts(left, numbers), _in_parts(right, numbers)
    if first == second and operator != "NOT":  # "word word word ...", as a pasted log has it
        return first
    if operator == "NOT":
        return f"({first} AND NOT {second})"
    return f"({first} {operator} {second})"


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
    tree = parse_query(query)
    terms = _terms(tree)
    args: dict[str, Any] = {"query": _written(tree), "any": _any_of(terms), "terms": terms, "limit": limit}
    # What the SQLite index leaves out is left out here too: a checkpoint
    # after every step (state) filled the results with the same todo list.
    args["skipped"] = sorted(SKIPPED_KINDS)
    where = ["e.kind <> ALL(%(skipped)s::text[])"]
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
    # Each branch of ``hits`` filters its own rows: joining every hit back
    # to events to filter them afterwards took longer than the search.
    filters = "".join(" AND " + condition for condition in where)
    sessions = "JOIN sessions s ON s.id = e.session_id" if cwd is not None else ""
    in_parts = _in_parts(tree, {term: i for i, term in enumerate(terms, 1)})
    # The text a hit's snippet is made from: its row's own, or for a text in
    # parts the part that best matches one of the query's terms.
    best_part = """(SELECT x.search_text FROM {} x, q WHERE {} AND x.search @@ q.terms
                    ORDER BY ts_rank(x.search, q.terms) DESC, x.part LIMIT 1)"""
    text = f"""coalesce(e.search_text, b.search_text,
        {best_part.format("event_parts", "(x.session_id, x.id) = (e.session_id, e.id)")},
        {best_part.format("blob_parts", "x.digest = e.digest")}, '')"""
    # A hit's rank is ts_rank with normalization 1 (divided by 1 + the log
    # of the text's length), so that a long text naming a word once ranks
    # below a short one that is mostly that word, as bm25 ranks them in the
    # SQLite index (the default, 0, tied a 9,000-word output with it).
    # Every branch of ``hits`` starts from a GIN index: a text in parts is
    # found through its parts that hold any term of the query, and judged
    # by which terms those parts hold.
    sql = f"""
        WITH q AS (
            SELECT q, to_tsquery('simple', %(any)s) AS terms FROM to_tsquery('simple', %(query)s) AS q
            -- A query PostgreSQL reduced to a bare NOT (a term it has no word
            -- for, such as "①", dropped from "① NOT café") matches nothing:
            -- the query language never searches a NOT alone.
            WHERE querytree(q) <> 'T'),
        blob_candidates AS MATERIALIZED (
            SELECT x.digest, x.search FROM q, blob_parts x WHERE x.search @@ q.terms),
        split_blobs AS (
            SELECT x.digest, array_agg(DISTINCT t.i) AS found, max(ts_rank(x.search, q.terms, 1)) AS rank
            FROM q, blob_candidates x, unnest(%(terms)s::text[]) WITH ORDINALITY t(term, i)
            WHERE x.search @@ to_tsquery('simple', t.term) GROUP BY x.digest),
        event_candidates AS MATERIALIZED (
            SELECT x.session_id, x.id, x.search FROM q, event_parts x WHERE x.search @@ q.terms),
        split_events AS (
            SELECT x.session_id, x.id, array_agg(DISTINCT t.i) AS found, max(ts_rank(x.search, q.terms, 1)) AS rank
            FROM q, event_candidates x, unnest(%(terms)s::text[]) WITH ORDINALITY t(term, i)
            WHERE x.search @@ to_tsquery('simple', t.term) GROUP BY x.session_id, x.id),
        hits AS (
            SELECT e.session_id, e.id, ts_rank(e.search, q.q, 1) AS rank FROM q, events e {sessions}
            WHERE e.search @@ q.q AND e.search_text IS NOT NULL {filters}
            UNION ALL
            SELECT e.session_id, e.id, ts_rank(b.search, q.q, 1) FROM q, blobs b
            JOIN events e ON e.digest = b.digest {sessions}
            WHERE b.search @@ q.q AND b.search_text IS NOT NULL {filters}
            UNION ALL
            SELECT e.session_id, e.id, c.rank FROM split_blobs c JOIN events e ON e.digest = c.digest {sessions}
            WHERE {in_parts} {filters}
            UNION ALL
            SELECT e.session_id, e.id, c.rank FROM split_events c
            JOIN events e ON (e.session_id, e.id) = (c.session_id, c.id) {sessions}
            WHERE {in_parts} {filters}),
        top AS (SELECT * FROM hits ORDER BY rank DESC, id DESC LIMIT %(limit)s)
        SELECT e.session_id, e.id::text, e.kind, e.role, e.ts, {text}, t.rank
        FROM top t JOIN events e ON (e.session_id, e.id) = (t.session_id, t.id)
        LEFT JOIN blobs b ON b.digest = e.digest, q
        ORDER BY t.rank DESC, t.id DESC"""
    return sql, args


def to_hits(rows: list[tuple[Any, ...]], query: str) -> list[SearchHit]:
    words = highlight_words(query)
    hits = []
    for session_id, event_id, kind, role, ts, text, rank in rows:
        snippet, spans = make_snippet(str(text), words)
        hits.append(SearchHit(str(session_id), event_id, kind, role, ts, snippet, spans, -float(rank)))
    return hits
