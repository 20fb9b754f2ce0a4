"""fsck: verify stored bytes, and the explicit repair."""

from __future__ import annotations

import dataclasses
from typing import Any

import click
from rich.text import Text

from ..backends.base import Problem
from ..errors import AgentlogError, SessionLocked
from .common import App, emit_json, json_option, pass_app, resolve_session
from .progress import progress_bar
from .render import console, counted

__all__ = ["COMMANDS"]


def _problem_json(p: Problem) -> dict[str, Any]:
    return dataclasses.asdict(p)


def _print_problems(problems: list[Problem]) -> None:
    out = console()
    for p in problems:
        line = Text(str(p), style="red" if p.severity == "error" else "yellow")
        if p.severity != "error":
            line.append(f" ({p.severity})")
        out.print(line, soft_wrap=True)


def _errors(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity == "error"]


@click.command("fsck")
@click.argument("session", metavar="[SESSION]", required=False)
@click.option(
    "--repair",
    is_flag=True,
    help="Repair each session with a problem (warnings too): quarantine damaged records, "
    "rebuild what derives from them, then check again.",
)
@json_option
@pass_app
def fsck(app: App, session: str | None, repair: bool, as_json: bool) -> None:
    """Verify what is stored for one session, or all; exit 1 on damage.

    Each problem is printed as 'session: path@offset: message'. Warnings
    (a torn tail, a lagging index: what the next writer fixes on its own)
    are printed but do not fail. Checking changes nothing; --repair moves
    each damaged record into a .quarantine file beside its chunk, never
    deleting it, writes a tombstone with the damaged event's id and parent
    in its place (so every intact event keeps its path and HEAD stays),
    and says what it moved and why, and which events, if any, are no
    longer reachable. A session.json field of the wrong type is an error
    naming the field; --repair keeps the old file beside it as
    session.json.quarantine and writes it again without the fields at
    fault (each then reads as its default; 'id' and 'schema' are set
    again), or with defaults when nothing of it can be read. Repair takes
    the writer's lease, so it fails on a session another process is
    writing."""
    store = app.store
    sid = resolve_session(store, session) if session is not None else None
    if sid is not None:
        problems = store.fsck(sid)
        checked = 1
    else:
        ids = sorted(store.backend.session_ids())
        problems = []
        with progress_bar("checking sessions") as update:
            for n, target in enumerate(ids):
                problems += store.fsck(target)
                update(n + 1, len(ids))
        checked = len(ids)
    repairs: list[dict[str, Any]] = []
    failed: list[str] = []
    after: list[Problem] | None = None
    repaired: set[str] = set()
    if repair:
        # Warnings too: a torn tail, a damaged or missing index, a stale
        # HEAD file are what the next writer would fix, and --repair is
        # asked to fix them now (and quarantines a torn tail, which a
        # writer would cut). A session with only warnings that a writer
        # holds is left to that writer rather than reported as a failure.
        broken = {p.session_id for p in _errors(problems)}
        for target in sorted({p.session_id for p in problems if p.repairable}):
            try:
                actions = store.repair(target)
            except SessionLocked as exc:
                if target in broken:
                    failed.append(target)
                    click.echo(f"agentlog: error: cannot repair {target}: {exc}", err=True)
                else:
                    click.echo(f"agentlog: {target}: in use; its warnings are its writer's to fix", err=True)
                continue
            except AgentlogError as exc:
                failed.append(target)
                click.echo(f"agentlog: error: cannot repair {target}: {exc}", err=True)
                continue
            repairs.append({"session": target, "actions": actions})
        repaired = {r["session"] for r in repairs}
        after = [p for target in sorted(repaired) for p in store.fsck(target)]
    final = problems if after is None else [p for p in problems if p.session_id not in repaired] + after
    remaining = _errors(final)
    if as_json:
        doc: dict[str, Any] = {
            "ok": not remaining and not failed,
            "checked": checked,
            "problems": [_problem_json(p) for p in problems],
        }
        if repair:
            doc["repairs"] = repairs
            doc["after_repair"] = [_problem_json(p) for p in after or []]
        emit_json(doc)
    else:
        _print_problems(problems)
        for r in repairs:
            for action in r["actions"] or ["nothing to move"]:
                console().print(Text(f"{r['session']}: repaired: {action}"), soft_wrap=True)
        if after:
            console().print(Text("after repair:", style="bold"))
            _print_problems(after)
        _summary(checked, final, bool(repairs))
    if remaining or failed:
        raise click.exceptions.Exit(1)


def _summary(checked: int, problems: list[Problem], repaired: bool) -> None:
    errors = len(_errors(problems))
    warnings = len(problems) - errors
    state = "after repair: " if repaired else ""
    style = "bold red" if errors else ("yellow" if warnings else "green")
    said = f"{state}{counted(checked, 'session')} checked: {counted(errors, 'error')}, {counted(warnings, 'warning')}"
    console().print(Text(said, style=style))


COMMANDS = [fsck]
