"""search: full-text search across every session (see agentlog.search)."""

from __future__ import annotations

import sys

import click
from rich.text import Text

from ..errors import AgentlogError
from ..search import reindex, search, searches_itself
from ..shortid import short_ids
from .common import App, emit_json, json_option, pass_app
from .completion import complete_session
from .progress import progress_bar
from .refs import resolve_session
from .render import console, counted, local_time, one_line, safe_text
from .timespec import Since

__all__ = ["COMMANDS"]


@click.command("search")
@click.argument("query", nargs=-1)
@click.option("--session", "session_ref", metavar="SESSION", shell_complete=complete_session, help="Only this session.")
@click.option("--kind", help="Only events of this kind (message, tool_call, tool_result, ...).")
@click.option("--role", help="Only events with this role (user, assistant, tool, ...).")
@click.option(
    "--since",
    type=Since(),
    metavar="WHEN",
    help="Only events at or after WHEN: an age (7d, 12h) or a date (2026-01-31).",
)
@click.option(
    "--cwd",
    type=click.Path(file_okay=False),
    metavar="DIR",
    help="Only sessions whose working directory (an imported session's: where it was recorded) is DIR or below it.",
)
@click.option(
    "-n",
    "--limit",
    type=click.IntRange(min=1),
    default=20,
    show_default=True,
    help="Show at most this many hits.",
)
@click.option(
    "--reindex",
    "rebuild",
    is_flag=True,
    help="Rebuild the index from every session first (with a progress bar); with no QUERY, only rebuild.",
)
@json_option
@pass_app
def search_command(
    app: App,
    query: tuple[str, ...],
    session_ref: str | None,
    kind: str | None,
    role: str | None,
    since: str | None,
    cwd: str | None,
    limit: int,
    rebuild: bool,
    as_json: bool,
) -> None:
    """Find events by their text across all history, best match first.

    Covers every session, every branch (abandoned ones too), events before
    a compaction, tool calls (name and arguments) and tool results. QUERY
    is words (all must match), "a phrase", prefix*, and OR / NOT between
    words. The index is derived: it lives in <home>/search/, catches up
    with new events on every search, and deleting it loses nothing."""
    store = app.store
    if rebuild and searches_itself(store):
        # Its index is written with each event: there is nothing to rebuild,
        # and "indexed N events" would claim work that changed nothing.
        note = "this store keeps its own search index as it writes: there is nothing to rebuild"
        if not query:
            if as_json:
                emit_json({"reindexed": False, "sessions": 0, "events": 0, "note": note})
            else:
                click.echo(note)
            return
        rebuild = False
    if rebuild:
        with progress_bar("indexing sessions") as update:
            stats = reindex(store, progress=update)
        if not query:
            if as_json:
                emit_json({"reindexed": True, "sessions": stats.sessions, "events": stats.events_added})
            else:
                click.echo(f"indexed {counted(stats.events_added, 'event')} of {counted(stats.sessions, 'session')}")
            return
    if not query:
        raise click.UsageError("give a QUERY to search for (or --reindex alone)")
    sid = resolve_session(store, session_ref) if session_ref else None
    # SQLite's LIMIT takes a 64-bit integer; no index holds more hits than
    # that, so a larger N asks for the same thing: every hit.
    limit = min(limit, sys.maxsize)
    # The catch-up is quick once the index exists; the first search (or the
    # first after an index of an unknown version was dropped) indexes
    # everything, and a bar then says so rather than the command seeming
    # to hang.
    with progress_bar("indexing new events", delay=1.0) as update:
        hits = search(
            store,
            " ".join(query),
            session=sid,
            kind=kind,
            role=role,
            since=since,
            cwd=cwd,
            limit=limit,
            progress=update,
        )
    if as_json:
        emit_json([h.to_dict() for h in hits])
        return
    out = console()
    if not hits:
        out.print(Text("no matches", style="dim"))
        return
    sessions = short_ids(list(store.backend.session_ids()))
    titles: dict[str, str] = {}
    for hit in hits:
        if hit.session_id not in titles:
            try:
                meta = store.meta(hit.session_id)
            except AgentlogError:
                meta = {}  # deleted or damaged since the catch-up: the hit still shows, untitled
            titles[hit.session_id] = one_line(str(meta.get("title") or meta.get("name") or ""))
    for hit in hits:
        head = Text(no_wrap=True, overflow="ellipsis")
        head.append(sessions.get(hit.session_id, hit.session_id), style="yellow")
        head.append(f" {titles[hit.session_id]}" if titles[hit.session_id] else "", style="bold")
        # The event's last 8 hex digits: a valid ref in nearly every session,
        # without reading each session's index to make it provably unique.
        head.append(f"  {hit.event_id.replace('-', '')[-8:]}", style="yellow")
        head.append(f"  {local_time(hit.timestamp)}  {hit.kind}", style="dim")
        head.append(f"  {hit.role or '-'}", style="cyan")
        # One character for one (offsets hold): a newline would split the
        # hit, a control character would reach the terminal.
        text = safe_text(hit.snippet.replace("\n", " ").replace("\t", " "))
        body = Text("    " + text)
        for start, end in hit.highlights:
            body.stylize("bold reverse", 4 + start, 4 + end)
        out.print(head)
        out.print(body, soft_wrap=True)


COMMANDS = [search_command]
