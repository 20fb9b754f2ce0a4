"""Verbs on whole sessions: fork, compact, archive, unarchive, rename,
label, continue, rm.

Labels are names for events kept in the session's metadata
(``labels: {name: event id}``), not events: setting or moving one never
moves HEAD or adds to the timeline, and every command accepts a label
wherever it takes an EVENT.
"""

from __future__ import annotations

import os
from typing import Any

import click

from ..errors import AgentlogError, NothingToContinue
from ..metafields import label_name_problem
from ..session import Session
from ..store import Store
from ..tokens import context_tokens
from .common import App, CliError, emit_json, json_option, pass_app
from .completion import complete_event, complete_session
from .location import shown
from .refs import check_text, labels_of, resolve_event, resolve_session
from .render import counted, one_line

__all__ = ["COMMANDS", "check_label", "not_done"]


def check_label(name: str) -> str:
    """A label name, or CliError saying why it cannot be one."""
    check_text(name, "label")  # bytes that are not UTF-8 are shown as every path is
    problem = label_name_problem(name)
    if problem is not None:
        raise CliError(f"label {name!r} is not valid: {problem}")
    return name


def _session_arg(f: Any) -> Any:
    return click.argument("session", metavar="SESSION", shell_complete=complete_session)(f)


def _summary(session: Session) -> dict[str, Any]:
    meta = session.meta
    return {
        "id": session.id,
        "title": meta.get("title") or meta.get("name"),
        "head": session.head,
        "events": len(session),
        "archived": bool(meta.get("archived")),
        "working_dir": meta.get("working_dir"),
    }


@click.command("fork")
@_session_arg
@click.argument("event", required=False, metavar="[EVENT]", shell_complete=complete_event)
@click.option("--name", help="A name for the new session.")
@json_option
@pass_app
def fork(app: App, session: str, event: str | None, name: str | None, as_json: bool) -> None:
    """Start a new session holding the path from the root to EVENT (HEAD
    by default); print its id. The original is not changed."""
    if name is not None:
        check_text(name, "--name")
    with app.open(session) as source:
        at = resolve_event(source, event or "HEAD")  # HEAD at the root is an error, as with `fork S HEAD`
        with source.fork(at, name=name) as forked:
            doc = _summary(forked)
            doc["forked_from"] = {"session": source.id, "event": at}
    if as_json:
        emit_json(doc)
    else:
        click.echo(doc["id"])


@click.command("compact")
@_session_arg
@click.option(
    "--keep-tokens",
    type=click.IntRange(min=0),
    metavar="N",
    help="Keep about N tokens of recent events verbatim (default: the policy's).",
)
@click.option(
    "--split-turn",
    is_flag=True,
    help="Cut inside the turn in progress too, at an assistant step, when it alone is over --keep-tokens "
    "(one request with many tool steps).",
)
@json_option
@pass_app
def compact(app: App, session: str, keep_tokens: int | None, split_turn: bool, as_json: bool) -> None:
    """Summarize older context into a compaction event; nothing is deleted.

    The model's context then starts at the summary; every earlier event
    stays in the log, in search and in exports. The turn in progress (the
    last user message and what followed it) is kept whole unless
    --split-turn."""
    with app.open(session, write=True) as opened:
        event = opened.compact(keep_tokens=keep_tokens, split_turn=split_turn)
        doc: dict[str, Any] = {"session": opened.id, "compacted": event is not None}
        if event is None:
            # Say why: what is kept verbatim already holds the whole context.
            kept = opened.compaction.keep_tokens if keep_tokens is None else keep_tokens
            doc.update(context_tokens=context_tokens(opened.context(resolve=True)), keep_tokens=kept)
        if event is not None:
            record = event.record or {}
            doc.update(
                event=event.id,
                tokens_before=record.get("tokens_before"),
                tokens_after=record.get("tokens_after"),
            )
    if as_json:
        emit_json(doc)
    elif event is None:
        within = doc["context_tokens"] <= doc["keep_tokens"]
        if within:
            why = f"within the {doc['keep_tokens']:,} kept verbatim (--keep-tokens)"
        elif split_turn:
            why = (
                f"over the {doc['keep_tokens']:,} kept verbatim (--keep-tokens), but the turn in progress "
                "has no assistant step to cut at"
            )
        else:
            why = (
                f"the turn in progress, which is kept whole although it is over the {doc['keep_tokens']:,} "
                "kept verbatim (--keep-tokens); --split-turn cuts inside it"
            )
        tokens = doc["context_tokens"]
        click.echo(f"{doc['session']}: nothing to compact: its context, about {tokens:,} tokens, is {why}")
    else:
        click.echo(
            f"{doc['session']}: compacted ({doc['tokens_before']:,} -> "
            f"{doc['tokens_after']:,} tokens); compaction event {doc['event']}"
        )


def _set_archived(app: App, sessions: tuple[str, ...], archived: bool, as_json: bool) -> None:
    # Every ref is resolved before any session is changed, so a typo changes
    # nothing; past that, one session that fails (a writer holds it, damage)
    # is reported and the others are still done.
    store = app.store
    ids = list(dict.fromkeys(resolve_session(store, ref) for ref in sessions))
    verb = "archived" if archived else "unarchived"
    results: list[dict[str, Any]] = []  # in the order given, done or failed
    for sid in ids:
        try:
            with store.open(sid) as opened:
                opened.archive() if archived else opened.unarchive()
        except (AgentlogError, OSError) as exc:
            results.append(not_done(sid, f"not {verb}", exc))
        else:
            results.append({"id": sid, "archived": archived})
    if as_json:
        emit_json(results)
    else:
        for r in results:
            if "error" not in r:
                click.echo(f"{r['id']}: {verb}")
    if any("error" in r for r in results):
        raise click.exceptions.Exit(1)


@click.command("archive")
@click.argument("sessions", nargs=-1, required=True, metavar="SESSION...", shell_complete=complete_session)
@json_option
@pass_app
def archive(app: App, sessions: tuple[str, ...], as_json: bool) -> None:
    """Hide sessions from 'ls' (and --continue) without deleting anything."""
    _set_archived(app, sessions, True, as_json)


@click.command("unarchive")
@click.argument("sessions", nargs=-1, required=True, metavar="SESSION...", shell_complete=complete_session)
@json_option
@pass_app
def unarchive(app: App, sessions: tuple[str, ...], as_json: bool) -> None:
    """Show archived sessions in 'ls' again."""
    _set_archived(app, sessions, False, as_json)


@click.command("rename")
@_session_arg
@click.argument("title")
@json_option
@pass_app
def rename(app: App, session: str, title: str, as_json: bool) -> None:
    """Set a session's title; commands then accept the title as SESSION
    while no other session has it."""
    title = check_text(title, "TITLE").strip()
    if not title:
        raise CliError("the title is empty")
    with app.open(session, write=True) as opened:
        opened.set_title(title)
        doc = _summary(opened)
    if as_json:
        emit_json(doc)
    else:
        click.echo(f"{doc['id']}: renamed to {title!r}")


@click.command("label")
@_session_arg
@click.argument("name", required=False)
@click.argument("event", required=False, metavar="[EVENT]", shell_complete=complete_event)
@click.option("--delete", is_flag=True, help="Remove the label NAME.")
@json_option
@pass_app
def label(app: App, session: str, name: str | None, event: str | None, delete: bool, as_json: bool) -> None:
    """Name an event (HEAD by default); with no NAME, list the labels.

    A label is kept in the session's metadata, so setting one never moves
    HEAD or adds an event. Use it anywhere an EVENT is taken
    ('agentlog show S NAME', 'agentlog checkout S NAME~2')."""
    if name is None:
        if delete:
            raise click.UsageError("--delete needs the NAME of the label to remove")
        with app.open(session) as opened:
            labels = labels_of(opened.meta)
        if as_json:
            emit_json(labels)
        else:
            for key, target in sorted(labels.items()):
                click.echo(f"{key}\t{target}")
        return
    with app.open(session, write=True) as opened:
        labels = labels_of(opened.meta)
        if delete:
            if event is not None:
                raise click.UsageError("--delete takes no EVENT")
            if name not in labels:
                raise CliError(f"session {opened.id} has no label {name!r}")
            target = labels.pop(name)
        else:
            check_label(name)
            target = resolve_event(opened, event or "HEAD")
            labels[name] = target
        opened.update_meta(labels=labels)
        sid = opened.id
    if as_json:
        emit_json({"session": sid, "label": name, "event": target, "deleted": delete})
    elif delete:
        click.echo(f"{sid}: label {name!r} removed (it named {target})")
    else:
        click.echo(f"{sid}: {name} -> {target}")


@click.command("continue")
@click.argument("directory", required=False, type=click.Path(file_okay=False), metavar="[DIR]")
@click.option(
    "--reroot",
    is_flag=True,
    help="If no session belongs to DIR but one's project was moved here (same "
    "directory name, old path gone), point it at DIR.",
)
@json_option
@pass_app
def continue_command(app: App, directory: str | None, reroot: bool, as_json: bool) -> None:
    """Print the latest session of DIR (default: the current directory).

    This is the session an agent started with --continue would resume."""
    cwd = os.path.abspath(directory or os.getcwd())
    # Metadata is JSON, so no session can have a working directory whose
    # name is not UTF-8: say so, rather than look for one.
    check_text(cwd, "directory", "no session can belong to it (agentlog keeps working directories as UTF-8 text)")
    try:
        opened = app.store.continue_session(cwd, reroot=reroot, readonly=not reroot)
    except NothingToContinue as exc:
        if not exc.moved:
            raise
        # The library's hint names its keyword (reroot=True); here it is an option.
        raise CliError(
            f"no session to continue in {shown(cwd)}; session {exc.moved[0]} was started in a "
            f"directory of the same name that no longer exists: run 'agentlog continue --reroot' to adopt it"
        ) from None
    with opened:
        doc = _summary(opened)
    doc["rerooted"] = reroot and doc["working_dir"] == cwd
    if as_json:
        emit_json(doc)
    else:
        click.echo(doc["id"] + (f"  {one_line(doc['title'])}" if doc["title"] else ""))


@click.command("rm")
@click.argument("sessions", nargs=-1, required=True, metavar="SESSION...", shell_complete=complete_session)
@click.option("-y", "--yes", is_flag=True, help="Delete without asking.")
@json_option
@pass_app
def rm(app: App, sessions: tuple[str, ...], yes: bool, as_json: bool) -> None:
    """Delete sessions and everything stored for them, after confirmation.

    Without --yes it lists what it would delete and asks on stderr, reading
    the answer from stdin (a terminal, or a pipe: 'echo y | agentlog rm S'
    is consent); an answer other than yes, or none (stdin empty or
    closed), deletes nothing."""
    store = app.store
    # Resolve every ref first: a typo deletes nothing.
    ids = list(dict.fromkeys(resolve_session(store, ref) for ref in sessions))
    if not yes:
        for sid in ids:
            click.echo(_rm_line(store, sid), err=True)
        noun = "session" if len(ids) == 1 else "sessions"
        click.confirm(f"delete {len(ids)} {noun}?", abort=True, err=True)
    deleted: list[str] = []
    failed: list[dict[str, str]] = []
    for sid in ids:
        # One session that cannot be deleted (a writer holds it) stops
        # nothing: the others are deleted, and every outcome is reported.
        try:
            store.delete(sid)
        except (AgentlogError, OSError) as exc:
            failed.append(not_done(sid, "not deleted", exc))
        else:
            deleted.append(sid)
    if as_json:
        emit_json({"deleted": deleted, **({"failed": failed} if failed else {})})
    else:
        for sid in deleted:
            click.echo(f"{sid}: deleted")
    if failed:
        raise click.exceptions.Exit(1)


def _rm_line(store: Store, sid: str) -> str:
    """How ``rm`` lists a session before asking. A damaged session is
    listed as unreadable, and can still be deleted: deleting needs only
    its directory and its lease, never its metadata."""
    try:
        info = store.info(sid)
    except (AgentlogError, OSError) as exc:
        reason = " ".join(str(exc).split())
        return f"{sid}  (unreadable: {reason})"
    return f"{info.id}  {one_line(info.title or '-')}  ({counted(info.event_count, 'event')})"


def not_done(sid: str, what: str, exc: AgentlogError | OSError) -> dict[str, str]:
    """Say on stderr, as one error line, that ``what`` (``"not deleted"``)
    befell session ``sid`` because of ``exc``; its ``{"id", "error"}`` for --json."""
    if isinstance(exc, AgentlogError) or not exc.strerror:
        message = str(exc)
    else:  # as the CLI words any OS error: what, then where
        message = exc.strerror + (f": {exc.filename}" if exc.filename else "")
    message = " ".join(message.split())
    click.echo(f"agentlog: error: {sid}: {what}: {message}", err=True)
    return {"id": sid, "error": message}


COMMANDS = [fork, compact, archive, unarchive, rename, label, continue_command, rm]
