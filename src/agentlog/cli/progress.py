"""Progress bars (rich, on stderr) for long work: import, export, reindex,
fsck of a whole home, gc, prune.

A bar shows only when stderr is a terminal, so pipes, files and tests
get clean output; it disappears when the work is done.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Iterator

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

__all__ = ["ProgressFn", "progress_bar"]

ProgressFn = Callable[[int, int], None]


@contextlib.contextmanager
def progress_bar(description: str, *, force: bool | None = None) -> Iterator[ProgressFn]:
    """A ``(done, total)`` callback drawing a bar for ``description``."""
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
    with bar:
        task = bar.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update
