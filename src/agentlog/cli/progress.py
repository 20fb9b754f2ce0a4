"""Progress bars (rich, on stderr) for long work: import, export, reindex,
fsck of a whole home, gc, prune.

A bar shows only when stderr is a terminal, so pipes, files and tests
get clean output; it disappears when the work is done.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

__all__ = ["ProgressFn", "progress_bar"]

ProgressFn = Callable[[int, int], None]


@contextlib.contextmanager
def progress_bar(description: str, *, force: bool | None = None, delay: float = 0.0) -> Iterator[ProgressFn]:
    """A ``(done, total)`` callback drawing a bar for ``description``;
    with ``delay``, only once the work has taken that many seconds (work
    that is usually quick, such as a search's catch-up, then never
    flashes a bar)."""
    show = sys.stderr.isatty() if force is None else force
    if not show:
        yield lambda done, total: None
        return
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    )
    task = bar.add_task(description, total=None)  # indeterminate until the first update
    due = time.monotonic() + delay
    started = delay <= 0
    if started:
        bar.start()

    def update(done: int, total: int) -> None:
        nonlocal started
        if not started:
            if time.monotonic() < due:
                return
            bar.start()
            started = True
        bar.update(task, completed=done, total=total)

    try:
        yield update
    finally:
        if started:
            bar.stop()
