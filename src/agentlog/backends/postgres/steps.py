"""The steps of the PostgreSQL migrations that only Python can compute:
search texts and words as a write makes them now, read from the rows
and records an older build left (``schema.MIGRATIONS`` runs them)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from typing import cast

import psycopg

from ...search.composed import composed, uncomposed_ranges
from ...search.diacritics import index_words
from ...search.query import SearchWarning
from ...search.scripts import SOUTHEAST_ASIAN_RANGES, postgres_class
from .storage import searchable_text
from .textparts import KEPT_POSITIONS, MAX_CHARS, MAX_WORDS, MIN_CHARS, index_parts

__all__ = [
    "WORD_TABLES",
    "composed_texts",
    "long_texts_in_parts",
    "southeast_asian_by_character",
    "thinking_text",
    "words_as_sqlite_reads_them",
]

Connection = psycopg.Connection[tuple[object, ...]]

#: Rows read per statement by a step that rewrites search texts (a blob's
#: data is read one at a time: it has no upper size).
_BATCH = 1000
#: The kind a blob's search text is made for: that of the first event
#: written with it, as a write makes the text once, for the first (a
#: payload shared by events of two kinds is rare, but then the text must
#: not depend on the order a scan happens to return them in).
_BLOB_KIND = "(SELECT kind FROM events WHERE events.digest = blobs.digest ORDER BY ts, session_id, seq LIMIT 1)"


def _text_now(kind: str, payload: bytes, where: str, migration: str = "0010") -> str | None:
    """The search text a write stores now, or None (with a warning) for a
    record that cannot be parsed: one bad row must not stop a migration,
    which would stop every process from opening the store."""
    try:
        return searchable_text(kind, payload)
    except ValueError as exc:  # orjson's JSONDecodeError, a UnicodeDecodeError
        warnings.warn(
            SearchWarning(f"migration {migration} left the search text of {where} as it was: {exc}"), stacklevel=2
        )
        return None


def thinking_text(conn: Connection) -> None:
    """Until 0010 the text of a thinking part (Claude Code and pi replies)
    was stored as the word "[thinking]" alone, not its text
    (recordtext.reasoning_text). Every record holding one therefore has
    that word in its search text: those records, inline or in a blob, get
    the text a write stores when the migration runs (``searchable_text``
    as it is then: the point is to match new writes). Every row's text is
    scanned, in key order, a batch at a time; only those rows are read
    whole and written."""
    last: tuple[str, str] = ("", "00000000-0000-0000-0000-000000000000")
    while True:
        rows = conn.execute(
            "SELECT session_id, id::text, kind, record::text FROM events"
            " WHERE (session_id, id) > (%s, %s::uuid) AND record IS NOT NULL"
            " AND strpos(search_text, '[thinking]') > 0 ORDER BY session_id, id LIMIT %s",
            (*last, _BATCH),
        ).fetchall()
        if not rows:
            break
        updates = []
        for sid, eid, kind, record in rows:
            text = _text_now(str(kind), str(record).encode(), f"event {eid} of session {sid}")
            if text is not None:
                updates.append((text, sid, eid))
        with conn.cursor() as cur:
            cur.executemany("UPDATE events SET search_text = %s WHERE session_id = %s AND id = %s::uuid", updates)
        last = (str(rows[-1][0]), str(rows[-1][1]))
    digest = ""
    while True:
        blobs = conn.execute(
            f"SELECT digest, {_BLOB_KIND} FROM blobs"
            " WHERE digest > %s AND strpos(search_text, '[thinking]') > 0 ORDER BY digest LIMIT %s",
            (digest, _BATCH),
        ).fetchall()
        if not blobs:
            break
        for d, kind in blobs:
            row = conn.execute("SELECT data FROM blobs WHERE digest = %s", (d,)).fetchone()
            text = _text_now(str(kind or "custom"), cast(bytes, row[0]), f"blob {d}") if row else None
            if text is not None:
                conn.execute("UPDATE blobs SET search_text = %s WHERE digest = %s", (text, d))
        digest = str(blobs[-1][0])


#: A row whose text ``index_parts`` may cut: its tsvector may have lost
#: positions (a word with all the positions PostgreSQL keeps, a position
#: past MAX_WORDS, or a text past MAX_CHARS), or it holds a character that
#: is not ASCII (its words are counted folded, as 0012 will index them:
#: café and cafe, 200 uses each, are 400). A prefilter, read in the
#: server: most rows are never sent to Python.
_MAYBE_TOO_LONG = f"""length(search_text) >= {MIN_CHARS} AND (length(search_text) > {MAX_CHARS}
    OR octet_length(search_text) > length(search_text)
    OR EXISTS (SELECT 1 FROM unnest(search) u WHERE cardinality(u.positions) >= {KEPT_POSITIONS}
               OR u.positions[cardinality(u.positions)] > {MAX_WORDS}))"""


#: The tables that hold search text, each with the columns of its key.
_KEYS = {
    "events": ("session_id", "id"),
    "blobs": ("digest",),
    "event_parts": ("session_id", "id", "part"),
    "blob_parts": ("digest", "part"),
}
WORD_TABLES = tuple(_KEYS)


def _texts(conn: Connection, table: str, condition: str) -> Iterator[tuple[tuple[object, ...], str]]:
    """(key, search text) of each row of ``table`` that meets ``condition``,
    in key order: the keys a batch at a time, each text alone (a text has
    no upper size, and a batch of them could fill the memory)."""
    columns = _KEYS[table]
    keys, marks = ", ".join(columns), ", ".join(["%s"] * len(columns))
    where = " AND ".join(f"{column} = %s" for column in columns)
    after: tuple[object, ...] = ()
    while True:
        rows = conn.execute(
            f"SELECT {keys} FROM {table} WHERE {condition} {f'AND ({keys}) > ({marks})' if after else ''}"
            f" ORDER BY {keys} LIMIT %s",
            (*after, _BATCH),
        ).fetchall()
        if not rows:
            return
        for key in rows:
            row = conn.execute(f"SELECT search_text FROM {table} WHERE {where}", key).fetchone()
            if row is not None and row[0] is not None:
                yield tuple(key), str(row[0])
        after = tuple(rows[-1])


def long_texts_in_parts(conn: Connection) -> None:
    """Rows written before 0011 with a text that ``index_parts`` cuts get
    their parts (their tsvector lost positions a phrase needs). The parts
    get their ``search_words`` from 0012, which runs next."""
    for (session_id, event_id), text in _texts(conn, "events", _MAYBE_TOO_LONG):
        parts = index_parts(text)
        if len(parts) > 1:
            conn.execute(
                "UPDATE events SET search_text = NULL WHERE session_id = %s AND id = %s", (session_id, event_id)
            )
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO event_parts (session_id, id, part, search_text) VALUES (%s, %s, %s, %s)",
                    [(session_id, event_id, i, part) for i, part in enumerate(parts)],
                )
    for (digest,), text in _texts(conn, "blobs", _MAYBE_TOO_LONG):
        parts = index_parts(text)
        if len(parts) > 1:
            conn.execute("UPDATE blobs SET search_text = NULL WHERE digest = %s", (digest,))
            with conn.cursor() as cur:
                cur.executemany(
                    "INSERT INTO blob_parts (digest, part, search_text) VALUES (%s, %s, %s)",
                    [(digest, i, part) for i, part in enumerate(parts)],
                )


def words_as_sqlite_reads_them(conn: Connection) -> None:
    """Rows written before 0012 get their ``search_words`` where FTS5 reads
    their text otherwise (``index_words``): only rows holding a character
    that is not ASCII are read."""
    for table, columns in _KEYS.items():
        where = " AND ".join(f"{column} = %s" for column in columns)
        for key, text in _texts(conn, table, "octet_length(search_text) > length(search_text)"):
            words = index_words(text)
            if words is not None:
                conn.execute(f"UPDATE {table} SET search_words = %s WHERE {where}", (words, *key))


def _store_text(conn: Connection, table: str, key: tuple[object, ...], text: str) -> None:
    """Store ``text`` as the search text of the row of ``table`` (events or
    blobs) with ``key``, as a write stores it now: whole, or in parts
    (``index_parts``) with the row's own text NULL; parts it had go."""
    parts_table = {"events": "event_parts", "blobs": "blob_parts"}[table]
    columns = _KEYS[table]
    where = " AND ".join(f"{column} = %s" for column in columns)
    conn.execute(f"DELETE FROM {parts_table} WHERE {where}", key)
    parts = index_parts(text)
    if len(parts) == 1:
        conn.execute(
            f"UPDATE {table} SET search_text = %s, search_words = %s WHERE {where}", (text, index_words(text), *key)
        )
        return
    conn.execute(f"UPDATE {table} SET search_text = NULL, search_words = NULL WHERE {where}", key)
    with conn.cursor() as cur:
        cur.executemany(
            f"INSERT INTO {parts_table} ({', '.join(columns)}, part, search_text, search_words)"
            f" VALUES ({', '.join(['%s'] * (len(columns) + 3))})",
            [(*key, i, part, index_words(part)) for i, part in enumerate(parts)],
        )


def southeast_asian_by_character(conn: Connection) -> None:
    """Until 0013 a run of Thai, Lao, Myanmar or Khmer was a word, or a few
    cut at its vowel signs; now each character is (search.scripts), so a
    text holding them has more words and may reach a limit of
    ``textparts``. Such a text held whole is cut into parts. One held in
    parts already is cut again from its record, as a write cuts it now: its
    parts overlap, and would not give the text back. Only rows holding such
    a character are read."""
    holds = f"search_text ~ '{postgres_class(SOUTHEAST_ASIAN_RANGES)}'"
    for table in ("events", "blobs"):
        for key, text in _texts(conn, table, f"length(search_text) >= {MIN_CHARS} AND {holds}"):
            if len(index_parts(text)) > 1:
                _store_text(conn, table, key, text)
    _parts_again(conn, holds, "0013")


def composed_texts(conn: Connection) -> None:
    """Until 0014 a text was indexed as written; now composed
    (``search.composed``): a Korean file name as macOS writes it was
    found by no query typed. A text held whole that is not composed is
    stored again composed (in parts, if it needs them now). A text held in
    parts is made again from its record, as a write makes it now: its
    parts overlap, and would not give the text back. Only rows holding a
    character that a composed text may lack are read."""
    holds = f"search_text ~ '{postgres_class(uncomposed_ranges())}'"
    for table in ("events", "blobs"):
        for key, text in _texts(conn, table, holds):
            now = composed(text)
            if now != text:
                _store_text(conn, table, key, now)
    _parts_again(conn, holds, "0014", lambda part: composed(part) != part)


def _parts_again(
    conn: Connection, holds: str, migration: str, wrong: Callable[[str], bool] = lambda part: True
) -> None:
    """Make again from its record, as a write makes it now, the search text
    of each record held in parts of which one meets the SQL condition
    ``holds`` (and, of those parts, one is ``wrong``): overlapping parts
    do not give the text back. A record that cannot be parsed keeps its
    parts, with a warning (``_text_now``)."""
    cut = conn.execute(f"SELECT DISTINCT session_id, id::text FROM event_parts WHERE {holds}").fetchall()
    for session_id, event_id in cut:
        parts = conn.execute(
            "SELECT search_text FROM event_parts WHERE session_id = %s AND id = %s::uuid", (session_id, event_id)
        ).fetchall()
        if not any(wrong(str(part)) for (part,) in parts):
            continue
        row = conn.execute(
            "SELECT kind, record::text FROM events WHERE session_id = %s AND id = %s::uuid AND record IS NOT NULL",
            (session_id, event_id),
        ).fetchone()
        where = f"event {event_id} of session {session_id}"
        now = _text_now(str(row[0]), str(row[1]).encode(), where, migration) if row else None
        if now is not None:
            _store_text(conn, "events", (session_id, event_id), now)
    for (digest,) in conn.execute(f"SELECT DISTINCT digest FROM blob_parts WHERE {holds}").fetchall():
        parts = conn.execute("SELECT search_text FROM blob_parts WHERE digest = %s", (digest,)).fetchall()
        if not any(wrong(str(part)) for (part,) in parts):
            continue
        row = conn.execute(f"SELECT data, {_BLOB_KIND} FROM blobs WHERE digest = %s", (digest,)).fetchone()
        now = _text_now(str(row[1] or "custom"), cast(bytes, row[0]), f"blob {digest}", migration) if row else None
        if now is not None:
            _store_text(conn, "blobs", (digest,), now)
