"""export and import: sessions to and from files.

``IMPORT_FORMATS`` maps each ``--from`` choice to the function that
imports one file; other importers (Claude Code, Codex, pi) register
theirs in the same dict, so ``agentlog import --from`` lists them all.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
import tempfile
from collections.abc import Callable, Iterator
from typing import IO, Any

import click

from ..export import EXPORT_FORMATS, BundleImportReport, export_session, import_bundle
from ..store import Store
from .common import App, emit_json, json_option, pass_app
from .completion import complete_session
from .location import shown
from .progress import ProgressFn, progress_bar
from .render import counted

__all__ = ["COMMANDS", "IMPORT_FORMATS", "Importer", "import_file"]

#: ``(store, path, progress) -> report``; the report has ``to_dict()``.
Importer = Callable[[Store, str, ProgressFn], BundleImportReport]


def _bundle(store: Store, path: str, progress: ProgressFn) -> BundleImportReport:
    return import_bundle(store, path, progress=progress)


IMPORT_FORMATS: dict[str, Importer] = {"bundle": _bundle}


@contextlib.contextmanager
def _output(path: str | None) -> Iterator[IO[bytes]]:
    """stdout, or ``path``: a regular file is written whole or not at all
    (temp file + rename, through a symlink to the file it names, keeping
    an existing file's mode); a FIFO, a device or a socket is written
    into, never replaced (``-o /dev/null``, ``-o >(gzip > x.gz)``)."""
    if path is None or path == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    try:
        mode: int | None = os.stat(path).st_mode  # follows a symlink
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISREG(mode):
        with open(path, "wb") as f:
            yield f
        return
    target = os.path.realpath(path)  # a symlink stays one; the file it names is replaced
    try:
        fd, tmp = tempfile.mkstemp(prefix=".agentlog-export-", dir=os.path.dirname(target))
    except OSError as exc:  # name the user's path, not the temporary one
        raise click.ClickException(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        # mkstemp makes the file 0600: give it the old file's mode, or a new file's
        os.fchmod(fd, stat.S_IMODE(mode) if mode is not None else 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as f:
            yield f
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)  # the export failed: leave no half-written file behind
        raise


def _umask() -> int:
    current = os.umask(0o022)  # the only way to read it; put straight back
    os.umask(current)
    return current


@click.command("export")
@click.argument("session", metavar="SESSION", shell_complete=complete_session)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(sorted(EXPORT_FORMATS)),
    default="md",
    show_default=True,
    help="md: Markdown; html: one self-contained page; bundle: JSONL for import.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True),
    metavar="FILE",
    help="Write to FILE (replaced atomically) instead of stdout.",
)
@click.option(
    "--all-branches",
    is_flag=True,
    help="Markdown: every branch, not only the active path (HTML and bundles always hold every branch).",
)
@click.option(
    "--redact",
    is_flag=True,
    help="Replace secrets (API keys, tokens, private keys, passwords in URLs) "
    "found by detect-secrets with [REDACTED:<type>]; each is counted.",
)
@json_option
@pass_app
def export(
    app: App, session: str, fmt: str, output: str | None, all_branches: bool, redact: bool, as_json: bool
) -> None:
    """Write a session as Markdown, one-file HTML, or a bundle.

    The HTML page works offline (no network references): a branch tree
    with HEAD marked, compaction boundaries with the earlier history
    still there, branch summaries, collapsible tool calls and results,
    token and cost totals. A bundle holds the metadata, every event of
    every branch and its blob payloads; 'agentlog import --from bundle'
    brings it back with ids preserved. The report (events, bytes,
    redactions) goes to stderr, or to stdout with --json and -o."""
    if output is not None and not output.strip():
        raise click.UsageError("-o is empty: give a file name, or '-' (or no -o) for stdout")
    if as_json and output in (None, "-"):
        raise click.UsageError("--json prints the report on stdout: give -o FILE for the export")
    with app.open(session) as opened, _output(output) as out:
        with progress_bar(f"exporting {opened.id}") as update:
            report = export_session(opened, fmt, out, all_branches=all_branches, redact=redact, progress=update)
    for eid, why in report.unreadable:
        click.echo(
            f"agentlog: warning: event {eid} of {report.session_id} is exported as a marker: "
            f"its payload cannot be read: {shown(why)} (see 'agentlog fsck {report.session_id}')",
            err=True,
        )
    if as_json:
        emit_json(report.to_dict())
        return
    where = shown(output) if output not in (None, "-") else "stdout"
    what = counted(report.events, "event")
    if report.scope == "active path" and report.events < report.session_events:
        scope = "the active path; --all-branches for every branch"
        what = f"{report.events:,} of {report.session_events:,} events ({scope})"
    line = f"exported {what} of {report.session_id} as {fmt} to {where} ({report.bytes:,} bytes)"
    if redact:
        kinds = ", ".join(f"{n} {k}" for k, n in sorted(report.redactions.items()))
        line += f"; {report.redacted} secrets redacted" + (f" ({kinds})" if kinds else "")
    click.echo(line, err=True)


def import_file(app: App, source: str, path: str, as_json: bool) -> None:
    """``agentlog import --from bundle FILE``: bring a session in from FILE,
    keeping its ids (the ``import`` command of cli/imports.py dispatches here).

    Importing is idempotent: a session already holding everything in FILE
    is left unchanged (and the report says so); one holding the start of
    it gets the rest."""
    if os.path.isdir(path):
        raise click.BadParameter(f"{shown(path)} is a directory: give the bundle file", param_hint="'FILE'")
    if not os.path.exists(path):
        raise click.BadParameter(f"no such file: {shown(path)}", param_hint="'FILE'")
    with progress_bar(f"importing {os.path.basename(path)}") as update:
        report = IMPORT_FORMATS[source](app.store, path, update)
    doc: dict[str, Any] = report.to_dict()
    if as_json:
        emit_json(doc)
        return
    if report.outcome == "unchanged":
        click.echo(f"{report.session_id}: already imported, nothing changed ({counted(report.events_total, 'event')})")
    else:
        click.echo(
            f"{report.session_id}: {report.outcome}, {counted(report.events_added, 'event')} "
            f"imported ({report.events_total:,} in total)"
        )


COMMANDS = [export]
