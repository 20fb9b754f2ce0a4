"""One import run: read files, group lines into sessions, convert, write.

Sessions are converted one at a time, earliest first, and each is written
(in all-or-nothing batches) before the next starts; a session whose first line
continues another session's line (a resume or fork in the source tool)
has that session converted first, then copies the path it continues.

The parts: ``run`` (the run's state and steps), ``lines`` (converting one
line, or keeping it whole) and ``stored_keys`` (source keys that sessions
of earlier imports hold)."""

from __future__ import annotations

from ...errors import AgentlogError
from ...store import Store
from ..base import Importer
from ..builder import SessionBuilder
from ..model import ImportReport
from ..paths import expand_paths
from ..reader import Tails
from .run import CHUNK_EVENTS, Progress, Run

__all__ = ["CHUNK_EVENTS", "run_import"]


def run_import(
    store: Store,
    importer: Importer,
    paths: list[str] | tuple[str, ...] = (),
    *,
    progress: Progress | None = None,
    files: list[str] | None = None,
    keep: dict[str, SessionBuilder] | None = None,
    chunk_events: int = 0,
    tails: Tails | None = None,
) -> ImportReport:
    """Import ``paths`` (files or directories; none: the default locations),
    or exactly ``files`` when given.

    ``progress`` is called with byte counts: once per file read, once per
    session converted (its lines' bytes), so twice the files' sizes in all.
    Returns the report; malformed lines and changed files are in it, and
    do not stop the rest.

    ``chunk_events`` bounds the events written per batch (default
    ``CHUNK_EVENTS``); each batch is all or nothing, and a crash between
    batches loses nothing and duplicates nothing (see SessionBuilder.flush).
    ``keep`` (for ``follow``) receives the sessions this run opened, open
    and with their maps, and lends them to the next run instead of
    reading every event again; the caller closes them. ``tails`` (for
    ``follow`` too) keeps each file's lines and running hash, so that the
    next run reads only what was appended."""
    report = ImportReport(importer.name)
    run = Run(store, importer, report, keep, chunk_events or CHUNK_EVENTS, tails)
    try:
        for path in files if files is not None else expand_paths(importer, paths):
            run.read(path, progress)
        for group in run.prepare():
            try:
                run.convert(group, progress)
            except AgentlogError as exc:  # this session only: the others are still imported
                run.fail(group, exc)
    finally:
        run.close()
        if tails is not None:  # between polls, keep only what later polls need
            for path in {p for g in run.groups.values() for p in g.files}:
                for line in tails[path].lines if path in tails else ():
                    if line.obj is not None:
                        line.obj = importer.slim(line.obj)
    return report
