"""copy: move sessions between any two stores."""

from __future__ import annotations

import dataclasses

import click

from ..copying import CopyRefused, copy_sessions
from ..store import Store
from .common import App, CliError, emit_json, json_option, pass_app
from .location import missing_store, shown
from .progress import progress_bar
from .refs import resolve_session
from .render import counted

__all__ = ["COMMANDS"]


@click.command("copy")
@click.option("--from", "source", metavar="URL", help="The store to copy from (default: --store/--home).")
@click.option("--to", "target", metavar="URL", required=True, help="The store to copy to (created if needed).")
@click.argument("sessions", nargs=-1, metavar="[SESSION]...")
@json_option
@pass_app
def copy(app: App, source: str | None, target: str, sessions: tuple[str, ...], as_json: bool) -> None:
    """Copy sessions (default: all) to another store, ids, parents, times,
    HEAD, blobs, metadata, the draft and artifacts kept. Running it again
    copies only what is new; a session whose events differ on the target
    is refused, never overwritten, and the others are still copied (exit
    status 1; its HEAD, metadata and sidecars follow the source's)."""
    # A source that is not there is a mistake to say, before the target is
    # made: copying "nothing" from a typo would read as success.
    missing = missing_store(source if source else app.home)
    if missing is not None:
        raise CliError(f"there is no store at {shown(missing)}: nothing to copy (check --from, --home or --store)")
    src = Store(source, durability=app.durability) if source else app.store
    dst = Store(target, durability=app.durability)
    # SESSION refs are resolved in the source store, as every command
    # resolves them (a name, a short id, a prefix); each session once.
    ids = list(dict.fromkeys(resolve_session(src, ref) for ref in sessions)) or sorted(src.backend.session_ids())
    copied = 0
    with progress_bar("copying") as update:

        def advance(sid: str, events: int) -> None:
            nonlocal copied
            copied += 1
            update(copied, len(ids))

        try:
            report = copy_sessions(src, dst, ids, advance)
        except CopyRefused as exc:
            # The other sessions were copied: say so, then each refusal.
            report = exc.report
    if as_json:
        emit_json(dataclasses.asdict(report))
    else:
        refused = f", {len(report.refused):,} refused" if report.refused else ""
        click.echo(
            f"sessions: {len(report.created):,} created, {len(report.extended):,} extended, "
            f"{len(report.unchanged):,} unchanged{refused}; {counted(report.events, 'event')} copied"
        )
    for reason in report.refused.values():
        click.echo(f"agentlog: error: {shown(reason)}", err=True)
    if report.refused:
        raise click.exceptions.Exit(1)


COMMANDS = [copy]
