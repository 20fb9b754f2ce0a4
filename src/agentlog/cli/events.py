"""Commands about one session's events: append, log, tree, show, checkout, context."""

from __future__ import annotations

import contextlib
import itertools
import json
import sys
from collections.abc import Iterator
from typing import Any

import click
import orjson
from rich.highlighter import JSONHighlighter
from rich.text import Text

from .._json import big_integer
from .._streams import write_stdout
from ..errors import EventNotFound, InvalidEvent
from ..event import NIL_ID, RESERVED_KINDS, Event
from ..session import Session
from ..timeline import as_new_event
from .common import (
    App,
    CliError,
    emit_json,
    json_option,
    pass_app,
    resolve_event,
    session_command,
)
from .completion import complete_event
from .refs import labels_of, no_events
from .render import (
    BIDI_CONTROLS,
    Styled,
    abbreviate,
    console,
    counted,
    event_line,
    event_lines,
    full_text,
    joined,
    local_time,
    one_line,
    preview,
    print_styled,
    safe_text,
)
from .tree import hide_kinds, session_tree

__all__ = ["COMMANDS"]

#: Kinds ``tree`` leaves out unless --all: a checkpoint after every step
#: would bury the conversation.
HIDDEN_KINDS = frozenset({"state"})

#: Characters of record text ``context`` gathers before writing to a pipe.
_PIPE_CHUNK = 1 << 20

#: What JSON text may hold raw but a terminal obeys: DEL and the C1
#: controls (U+009B is CSI, U+009D OSC: xterm acts on them). ``show``
#: writes them as the \\u escapes JSON has for them, so the record shown
#: is still the record, and still JSON (C0 controls json escapes itself).
#: The bidirectional controls likewise (render.BIDI_CONTROLS).
_JSON_CONTROLS = {c: f"\\u{c:04x}" for c in (0x7F, *range(0x80, 0xA0), *BIDI_CONTROLS)}


def _record_json(record: Any) -> Text:
    """A record as ``show`` prints it: indented, highlighted JSON that
    sends no control character to the terminal."""
    text = JSONHighlighter()(json.dumps(record, indent=2, ensure_ascii=False).translate(_JSON_CONTROLS))
    text.no_wrap = True
    return text


#: Kinds the store writes itself, refused by ``append``: a hand-made one
#: would pass for the real thing in log, tree and exports. (``compaction``
#: is not one: docs/records.md gives its record to any harness that
#: compacts on its own.)
def _read_record(text: str | None) -> Any:
    if text is None or text == "-":
        if sys.stdin is None or (text is None and sys.stdin.isatty()):
            raise CliError("no record given: pass RECORD_JSON, or pipe it on stdin")
        stream = sys.stdin.buffer
        data: bytes | str = stream.read()
        where = "stdin"
    else:
        data, where = text, "RECORD_JSON"
    try:
        record = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise InvalidEvent(f"the record on {where} is not valid JSON: {exc}") from None
    big = big_integer(data)
    if big is not None:
        shown = big if len(big) <= 24 else f"{big[:20]}... ({len(big.lstrip('-'))} digits)"
        raise InvalidEvent(
            f"the record on {where} has an integer beyond 64 bits, {shown}, which cannot be stored "
            "exactly (JSON numbers are kept as 64-bit integers or doubles); write it as a string"
        )
    return record


#: A JSON string, or a number. Outside strings, digits occur only in numbers.
@contextlib.contextmanager
def _path_broken_hint(session: Session) -> Iterator[None]:
    """A parent missing from the active path is damage, not a typo: say so."""
    try:
        yield
    except EventNotFound as exc:
        raise CliError(f"the active path of {session.id} is broken: {exc}; see 'agentlog fsck {session.id}'") from None


def _title(session: Session) -> Styled:
    meta = session.meta
    title = Styled(session.id, "bold yellow")
    name = meta.get("title") or meta.get("name")
    if name:
        title.add(f"  {one_line(str(name))}", "bold")
    return title.add(f"  ({counted(len(session), 'event')})", "dim")


@click.command("append")
@click.argument("session", metavar="SESSION")
@click.argument("kind")
@click.argument("record_json", metavar="[RECORD_JSON]", required=False)
@click.option("--role", help="The event's role (user, assistant, tool, system...).")
@json_option
@pass_app
def append(app: App, session: str, kind: str, record_json: str | None, role: str | None, as_json: bool) -> None:
    """Append one event to a session as a child of HEAD; print its id.

    The record is JSON given as RECORD_JSON, or read from stdin when
    RECORD_JSON is '-' or left out. It returns once the event is durable.
    An integer beyond 64 bits is refused, as it cannot be stored exactly:
    write it as a string. The kind 'tombstone' is refused: only 'agentlog
    fsck --repair' writes it."""
    # Read and check the record before taking the writer's lease, so a slow
    # producer or a bad record never holds (or recovers) the session.
    if kind in RESERVED_KINDS:
        raise CliError(f"kind {kind!r} is reserved: {RESERVED_KINDS[kind]}")
    record = _read_record(record_json)
    as_new_event((kind, record, role))  # kind, role and record checks, before the lease
    with app.open(session, write=True) as opened:
        event = opened.append(kind, record, role=role)
    if as_json:
        emit_json({k: v for k, v in event.to_dict().items() if k != "record"})
    else:
        click.echo(event.id)


def _emit_or_shorts(session: Session, events: list[Event], as_json: bool) -> dict[str, str] | None:
    """Print ``events`` as JSON, or say there are none; either way None.
    Otherwise the short ids to draw them with."""
    if as_json:
        emit_json([e.to_dict() for e in events])
        return None
    if not events:
        console().print(Text(no_events(session), style="dim"))
        return None
    return abbreviate((e.id for e in session.entries()), only=[e.id for e in events])


@click.command("log")
@session_command()
@click.option("--full", is_flag=True, help="Load blob payloads so their previews show.")
@click.option("-n", "--limit", type=click.IntRange(min=1), metavar="N", help="Show only the N events nearest HEAD.")
@json_option
def log(app: App, session: Session, full: bool, limit: int | None, as_json: bool) -> None:
    """Show the active path, root to HEAD, one line per event.

    Each line: short id, local time, kind, role, and a one-line preview of
    the record. Payloads kept in blobs are not read unless --full."""
    walk = session.walk()
    with _path_broken_hint(session):
        # No path is longer than sys.maxsize, which is all islice takes.
        events = list(itertools.islice(walk, min(limit, sys.maxsize)) if limit else walk)
    events.reverse()
    previews: dict[str, str] = {}
    if full and as_json:
        events = [session.resolve(e) for e in events]
    elif full:
        # One blob in memory at a time: its line needs only its preview.
        previews = {e.id: preview(session.resolve(e)) for e in events if e.digest is not None}
    shorts = _emit_or_shorts(session, events, as_json)
    if shorts is not None:
        print_styled(event_lines(events, shorts, session.head, previews))


@click.command("tree")
@session_command()
@click.option("--all", "show_all", is_flag=True, help="Show 'state' checkpoint events too (hidden by default).")
@json_option
def tree(app: App, session: Session, show_all: bool, as_json: bool) -> None:
    """Draw every branch of a session: HEAD, labels, compactions and
    branch summaries marked.

    A run of events without branching stays at one depth. At a branch
    point, the branch leading to HEAD (else the longest) goes on at the same
    depth, marked "↳ branch i/n", and the others hang under the branch
    point as labelled subtrees, so retrying a thousand times does not push
    the path a thousand levels right. The 'state' checkpoints saved after every step are
    hidden unless --all (their children hang from the event before them).
    With --json, every node comes from the index alone, state included."""
    entries = session.entries()
    head = session.head
    if as_json:
        children: dict[str, list[str]] = {}
        for e in entries:
            children.setdefault(e.parent_id, []).append(e.id)
        emit_json(
            {
                "session": session.id,
                "head": head,
                "labels": labels_of(session.meta),
                "roots": children.get(NIL_ID, []),
                "nodes": [
                    {
                        "id": e.id,
                        "parent_id": e.parent_id,
                        "branch_from": e.branch_from,
                        "kind": e.kind,
                        "role": e.role,
                        "timestamp": e.timestamp,
                        "digest": e.digest,
                        "children": children.get(e.id, []),
                    }
                    for e in entries
                ],
            }
        )
        return
    shown, shown_head = hide_kinds(entries, head, frozenset() if show_all else HIDDEN_KINDS)
    wanted = {e.id for e in shown}
    texts = {e.id: preview(e, 80) for e in session.events() if e.id in wanted}  # the log read in bulk
    marks: dict[str, list[str]] = {}
    for name, target in sorted(labels_of(session.meta).items()):
        marks.setdefault(target, []).append(name)
    print_styled(session_tree(_title(session), shown, shown_head, texts, labels=marks))


@click.command("show")
@session_command()
@click.argument("event", shell_complete=complete_event)
@json_option
def show(app: App, session: Session, event: str, as_json: bool) -> None:
    """Show one event with its full record.

    A payload kept in a blob is loaded and its digest verified. EVENT is
    HEAD, a label, a short id, a unique prefix of at least 4 hex digits
    or a full id, optionally followed by ~N (N parents up)."""
    found = session.resolve(session.event(resolve_event(session, event)))
    children = session.children().get(found.id, [])
    if as_json:
        doc = found.to_dict()
        doc["children"] = children
        doc["head"] = found.id == session.head
        emit_json(doc)
        return
    out = console()
    rows = [
        ("id", found.id + ("  ◀ HEAD" if found.id == session.head else "")),
        ("parent", "(root)" if found.parent_id == NIL_ID else found.parent_id),
    ]
    if found.branch_from:
        rows.append(("branch from", found.branch_from))
    rows += [
        ("kind", found.kind),
        ("role", found.role or "-"),
        ("time", f"{local_time(found.timestamp)}  ({found.timestamp})"),
    ]
    if found.digest:
        rows.append(("blob", found.digest))
    rows.append(("children", ", ".join(children) if children else "-"))
    for key, value in rows:
        line = Text()
        line.append(f"{key:<12}", style="bold")  # the name alone: a Text's own style spans all it holds
        line.append(value)
        out.print(line, soft_wrap=True)
    out.print(Text("record", style="bold"))
    out.print(_record_json(found.record), soft_wrap=True)  # a pipe gets whole lines: the JSON stays JSON


@click.command("checkout")
@session_command(write=True)
@click.argument("event", shell_complete=complete_event)
@json_option
def checkout(app: App, session: Session, event: str, as_json: bool) -> None:
    """Move HEAD to EVENT durably, appending no event.

    EVENT is HEAD, a label, a short id, a unique prefix or a full id
    (each optionally followed by ~N, N parents up), or 'root' to make
    the next append start a new root. The next append
    becomes a child of EVENT, starting a branch if EVENT has children."""
    previous = session.head
    target = resolve_event(session, event, allow_root=True)
    session.checkout(target)
    if as_json:
        emit_json({"session": session.id, "head": target, "previous": previous})
        return
    if target == NIL_ID:
        click.echo("HEAD is now the root (the next append starts a new root)")
        return
    shown = session.event(target)
    shorts = abbreviate((e.id for e in session.entries()), only=[target])
    line = Styled("HEAD is now ").add_styled(event_line(shown, shorts[target], preview(shown)))
    console().print(joined([line]), no_wrap=True, overflow="ellipsis")


@click.command("context")
@session_command()
@click.option("--resolve", is_flag=True, help="Load blob payloads (verified) into the records.")
@json_option
def context(app: App, session: Session, resolve: bool, as_json: bool) -> None:
    """Show the events the model would get.

    That is the latest compaction on the active path (its summary), the
    events it kept, and everything after it; without a compaction, the
    whole path. Each event is shown in full; payloads in blobs are named,
    not read, unless --resolve."""
    with _path_broken_hint(session):
        events = session.context(resolve=resolve)
    shorts = _emit_or_shorts(session, events, as_json)
    if shorts is None:
        return
    out = console()
    # A pipe gets the same lines, plain, a megabyte at a time: rich spent
    # 0.2 ms printing each event, 23 s for 100,000, the store 2 s reading them.
    pending: list[str] = []
    size = 0
    for e in events:
        body = f"<payload in blob {e.digest}; --resolve loads it>" if not e.loaded else full_text(e.kind, e.record)
        if not out.is_terminal:
            pending.append(f"── {e.kind} · {e.role or '-'} · {shorts[e.id]} · {local_time(e.timestamp)}\n")
            pending.append(safe_text(body).expandtabs(8) + "\n")  # tab stops as rich sets them
            size += len(body)
            if size > _PIPE_CHUNK:
                write_stdout("".join(pending))
                pending, size = [], 0
            continue
        header = Text(f"── {e.kind}", style="bold")
        header.append(f" · {e.role or '-'}", style="cyan")
        header.append(f" · {shorts[e.id]} · {local_time(e.timestamp)}", style="dim")
        out.print(header)
        out.print(Text(safe_text(body)), soft_wrap=True)
    if pending:
        write_stdout("".join(pending))


COMMANDS = [append, log, tree, show, checkout, context]
