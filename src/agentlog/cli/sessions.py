"""Commands about whole sessions: ls, new."""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Any

import click
from rich.text import Text

from ..store import SessionInfo
from .common import App, emit_json, json_option, pass_app
from .location import shown
from .refs import check_text
from .render import Column, abbreviate, columns, console, counted, local_time, one_line, print_lines

__all__ = ["COMMANDS"]

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")
_HEADERS = [
    # Never cut: the id is the ref to type back. A UUID shows as its short
    # form; an id made elsewhere (an import's "claude-<uuid>") is whole.
    # On a narrow terminal the text columns narrow first, then columns are
    # left out, the summary first (render.Column).
    Column("ID", 128, "<"),
    Column("TITLE", 40, "<", floor=12, drop=5),
    Column("WORKING DIR", 40, "<", floor=12, drop=2),
    Column("UPDATED", 16, "<", drop=6),
    Column("EVENTS", 9, ">", drop=4),
    Column("STATUS", 12, "<", drop=3),
    Column("SUMMARY", 80, "<", floor=12, drop=1),
]
_ROW_FIELDS = [f.name for f in dataclasses.fields(SessionInfo) if f.name != "meta"]


def _row(info: SessionInfo) -> dict[str, Any]:
    row = {name: getattr(info, name) for name in _ROW_FIELDS}
    source = info.meta.get("source_cwd")
    row["source_cwd"] = source if isinstance(source, str) and source else None
    return row


def _directory(row: dict[str, Any], home: str) -> str:
    """The WORKING DIR cell: an imported session has none (so that
    --continue never opens it) and shows the directory it was recorded in."""
    if row["working_dir"] or not row["source_cwd"]:
        return _home_relative(row["working_dir"], home)
    return _home_relative(row["source_cwd"], home) + " (imported)"


def _broken_row(session_id: str, reason: str) -> dict[str, Any]:
    row: dict[str, Any] = dict.fromkeys(_ROW_FIELDS)
    row.update(id=session_id, status="broken", archived=False, event_count=None, reason=reason, source_cwd=None)
    return row


def _home_relative(path: str | None, home: str) -> str:
    if not path:
        return "-"
    if path == home or path.startswith(home + os.sep):
        return "~" + path[len(home) :]
    return path


@click.command("ls")
@click.option("--archived", is_flag=True, help="Include archived sessions.")
@click.option(
    "--all",
    "show_all",
    is_flag=True,
    help="List everything: archived sessions, and session directories that cannot be read (with the reason).",
)
@json_option
@pass_app
def ls(app: App, archived: bool, show_all: bool, as_json: bool) -> None:
    """List sessions, most recently updated first.

    Reads each session's metadata and one file status, never its events.
    Archived sessions are left out unless --archived (or --all) is given. A
    session whose metadata cannot be read (a damaged session.json) is left
    out with a warning on stderr naming it; --all lists it as broken, with
    the reason. An imported session shows the directory it was recorded in,
    marked "(imported)": it has no working directory of its own, so
    --continue never opens it."""
    infos, broken = app.store.scan()
    if not (archived or show_all):
        infos = [i for i in infos if not i.archived]
    rows = [_row(i) for i in infos]
    if show_all:
        rows += [_broken_row(b.id, b.reason) for b in sorted(broken, key=lambda b: b.id)]
    elif broken:
        # Left out of the rows (they have none to show), never without a word.
        ids = ", ".join(sorted(b.id for b in broken)[:5]) + (", ..." if len(broken) > 5 else "")
        click.echo(
            f"agentlog: warning: {counted(len(broken), 'session')} cannot be read and "
            f"{'is' if len(broken) == 1 else 'are'} not listed ({ids}): 'agentlog ls --all' says why, "
            "'agentlog fsck' tells more",
            err=True,
        )
    if as_json:
        emit_json(rows)
        return
    out = console()
    if not rows and app.missing:
        # Say there is no store at all (a typo in --home reads differently
        # from an empty store); none was created.
        app.missing_said = True
        out.print(Text(f"no sessions in {shown(app.missing)}: there is no store there", style="dim"))
        return
    if not rows:
        out.print(Text(f"no sessions in {app.store.home}", style="dim"))
        return
    shorts = abbreviate([r["id"] for r in rows if r["status"] != "broken"])
    home = os.path.expanduser("~")
    table = []
    for r in rows:
        if r["status"] == "broken":
            table.append(
                [
                    (r["id"], "yellow"),
                    ("-", ""),
                    ("-", ""),
                    ("-", ""),
                    ("-", ""),
                    ("broken", "bold red"),
                    (one_line(r["reason"]), "red"),
                ]
            )
            continue
        table.append(
            [
                (shorts.get(r["id"], r["id"]), "yellow"),
                (one_line(r["title"] or "-"), ""),
                (_directory(r, home), ""),
                (local_time(r["updated_at"], seconds=False), "dim"),
                (str(r["event_count"]), ""),
                ("archived" if r["archived"] else r["status"], "dim" if r["archived"] else ""),
                (one_line(r["summary"] or ""), ""),
            ]
        )
    print_lines(columns(_HEADERS, table), keep=max(len(row[0][0]) for row in table))


@click.command("new")
@click.option("--name", help="A human name for the session.")
@click.option(
    "--working-dir",
    type=click.Path(file_okay=False),
    default=os.getcwd,
    show_default="current directory",
    help="The directory the agent works in.",
)
@click.option("--model", help="The model the session starts with.")
@click.option(
    "--id", "session_id", metavar="ID", help="Use this id (A-Z a-z 0-9 _ -, at most 128) instead of a new UUIDv7."
)
@json_option
@pass_app
def new(app: App, name: str | None, working_dir: str, model: str | None, session_id: str | None, as_json: bool) -> None:
    """Create an empty session and print its id."""
    # Metadata is JSON text: refuse bytes that are not UTF-8 here, naming
    # the argument, rather than as "metadata is not JSON" from the store.
    check_text(working_dir, "the working directory", "run 'new' elsewhere or give --working-dir")
    for value, what in ((name, "--name"), (model, "--model")):
        if value is not None:
            check_text(value, what)
    with app.store.create(name=name, working_dir=working_dir, model=model, session_id=session_id) as session:
        meta = session.meta
    if as_json:
        emit_json(meta)
    else:
        click.echo(meta["id"])


COMMANDS = [ls, new]
