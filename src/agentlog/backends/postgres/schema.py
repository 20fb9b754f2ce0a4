"""The PostgreSQL schema, as named migrations applied in order.

Each migration runs in one transaction together with the row that records
it, under a transaction-level advisory lock, so concurrent first uses
apply each migration exactly once and a failed one leaves nothing behind.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import psycopg
from psycopg import sql

from ...search.scripts import CJK_RANGES, RANGES, postgres_class
from .steps import (
    WORD_TABLES,
    Connection,
    composed_texts,
    long_texts_in_parts,
    southeast_asian_by_character,
    thinking_text,
    words_as_sqlite_reads_them,
)

__all__ = ["MIGRATIONS", "Step", "applied", "apply_step", "migrate", "pending", "up_to_date"]

#: One statement of a migration, or a function that runs its own (for a
#: change that only Python can compute, as the search text is).
Step = str | Callable[[Connection], None]

# Advisory-lock key for schema changes ("agentlog" in ASCII, as an int8).
_MIGRATION_LOCK = 0x6167656E746C6F67

#: ``translate()``'s two arguments: every ASCII character that is neither a
#: letter nor a digit, and as many spaces.
_ASCII_PUNCTUATION = "".join(c for c in map(chr, range(33, 127)) if not c.isalnum())
_PUNCTUATION = "'" + _ASCII_PUNCTUATION.replace("'", "''") + "', '" + " " * len(_ASCII_PUNCTUATION) + "'"


#: The same characters as a bracket expression of PostgreSQL's regular
#: expressions, each after a backslash (which makes any of them stand for
#: itself), the quote doubled for SQL.
_PUNCTUATION_CLASS = "'[" + "".join("\\" + c for c in _ASCII_PUNCTUATION).replace("'", "''") + "]'"


def _words(text: str, ranges: tuple[tuple[int, int], ...], spaces: str = "translate") -> str:
    """The words PostgreSQL indexes of the SQL expression ``text``: ASCII
    punctuation as spaces (0005), and each character of ``ranges`` (the
    scripts written without spaces) a word of its own (0008, 0013).

    ``spaces`` is how the punctuation becomes spaces: ``translate()`` until
    0013, then ``regexp_replace()``, the same words in a sixth of the time
    (33 against 181 ms a megabyte on this machine: ``translate()`` scans its
    table for every character of the text, on every write)."""
    if spaces == "translate":
        spaced = f"translate({text}, {_PUNCTUATION})"
    else:
        spaced = f"regexp_replace({text}, {_PUNCTUATION_CLASS}, ' ', 'g')"
    return f"regexp_replace({spaced}, '({postgres_class(ranges)})', ' \\1 ', 'g')"


#: The words of 0008: Chinese, Japanese and Korean by character.
_SEARCH_WORDS = _words("coalesce(search_text, '')", CJK_RANGES)


#: recordtext.TERMINAL_CODES as 0009 applied it (a released migration never
#: changes; tests/test_search_terminal_codes.py holds the two equal).
_TERMINAL_CODES_0009 = r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])"


def _search_columns(words: str, tables: tuple[str, ...] = ("events", "blobs")) -> tuple[str, ...]:
    """The statements that rebuild the ``search`` column of each table (events
    and blobs, unless told) as the tsvector of the SQL expression ``words``,
    and its index."""
    return tuple(
        statement
        for table in tables
        for statement in (
            f"ALTER TABLE {table} DROP COLUMN search",
            f"""ALTER TABLE {table} ADD COLUMN search tsvector GENERATED ALWAYS AS
                 (to_tsvector('simple', {words})) STORED""",
            f"CREATE INDEX {table}_search ON {table} USING gin (search)",
        )
    )


#: The words of 0008, read from ``search_words`` where a row has them (0012).
_FOLDED_WORDS = _words("coalesce(search_words, search_text, '')", CJK_RANGES)
#: The words of 0012, with Thai, Lao, Myanmar and Khmer by character too (0013).
_ALL_BY_CHARACTER = _words("coalesce(search_words, search_text, '')", RANGES, spaces="regexp_replace")


#: (name, statements). Never edit a released migration: add the next one
#: (nor change what a step in ``steps`` writes for one: tests/test_postgres.py
#: applies them in order to an existing schema).
MIGRATIONS: Sequence[tuple[str, Sequence[Step]]] = (
    (
        "0001_timeline",
        (
            """CREATE TABLE sessions (
             id text PRIMARY KEY,
             meta jsonb NOT NULL,
             head uuid NOT NULL,
             last_id uuid,
             event_count bigint NOT NULL DEFAULT 0,
             created_at timestamptz NOT NULL DEFAULT now(),
             updated_at timestamptz NOT NULL DEFAULT now(),
             updated_ns bigint NOT NULL)""",
            # record is json, not jsonb: it keeps the exact text (key order,
            # duplicate-free but order-preserving objects, number spelling).
            """CREATE TABLE events (
             session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
             id uuid NOT NULL,
             seq bigint NOT NULL,
             parent_id uuid NOT NULL,
             branch_from uuid,
             kind text NOT NULL,
             role text,
             ts text NOT NULL,
             record json,
             digest text,
             PRIMARY KEY (session_id, id))""",
            "CREATE UNIQUE INDEX events_in_order ON events (session_id, seq)",
            """CREATE TABLE blobs (
             digest text PRIMARY KEY,
             data bytea NOT NULL)""",
            """CREATE TABLE sidecars (
             session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
             name text NOT NULL,
             data bytea NOT NULL,
             PRIMARY KEY (session_id, name))""",
            """CREATE TABLE breadcrumbs (
             working_dir text PRIMARY KEY,
             session_id text NOT NULL,
             updated_at timestamptz NOT NULL DEFAULT now())""",
        ),
    ),
    (
        "0002_reads_and_leases",
        (
            # tree and branch checks ask "does X have children?"
            "CREATE INDEX events_by_parent ON events (session_id, parent_id)",
            # listing by recency reads the sessions table alone
            "CREATE INDEX sessions_by_recency ON sessions (updated_ns DESC)",
            """CREATE TABLE leases (
             session_id text PRIMARY KEY,
             token uuid NOT NULL,
             holder text NOT NULL,
             expires_at timestamptz NOT NULL)""",
        ),
    ),
    (
        "0003_full_text_search",
        (
            # The string values of each record (not its keys, and without
            # NULs, which jsonb and tsvector refuse), written with the event;
            # the tsvector derives from them.
            "ALTER TABLE events ADD COLUMN search_text text",
            """ALTER TABLE events ADD COLUMN search tsvector
             GENERATED ALWAYS AS (to_tsvector('simple', coalesce(search_text, ''))) STORED""",
            "CREATE INDEX events_search ON events USING gin (search)",
            "ALTER TABLE blobs ADD COLUMN search_text text",
            """ALTER TABLE blobs ADD COLUMN search tsvector
             GENERATED ALWAYS AS (to_tsvector('simple', coalesce(search_text, ''))) STORED""",
            "CREATE INDEX blobs_search ON blobs USING gin (search)",
        ),
    ),
    (
        "0004_exact_metadata",
        (
            # jsonb refuses a NUL in a string (which JSON, and every other
            # backend, allows) and reorders keys: the exact text is kept
            # here and read back; ``meta`` stays, without NULs, for queries.
            "ALTER TABLE sessions ADD COLUMN meta_text json",
        ),
    ),
    (
        "0005_words_as_sqlite_splits_them",
        # PostgreSQL's parser keeps ``src/cache_manager_v1.py`` or
        # ``a@b.com`` as one token, where agentlog's SQLite index (FTS5
        # unicode61) sees the words in them; ASCII punctuation becomes a
        # space first, so a word is found on every backend alike.
        _search_columns(f"translate(coalesce(search_text, ''), {_PUNCTUATION})"),
    ),
    (
        "0006_meta_text_follows_meta",
        (
            # An agentlog from before 0004 (still running through an upgrade)
            # writes ``meta`` alone; the ``meta_text`` reads prefer would then
            # hide its change (a rename, an archive). Such an update clears
            # ``meta_text``, so reads fall back to ``meta``.
            """CREATE FUNCTION meta_text_follows_meta() RETURNS trigger LANGUAGE plpgsql AS $$
             BEGIN
               IF NEW.meta_text::text IS NOT DISTINCT FROM OLD.meta_text::text THEN
                 NEW.meta_text := NULL;
               END IF;
               RETURN NEW;
             END $$""",
            """CREATE TRIGGER sessions_meta_text_follows_meta BEFORE UPDATE OF meta ON sessions
             FOR EACH ROW WHEN (NEW.meta IS DISTINCT FROM OLD.meta) EXECUTE FUNCTION meta_text_follows_meta()""",
        ),
    ),
    (
        "0007_events_by_digest",
        (
            # delete() keeps a blob another session still names: without an
            # index that check scanned every event of every session.
            "CREATE INDEX events_by_digest ON events (digest) WHERE digest IS NOT NULL",
        ),
    ),
    (
        "0008_unspaced_scripts_by_character",
        # A run of Chinese or Japanese is one token to PostgreSQL's parser,
        # so a word inside it was never found; each such character becomes a
        # word, and a query's run the phrase of its characters, as the
        # SQLite index does (agentlog.search.scripts). Rebuilding the column
        # rewrites the table once.
        _search_columns(_SEARCH_WORDS),
    ),
    (
        "0009_text_without_terminal_codes",
        # A tool's coloured output glued its escape codes to the words they
        # colour ("31mFAILED"), so the word was never found: the stored text
        # loses them as new records do (recordtext.strip_terminal_codes,
        # whose pattern this is; PostgreSQL's ARE reads \x1b as Python does).
        tuple(
            f"UPDATE {table} SET search_text = regexp_replace(search_text, '{_TERMINAL_CODES_0009}', '', 'g') "
            "WHERE strpos(search_text, chr(27)) > 0"
            for table in ("events", "blobs")
        ),
    ),
    ("0010_thinking_text", (thinking_text,)),
    (
        "0011_long_texts_in_parts",
        (
            # A text too long for one tsvector (textparts) lives here in
            # overlapping parts, its row's search_text NULL. A part goes
            # with its event or blob.
            f"""CREATE TABLE event_parts (
             session_id text NOT NULL,
             id uuid NOT NULL,
             part integer NOT NULL,
             search_text text NOT NULL,
             search tsvector GENERATED ALWAYS AS (to_tsvector('simple', {_SEARCH_WORDS})) STORED,
             PRIMARY KEY (session_id, id, part),
             FOREIGN KEY (session_id, id) REFERENCES events ON DELETE CASCADE)""",
            "CREATE INDEX event_parts_search ON event_parts USING gin (search)",
            f"""CREATE TABLE blob_parts (
             digest text NOT NULL REFERENCES blobs ON DELETE CASCADE,
             part integer NOT NULL,
             search_text text NOT NULL,
             search tsvector GENERATED ALWAYS AS (to_tsvector('simple', {_SEARCH_WORDS})) STORED,
             PRIMARY KEY (digest, part))""",
            "CREATE INDEX blob_parts_search ON blob_parts USING gin (search)",
            long_texts_in_parts,
        ),
    ),
    (
        "0012_words_as_sqlite_reads_them",
        # The SQLite index finds café by cafe, and ends a word at a Hindi
        # vowel sign (search.diacritics): a text it reads otherwise is
        # indexed here by those words, computed in Python (search_words, NULL
        # where they are the text). Rebuilding the columns rewrites each table once.
        (
            *(f"ALTER TABLE {table} ADD COLUMN search_words text" for table in WORD_TABLES),
            words_as_sqlite_reads_them,
            *_search_columns(_FOLDED_WORDS, WORD_TABLES),
        ),
    ),
    (
        "0013_southeast_asian_scripts_by_character",
        # Thai, Lao, Myanmar and Khmer are written without spaces too: each
        # character becomes a word, as in the SQLite index (search.scripts).
        # A text holding them has more words now, so some reach a limit of
        # textparts and are cut first; then the columns are rebuilt, which
        # rewrites each table once (their punctuation read by a regular
        # expression now, not translate(): the same words, faster).
        (southeast_asian_by_character, *_search_columns(_ALL_BY_CHARACTER, WORD_TABLES)),
    ),
    (
        "0014_texts_composed",
        # A text is indexed composed (search.composed), as the SQLite index
        # reads it: the rows of a text that is not are written again, and
        # their generated columns follow.
        (composed_texts,),
    ),
)


def apply_step(conn: Connection, step: Step) -> None:
    """Run one step of a migration."""
    if isinstance(step, str):
        conn.execute(step)
    else:
        step(conn)


def applied(conn: psycopg.Connection[tuple[object, ...]]) -> list[str]:
    """Names of the migrations recorded in the current schema, in order."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations ("
        " name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
    )
    return [str(row[0]) for row in conn.execute("SELECT name FROM schema_migrations ORDER BY name")]


def pending(conn: psycopg.Connection[tuple[object, ...]]) -> list[str]:
    done = set(applied(conn))
    return [name for name, _ in MIGRATIONS if name not in done]


def up_to_date(conn: psycopg.Connection[tuple[object, ...]], schema: str) -> bool:
    """True if ``schema`` exists with every migration recorded: read only,
    taking no lock and needing no privilege to create anything, so that a
    role allowed only to read and write the tables can open the store."""
    try:
        with conn.transaction():
            table = conn.execute(
                "SELECT to_regclass(format('%%I.schema_migrations', %s::text))::text", (schema,)
            ).fetchone()
            if table is None or table[0] is None:
                return False
            names = conn.execute(sql.SQL("SELECT name FROM {}.schema_migrations").format(sql.Identifier(schema)))
            done = {str(row[0]) for row in names}
    except psycopg.errors.InsufficientPrivilege:
        return False  # the full path below says what is missing
    return all(name in done for name, _ in MIGRATIONS)


def migrate(conn: psycopg.Connection[tuple[object, ...]], schema: str) -> list[str]:
    """Create ``schema`` if needed and apply every pending migration; the
    names applied now (each in its own transaction, under the lock).

    A schema already up to date is only read (``up_to_date``): the usual
    case, every agent's start, then takes no lock, and works for a role
    without ``CREATE`` on the database (``CREATE SCHEMA IF NOT EXISTS``
    checks that privilege even when the schema exists)."""
    if up_to_date(conn, schema):
        conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        return []
    done_now: list[str] = []
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(schema)))
    conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
    for name, statements in MIGRATIONS:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            if name in applied(conn):
                continue  # another process applied it while we waited
            for step in statements:
                apply_step(conn, step)
            conn.execute("INSERT INTO schema_migrations (name) VALUES (%s)", (name,))
            done_now.append(name)
    return done_now
