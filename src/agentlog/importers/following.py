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
from .engine.run import KEEP_OPEN
from .model import ImportReport
from .paths import expand_paths
from .reader import Tails

__all__ = ["KEEP_OPEN", "Follower", "follow"]


class Follower:
    """The state ``--follow`` keeps between polls; ``poll()`` imports what
    changed since the last one. Close it to release the sessions it holds."""

    def __init__(self, store: Store, importer: Importer, paths: list[str] | tuple[str, ...] = ()) -> None:
        self.store = store
        self.importer = importer
        self.paths = paths
        self.seen: dict[str, tuple[int, int]] = {}
        self.keep: dict[str, SessionBuilder] = {}
        self.tails: Tails = {}

    def changed(self) -> list[str]:
        """The files that are new or whose size or modification time moved."""
        out = []
        for path in expand_paths(self.importer, self.paths, allow_empty=True):
            try:
                st = os.stat(path)
            except FileNotFoundError:
                continue  # removed between listing and stat: nothing to import from it
            mark = (st.st_size, st.st_mtime_ns)
            if self.seen.get(path) != mark:
                self.seen[path] = mark
                out.append(path)
        return out

    def poll(
        self, files: list[str] | None = None, progress: Callable[[int], None] | None = None
    ) -> ImportReport | None:
        """Import ``files`` (default: what changed); None when nothing did."""
        files = self.changed() if files is None else files
        if not files:
            return None
        report = run_import(self.store, self.importer, files=files, keep=self.keep, tails=self.tails, progress=progress)
        while len(self.keep) > KEEP_OPEN:
            self.keep.pop(next(iter(self.keep))).close()
        return report

    def close(self) -> None:
        for b in self.keep.values():
            b.close()
        self.keep.clear()

    def __enter__(self) -> Follower:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


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
    polls = 0
    with Follower(store, importer, paths) as follower:
        while True:
            report = follower.poll()
            if report is not None:
                total.merge(report)
                if on_report is not None:
                    on_report(report)
            polls += 1
            if max_polls is not None and polls >= max_polls:
                return total
            sleep(interval)
