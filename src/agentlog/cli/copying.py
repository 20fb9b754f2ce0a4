"""copy: move sessions between any two stores."""

from __future__ import annotations

import dataclasses

import click
from rich.console import Console
from rich.progress import Progress

from ..copying import copy_sessions
from ..store import Store
from .common import App, emit_json, json_option, pass_app

__all__ = ["COMMANDS"]


@click.command("copy")
@click.option("--from", "source", metavar="URL", help="The store to copy from (default: --store/--home).")
@click.option("--to", "target", metavar="URL", required=True, help="The store to copy to (created if needed).")
@click.argument("sessions", nargs=-1, metavar="[SESSION]...")
@json_option
@pass_app
def copy(app: App, source: str | None, target: str, sessions: tuple[str, ...], as_json: bool) -> None:
    """Copy sessions (default: all) to another store, ids, parents, times,
    HEAD, blobs and metadata kept. Running it again copies only what is new;
    a session that differs on the target is refused, never overwritten."""
    src = Store(source, durability=app.durability) if source else app.store
    dst = Store(target, durability=app.durability)
    ids = list(sessions) or sorted(src.backend.session_ids())
    with Progress(console=Console(stderr=True), transient=True, disable=as_json) as bar:
        task = bar.add_task("copying", total=len(ids))
        report = copy_sessions(src, dst, ids, lambda sid, n: bar.advance(task))
    if as_json:
        emit_json(dataclasses.asdict(report))
        return
    click.echo(
        f"created {len(report.created)}, extended {len(report.extended)}, "
        f"unchanged {len(report.unchanged)} sessions; {report.events} events copied"
    )


COMMANDS = [copy]
