"""Housekeeping: gc, prune (explicit retention), du, stats.

Nothing here runs by itself: agentlog never deletes a session unless
asked, and every deleting command can show first what it would do
(--dry-run) and asks before deleting unless given --yes.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from typing import Any

import click
import orjson
from rich.text import Text

from ..backends.files import FileBackend
from ..backends.files.gc import GcItem, collect, usage
from ..backends.registry import scheme_of
from ..errors import AgentlogError, SessionLocked, SessionNotFound
from ..event import Event
from ..export import totals
from ..session import Session
from ..shortid import short_ids
from ..store import Store
from .common import App, emit_json, json_option, needs, pass_app
from .completion import complete_session
from .progress import progress_bar
from .refs import resolve_session
from .render import Column, columns, console, counted, local_time, one_line, print_lines
from .timespec import Age, ago
from .verbs import not_done

__all__ = ["COMMANDS", "on_disk"]


def on_disk(store: Store) -> str | None:
    """The home directory of a file-backed store; None for other stores
    (a database keeps no orphaned files: deleting a session deletes its blobs)."""
    return store.backend.home if isinstance(store.backend, FileBackend) else None


def _human(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def _item_json(item: GcItem) -> dict[str, Any]:
    return {"path": item.path, "what": item.what, "bytes": item.bytes, "session": item.session_id}


@click.command("gc")
@click.option("--dry-run", is_flag=True, help="List what would be removed; remove nothing.")
@click.option(
    "--quarantine",
    is_flag=True,
    help="Also remove quarantine files (bytes 'fsck --repair' moved aside), after confirmation.",
)
@click.option(
    "--quarantine-older-than",
    type=Age(),
    default="30d",
    show_default=True,
    metavar="AGE",
    help="With --quarantine, only files older than AGE.",
)
@click.option("-y", "--yes", is_flag=True, help="Remove quarantine files without asking.")
@json_option
@pass_app
def gc(app: App, dry_run: bool, quarantine: bool, quarantine_older_than: float, yes: bool, as_json: bool) -> None:
    """Remove what no session needs: orphaned blobs and leftovers of
    interrupted creates and deletes; old quarantine files if asked.

    A blob is orphaned when no event line names it (a crash between
    writing the blob and its event). Anything younger than an hour is
    left alone, as are the blobs of a session a writer holds (reported
    busy; a session with no blob files has nothing to collect). A session
    with a damaged line or a quarantine file keeps every blob: the damaged
    bytes may be the only reference to one (reported; run fsck)."""
    if not quarantine:
        needs("--quarantine", ("--yes", "yes"), ("--quarantine-older-than", "quarantine_older_than"))
    home = on_disk(app.store)
    if home is None:
        if as_json:
            # The documented shape, every key there (scripts read ``busy``),
            # with a note saying why it is empty.
            emit_json(
                {
                    "dry_run": dry_run,
                    "collected": [],
                    "bytes": 0,
                    "busy": [],
                    "damaged": [],
                    "quarantine_kept": [],
                    "note": "no store there" if app.missing else "not a file store",
                }
            )
        else:
            # (a store that is not there has nothing either; the warning names it)
            click.echo(
                "nothing to collect"
                + ("" if app.missing else f": gc cleans file stores; a {_kind(app.store)} store keeps itself")
            )
        return
    if quarantine and not dry_run and not yes:
        preview = collect(home, dry_run=True, quarantine=True, quarantine_age_s=quarantine_older_than)
        doomed = [i for i in preview.items if i.what == "quarantine"]
        if doomed:
            for item in doomed:
                click.echo(f"{item.path} ({_human(item.bytes)})", err=True)
            click.confirm(f"remove {len(doomed)} quarantine files for good?", abort=True, err=True)
    with progress_bar("collecting") as update:
        report = collect(
            home,
            dry_run=dry_run,
            quarantine=quarantine,
            quarantine_age_s=quarantine_older_than,
            progress=update,
        )
    if as_json:
        emit_json(
            {
                "dry_run": dry_run,
                "collected": [_item_json(i) for i in report.items],
                "bytes": report.bytes,
                "busy": report.busy,
                "damaged": [{"id": sid, "where": where} for sid, where in report.damaged],
                "quarantine_kept": [_item_json(i) for i in report.quarantine_kept],
            }
        )
        return
    verb = "would remove" if dry_run else "removed"
    for item in report.items:
        click.echo(f"{verb} {item.what}: {item.path} ({_human(item.bytes)})")
    for sid in report.busy:
        click.echo(f"skipped {sid}: a writer holds it", err=True)
    for sid, where in report.damaged:
        click.echo(f"kept every blob of {sid}: {where} (see 'agentlog fsck {sid}')", err=True)
    if report.quarantine_kept:
        kept = counted(len(report.quarantine_kept), "quarantine file")
        click.echo(f"{kept} kept (see 'agentlog gc --quarantine')", err=True)
    click.echo(f"{verb} {counted(len(report.items), 'item')}, {_human(report.bytes)}")


@click.command("prune")
@click.option(
    "--older-than",
    type=Age(),
    required=True,
    metavar="AGE",
    help="Sessions last updated more than AGE ago (90d, 12w, 1y).",
)
@click.option("--archived-only", is_flag=True, help="Only archived sessions.")
@click.option("--dry-run", is_flag=True, help="List what would be deleted; delete nothing.")
@click.option("-y", "--yes", is_flag=True, help="Delete without asking.")
@json_option
@pass_app
def prune(app: App, older_than: float, archived_only: bool, dry_run: bool, yes: bool, as_json: bool) -> None:
    """Delete sessions not updated for a given time: explicit retention.

    agentlog never deletes on its own; this lists the sessions it would
    delete and asks first (unless --yes)."""
    store = app.store
    cutoff = ago(older_than)
    doomed = [
        i for i in store.list(archived=True) if (i.updated_at or "") < cutoff and (i.archived or not archived_only)
    ]
    rows: list[dict[str, Any]] = [
        {
            "id": i.id,
            "title": i.title,
            "updated_at": i.updated_at,
            "events": i.event_count,
            "archived": i.archived,
        }
        for i in doomed
    ]
    if not dry_run and doomed and not yes:
        for r in rows:
            click.echo(f"{r['id']}  {one_line(r['title'] or '-')}  updated {local_time(r['updated_at'])}", err=True)
        question = "delete this session?" if len(doomed) == 1 else f"delete these {len(doomed)} sessions?"
        click.confirm(question, abort=True, err=True)
    deleted: list[str] = []
    busy: list[str] = []
    changed: list[str] = []
    failed: list[dict[str, str]] = []
    if not dry_run:
        with progress_bar("pruning") as update:
            for n, info in enumerate(doomed):
                # Carry on past any one session: a writer holding it means it
                # is in use, so not stale (skipped, as gc skips it); any other
                # failure is reported, and the others are still deleted.
                try:
                    # Listed, perhaps minutes ago while the question waited
                    # for an answer: a session used (or unarchived) since is
                    # no longer stale, and deleting it would lose that work.
                    now = store.info(info.id)
                    if (now.updated_at or "") >= cutoff or (archived_only and not now.archived):
                        changed.append(info.id)
                        continue
                    store.delete(info.id)
                except SessionLocked:
                    busy.append(info.id)
                except SessionNotFound:
                    pass  # deleted by someone else since it was listed: nothing left to do
                except (AgentlogError, OSError) as exc:
                    failed.append(not_done(info.id, "not deleted", exc))
                else:
                    deleted.append(info.id)
                finally:
                    update(n + 1, len(doomed))
    if as_json:
        emit_json(
            {
                "dry_run": dry_run,
                "cutoff": cutoff,
                "sessions": rows,
                "deleted": deleted,
                "busy": busy,
                "changed": changed,
                "failed": failed,
            }
        )
    else:
        verb = "would delete" if dry_run else "deleted"
        done = {r["id"] for r in rows} if dry_run else set(deleted)
        for r in rows:
            if r["id"] in done:
                click.echo(
                    f"{verb} {r['id']}  {one_line(r['title'] or '-')}  "
                    f"(updated {local_time(r['updated_at'])}, {counted(r['events'], 'event')})"
                )
        for sid in busy:
            click.echo(f"skipped {sid}: a writer holds it", err=True)
        for sid in changed:
            click.echo(f"skipped {sid}: updated since it was listed", err=True)
        click.echo(f"{verb} {counted(len(done), 'session')} updated before {local_time(cutoff)}")
    if failed:
        raise click.exceptions.Exit(1)


_DU_HEADERS = [
    # Never cut: the id is the ref to type back. A UUID shows as its short
    # form; an id made elsewhere (an import's "claude-<uuid>") is whole.
    # On a narrow terminal the title narrows first, then the parts are left
    # out before the total (render.Column).
    Column("ID", 128, "<"),
    Column("TITLE", 40, "<", floor=8, drop=5),
    Column("CHUNKS", 10, ">", drop=2),
    Column("BLOBS", 16, ">", drop=3),
    Column("INDEX", 10, ">", drop=1),
    Column("QUARANTINE", 10, ">", drop=4),
    Column("TOTAL", 10, ">"),
]


@click.command("du")
@json_option
@pass_app
def du(app: App, as_json: bool) -> None:
    """Bytes on disk per session (chunks, blobs, index, quarantine), largest
    first, and for the whole home (with the search index)."""
    home = on_disk(app.store)
    if home is None:
        if as_json:
            emit_json(
                {
                    "sessions": [],
                    "search_index": 0,
                    "total": 0,
                    "note": "no store there" if app.missing else "not a file store",
                }
            )
        else:
            said = "nothing on disk" if app.missing else f"du measures file stores; this is a {_kind(app.store)} store"
            click.echo(said)
        return
    rows = sorted(usage(home), key=lambda u: u.total, reverse=True)
    search_dir = os.path.join(home, "search")
    search_bytes = sum(
        os.path.getsize(os.path.join(search_dir, f))
        for f in (os.listdir(search_dir) if os.path.isdir(search_dir) else [])
    )
    shared = sum(u.blobs_shared for u in rows)
    total = sum(u.total for u in rows) - shared + search_bytes
    if as_json:
        emit_json(
            {
                "sessions": [
                    {
                        "id": u.session_id,
                        "chunks": u.chunks,
                        "chunk_files": u.chunk_files,
                        "blobs": u.blobs,
                        "blob_files": u.blob_files,
                        "blobs_shared": u.blobs_shared,
                        "index": u.index,
                        "quarantine": u.quarantine,
                        "other": u.other,
                        "total": u.total,
                    }
                    for u in rows
                ],
                "search_index": search_bytes,
                "total": total,
            }
        )
        return
    shorts = short_ids([u.session_id for u in rows])
    titles = {i.id: i.title or "-" for i in app.store.list(archived=True)}
    table = [
        [
            (shorts[u.session_id], "yellow"),
            (one_line(titles.get(u.session_id, "-")), ""),
            (_human(u.chunks), ""),
            (f"{_human(u.blobs)} ({u.blob_files})", ""),
            (_human(u.index), ""),
            (_human(u.quarantine) if u.quarantine else "-", ""),
            (_human(u.total), "bold"),
        ]
        for u in rows
    ]
    if table:
        print_lines(columns(_DU_HEADERS, table), keep=max(len(row[0][0]) for row in table))
    linked = f" (blobs shared by hard links counted once: {_human(shared)} less)" if shared else ""
    click.echo(
        f"{counted(len(rows), 'session')}, search index {_human(search_bytes)}; total {_human(total)} in {home}{linked}"
    )


def _kind(store: Store) -> str:
    """The store's scheme (``sqlite``, ``postgresql``, ``memory``), never its
    URL, which may carry a password."""
    return scheme_of(store.url)


def _session_stats(session: Session) -> dict[str, Any]:
    kinds: Counter[str] = Counter()
    sizes: Counter[str] = Counter()
    blobs: set[str] = set()

    def each_event() -> Iterator[Event]:
        """Every event once, counted as it passes on to ``totals``: one
        payload in memory at a time, whatever the session's size."""
        for entry in session.entries():
            event = session.resolve(session.event(entry.id))
            kinds[event.kind] += 1
            sizes[event.kind] += len(orjson.dumps(event.record))
            if event.digest:
                blobs.add(event.digest)
            yield event

    tokens = totals(each_event()).to_dict()
    return {
        "id": session.id,
        "events": sum(kinds.values()),
        "by_kind": dict(kinds),
        "bytes_by_kind": dict(sizes),
        "blobs": len(blobs),
        "tokens": tokens,
    }


_TOKEN_COUNTS = ("input_tokens", "output_tokens", "total_tokens", "calls")


def _merge(rows: list[dict[str, Any]]) -> dict[str, Any]:
    kinds: Counter[str] = Counter()
    sizes: Counter[str] = Counter()
    # Every key from the start: a home with no readable session still has
    # the token fields one session's document has (all zero).
    tok: Counter[str] = Counter(dict.fromkeys(_TOKEN_COUNTS, 0))
    cost = 0.0
    for r in rows:
        kinds.update(r["by_kind"])
        sizes.update(r["bytes_by_kind"])
        for key in _TOKEN_COUNTS:
            tok[key] += r["tokens"][key]
        cost += r["tokens"]["cost_usd"] or 0.0
    return {
        "sessions": len(rows),
        "events": sum(kinds.values()),
        "by_kind": dict(kinds),
        "bytes_by_kind": dict(sizes),
        "blobs": sum(r["blobs"] for r in rows),
        "tokens": {**tok, "cost_usd": cost},
    }


@click.command("stats")
@click.argument("session", required=False, metavar="[SESSION]", shell_complete=complete_session)
@json_option
@pass_app
def stats(app: App, session: str | None, as_json: bool) -> None:
    """Events and record bytes by kind, blobs, tokens and cost: for one
    session, or summed over the whole home (every branch counted)."""
    store = app.store
    if session is not None:
        with store.open(resolve_session(store, session), readonly=True) as opened:
            doc = _session_stats(opened)
        per: list[dict[str, Any]] = [doc]
    else:
        ids = sorted(store.backend.session_ids())
        per = []
        failed: list[dict[str, str]] = []
        with progress_bar("reading sessions") as update:
            for n, sid in enumerate(ids):
                try:
                    with store.open(sid, readonly=True) as opened:
                        per.append(_session_stats(opened))
                except SessionNotFound:
                    pass  # deleted since it was listed: nothing to count
                except AgentlogError as exc:
                    failed.append({"id": sid, "error": str(exc)})
                    click.echo(f"agentlog: warning: cannot read {sid}: {exc}; see 'agentlog fsck {sid}'", err=True)
                update(n + 1, len(ids))
        doc = _merge(per)
        doc["per_session"] = per
        doc["failed"] = failed
    if as_json:
        emit_json(doc)
        return
    out = console()
    title = f"session {doc['id']}" if session is not None else counted(doc["sessions"], "session")
    out.print(Text(f"{title}: {counted(doc['events'], 'event')}, {counted(doc['blobs'], 'blob')}", style="bold"))
    table = [
        [(kind, ""), (f"{n:,}", ""), (_human(doc["bytes_by_kind"].get(kind, 0)), "")]
        for kind, n in sorted(doc["by_kind"].items(), key=lambda kv: -kv[1])
    ]
    if table:
        print_lines(columns([Column("KIND", 32, "<"), Column("EVENTS", 10, ">"), Column("BYTES", 12, ">")], table))
    t = doc["tokens"]
    cost = f", ${t['cost_usd']:.4f}" if t.get("cost_usd") else ""
    click.echo(f"tokens: {t['input_tokens']:,} in, {t['output_tokens']:,} out ({counted(t['calls'], 'call')}){cost}")


COMMANDS = [gc, prune, du, stats]
