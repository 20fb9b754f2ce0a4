"""import: bring sessions of other coding agents into the store."""

from __future__ import annotations

import os
import time

import click
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn
from rich.text import Text

from ..importers import FORMATS, Follower, Importer, ImportReport, expand_paths, get_importer, run_import
from .common import App, emit_json, json_option, needs, pass_app
from .location import shown
from .render import console, counted
from .transfer import IMPORT_FORMATS, import_file

__all__ = ["COMMANDS"]


def _print_report(report: ImportReport, *, unfinished: bool = True) -> None:
    """The report as text; with ``unfinished``, a note per file whose last
    line is not whole (--follow leaves those out: a line being written is
    its normal state there)."""
    out = console()
    new = sum(1 for s in report.sessions if s.created and s.events)
    touched = [s for s in report.sessions if s.events]
    out.print(
        Text(
            f"{report.format}: {report.events} new events in {len(touched)} "
            f"session(s) ({new} new) from {len(report.files)} file(s)"
        ),
        soft_wrap=True,
    )
    kinds = report.kinds
    if kinds:
        out.print(Text("  " + "  ".join(f"{k} {n}" for k, n in sorted(kinds.items()))))
    for s in touched:
        extra = [
            f"{n} {label}"
            for n, label in (
                (s.merged, "lines merged"),
                (s.duplicates, "duplicates skipped"),
                (s.copied, "copied"),
            )
            if n
        ]
        out.print(
            Text(
                f"  {s.session_id}: {counted(s.events, 'event')}"
                f"{' (new)' if s.created else ''}"
                f"{'; ' + ', '.join(extra) if extra else ''}"
            ),
            soft_wrap=True,
        )
    for path, line, error in report.malformed:
        click.echo(f"agentlog: warning: {shown(path)}:{line}: {shown(error)} (kept as a custom event)", err=True)
    for path, line, text in report.warnings:
        click.echo(f"agentlog: warning: {shown(path)}:{line}: {shown(text)}", err=True)
    if unfinished:
        for fr in report.files:
            if fr.pending_bytes:
                # Else a last line cut short (a tool that crashed mid-write)
                # would be left out of every import without a word.
                click.echo(
                    f"agentlog: note: {shown(fr.path)}: an unfinished last line ({fr.pending_bytes} bytes,"
                    " no newline and not whole JSON) is left for the next import",
                    err=True,
                )
    for error in report.errors:
        click.echo(f"agentlog: error: {shown(error)}", err=True)


def _progress(files: list[str]) -> Progress:
    """A bar on stderr, only for a terminal (a pipe or a log gets no bar)."""
    err = Console(stderr=True)
    return Progress(
        TextColumn("importing"),
        BarColumn(),
        DownloadColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=True,
        disable=not files or not err.is_terminal,
    )


@click.command("import")
@click.option(
    "--from",
    "fmt",
    required=True,
    type=click.Choice(sorted(set(FORMATS) | set(IMPORT_FORMATS))),
    help="The tool whose session files to read, or 'bundle' for a file of 'agentlog export --format bundle'.",
)
@click.argument("paths", nargs=-1, metavar="[PATH]...", type=click.Path())
@click.option(
    "--follow",
    "keep_following",
    is_flag=True,
    help="Keep importing as the files grow (and new ones appear), until Ctrl-C.",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0.05),
    default=1.0,
    show_default=True,
    metavar="SECONDS",
    help="With --follow: how often to look at the files' sizes.",
)
@click.option(
    "--polls",
    type=click.IntRange(min=1),
    default=None,
    metavar="N",
    help="With --follow: stop after N polls (default: never).",
)
@json_option
@pass_app
def import_(
    app: App,
    fmt: str,
    paths: tuple[str, ...],
    keep_following: bool,
    interval: float,
    polls: int | None,
    as_json: bool,
) -> int:
    """Import sessions from Claude Code, Codex or pi session files, or a bundle.

    '--from bundle FILE' brings back one session exported with 'agentlog
    export --format bundle', ids kept (idempotent: again changes nothing).

    PATH is a session file, or a directory searched for the format's files.
    Without PATH the tool's own location is read: $CLAUDE_CONFIG_DIR/projects
    or ~/.claude/projects; $CODEX_HOME/sessions and archived_sessions, or
    ~/.codex/...; $PI_CODING_AGENT_SESSION_DIR, $PI_CODING_AGENT_DIR/sessions
    or ~/.pi/agent/sessions. Each source session becomes the session
    '<format>-<source id>'. Importing again adds only what is new; a file
    whose imported part changed is reported, not imported again. A malformed
    line is kept as a 'custom' event and reported with its file and line.
    Exit status 1 if a file could not be imported. See docs/integrations.md."""
    if not keep_following:
        needs("--follow", ("--interval", "interval"), ("--polls", "polls"))
    if fmt in IMPORT_FORMATS:
        if keep_following or len(paths) != 1:
            raise click.UsageError(f"--from {fmt} takes exactly one FILE and no --follow")
        if os.path.isdir(paths[0]):
            raise click.BadParameter(f"{shown(paths[0])} is a directory: give the bundle file", param_hint="'PATH'")
        if not os.path.isfile(paths[0]):
            what = "not a regular file" if os.path.exists(paths[0]) else "no such file"
            raise click.BadParameter(f"{what}: {shown(paths[0])}", param_hint="'PATH'")
        import_file(app, fmt, paths[0], as_json)
        return 0
    importer = get_importer(fmt)
    if keep_following:
        return _follow(app, importer, paths, interval, polls, as_json)
    for path in paths:
        if not os.path.exists(os.path.expanduser(path)):  # a dangling symlink names nothing either
            # The same mistake as a missing bundle: a usage error (exit 2) whatever --from says.
            raise click.BadParameter(f"no such file or directory: {shown(path)}", param_hint="'PATH'")
    files = expand_paths(importer, paths)
    with _progress(files) as bar:
        task = bar.add_task("import", total=2 * sum(os.path.getsize(f) for f in files))
        report = run_import(app.store, importer, files=files, progress=lambda n: bar.advance(task, n))
    if as_json:
        emit_json(report.to_dict())
        for error in report.errors:
            click.echo(f"agentlog: error: {shown(error)}", err=True)
    else:
        _print_report(report)
    return 1 if report.errors else 0


def _follow(
    app: App, importer: Importer, paths: tuple[str, ...], interval: float, polls: int | None, as_json: bool
) -> int:
    total = ImportReport(importer.name)

    def show(report: ImportReport | None) -> None:
        if report is None:
            return
        total.merge(report)
        if not as_json and (report.events or report.errors or report.malformed or report.warnings):
            _print_report(report, unfinished=False)

    with Follower(app.store, importer, paths) as follower:
        try:
            files = follower.changed()
            with _progress(files) as bar:  # the first poll may be the whole history
                task = bar.add_task("import", total=2 * sum(os.path.getsize(f) for f in files))
                first = follower.poll(files, progress=lambda n: bar.advance(task, n))
            show(first)  # once the bar is gone: printed under it, the report was glued to it
            done = 1
            while polls is None or done < polls:
                time.sleep(interval)
                show(follower.poll())
                done += 1
        except KeyboardInterrupt:
            pass  # Ctrl-C is how --follow is meant to end; what was imported stays
    if as_json:
        emit_json(total.to_dict())  # one document: everything this run imported
    return 1 if total.errors else 0


COMMANDS = [import_]
