"""``--follow``: keep importing as the source files grow.

Polls the files' sizes and modification times and imports those that
changed (and new ones). Between polls it keeps the sessions it writes open
with their maps, and each file's parsed lines and running hash, so a poll
costs what was appended, not the whole history."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from ..store import Store
from .base import Importer
from .builder import SessionBuilder
from .engine import run_import
from .model import ImportReport
from .paths import expand_paths
from .reader import Tails

__all__ = ["KEEP_OPEN", "follow"]

#: Sessions --follow keeps open between polls, the most recently written;
#: an older one is closed (its lease released) and read again if it grows.
KEEP_OPEN = 64


def follow(
    store: Store,
    importer: Importer,
    paths: list[str] | tuple[str, ...] = (),
    *,
    interval: float = 1.0,
    max_polls: int | None = None,
    on_report: Callable[[ImportReport], None] | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> ImportReport:
    """Import, then keep polling the files' sizes and import what grew (or
    appeared) until ``max_polls`` polls have run (None: until interrupted,
    e.g. by Ctrl-C). Returns everything imported."""
    total = ImportReport(importer.name)
    seen: dict[str, tuple[int, int]] = {}
    keep: dict[str, SessionBuilder] = {}
    tails: Tails = {}
    try:
        _poll(store, importer, paths, interval, max_polls, on_report, sleep, total, seen, keep, tails)
    finally:
        for b in keep.values():
            b.close()
    return total


def _poll(
    store: Store,
    importer: Importer,
    paths: list[str] | tuple[str, ...],
    interval: float,
    max_polls: int | None,
    on_report: Callable[[ImportReport], None] | None,
    sleep: Callable[[float], None],
    total: ImportReport,
    seen: dict[str, tuple[int, int]],
    keep: dict[str, SessionBuilder],
    tails: Tails,
) -> None:
    polls = 0
    while True:
        changed = []
        for path in expand_paths(importer, paths):
            try:
                st = os.stat(path)
            except FileNotFoundError:
                continue  # removed between listing and stat: nothing to import from it
            mark = (st.st_size, st.st_mtime_ns)
            if seen.get(path) != mark:
                seen[path] = mark
                changed.append(path)
        if changed:
            report = run_import(store, importer, files=changed, keep=keep, tails=tails)
            while len(keep) > KEEP_OPEN:
                keep.pop(next(iter(keep))).close()
            total.merge(report)
            if on_report is not None:
                on_report(report)
        polls += 1
        if max_polls is not None and polls >= max_polls:
            return
        sleep(interval)
