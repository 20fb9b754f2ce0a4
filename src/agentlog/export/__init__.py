"""Export a session to Markdown, one-file HTML or a bundle; import bundles.

    with store.open(sid, readonly=True) as session, open("s.html", "wb") as out:
        report = export_session(session, "html", out, redact=True)
    import_bundle(other_store, "s.bundle.jsonl")

The CLI (``agentlog export`` / ``agentlog import``) only parses arguments
and prints the report; everything else is here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import IO, Any

from .._streams import write_all
from ..errors import UnknownFormat
from ..session import Session
from .bundle import BUNDLE_VERSION, BundleError, BundleImportReport, import_bundle, write_bundle
from .html import html_chunks
from .markdown import markdown_chunks
from .redact import RedactionUnavailable, Redactor
from .totals import Totals, totals
from .view import load_view

__all__ = [
    "BUNDLE_VERSION",
    "EXPORT_FORMATS",
    "BundleError",
    "ExportReport",
    "BundleImportReport",
    "RedactionUnavailable",
    "Redactor",
    "Totals",
    "UnknownFormat",
    "export_session",
    "import_bundle",
    "totals",
]

#: Format name -> the file suffix it is usually written with.
EXPORT_FORMATS = {"md": ".md", "html": ".html", "bundle": ".bundle.jsonl"}
Progress = Callable[[int, int], None]


@dataclass(frozen=True, slots=True)
class ExportReport:
    session_id: str
    format: str
    #: Events written: the active path's for Markdown without all_branches.
    events: int
    bytes: int
    redactions: dict[str, int] = field(default_factory=dict)
    #: Events the session holds (every branch).
    session_events: int = 0
    #: What was written: "active path" or "every branch".
    scope: str = "every branch"
    #: (event id, why) of each payload that could not be read, written as
    #: a marker in its place (Markdown and HTML; a bundle refuses instead).
    unreadable: tuple[tuple[str, str], ...] = ()

    @property
    def redacted(self) -> int:
        return sum(self.redactions.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "session": self.session_id,
            "format": self.format,
            "events": self.events,
            "bytes": self.bytes,
            "redactions": dict(self.redactions),
            "redacted": self.redacted,
            "session_events": self.session_events,
            "scope": self.scope,
            "unreadable": [{"event": eid, "error": why} for eid, why in self.unreadable],
        }


class _Counting:
    """A binary stream wrapper that counts what passes through."""

    def __init__(self, out: IO[bytes]) -> None:
        self.out = out
        self.count = 0

    def write(self, data: bytes) -> int:
        # every byte or an error: a reader that went away is not a success
        self.count += write_all(self.out, data)
        return len(data)


#: Text gathered before one write: large writes, and a bounded buffer.
_WRITE_AT = 256 << 10


def _write_text(sink: _Counting, chunks: Iterable[str]) -> None:
    """Write ``chunks`` as UTF-8 in writes of about ``_WRITE_AT`` bytes."""
    pending: list[bytes] = []
    size = 0
    for chunk in chunks:
        data = chunk.encode("utf-8")
        pending.append(data)
        size += len(data)
        if size >= _WRITE_AT:
            sink.write(b"".join(pending))
            pending, size = [], 0
    if pending:
        sink.write(b"".join(pending))


def export_session(
    session: Session,
    fmt: str,
    out: IO[bytes],
    *,
    all_branches: bool = False,
    redact: bool = False,
    progress: Progress | None = None,
) -> ExportReport:
    """Write ``session`` in format ``fmt`` (see EXPORT_FORMATS) to ``out``.

    Markdown shows the active path, or every branch with ``all_branches``;
    HTML and bundles always hold every branch. ``redact`` replaces
    secrets (detect-secrets) and counts each one in the report."""
    if fmt not in EXPORT_FORMATS:
        raise UnknownFormat(f"unknown export format {fmt!r}: use one of {', '.join(EXPORT_FORMATS)}")
    redactor = Redactor() if redact else None
    sink = _Counting(out)
    scope = "every branch"
    unreadable: tuple[tuple[str, str], ...] = ()
    if fmt == "bundle":
        count = total = write_bundle(
            session,
            sink,
            redactor=redactor,
            progress=progress,
        )
    else:
        view = load_view(session, redactor=redactor, progress=progress)
        chunks = html_chunks(view) if fmt == "html" else markdown_chunks(view, all_branches=all_branches)
        _write_text(sink, chunks)
        total = count = len(view.order)
        if fmt == "md" and not all_branches:
            scope, count = "active path", len(view.active)
        shown = set(view.order if scope == "every branch" else view.active)
        unreadable = tuple((eid, why) for eid, why in view.unreadable.items() if eid in shown)
    return ExportReport(
        session.id,
        fmt,
        count,
        sink.count,
        dict(redactor.counts) if redactor else {},
        session_events=total,
        scope=scope,
        unreadable=unreadable,
    )
