"""Human output shared by the commands: short ids, previews, times, tables, trees.

User content always goes into ``rich.text.Text`` objects, never into
markup strings, so a record containing ``[bold]`` prints as typed.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import time
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

import orjson
from rich.cells import cell_len, set_cell_size
from rich.console import COLOR_SYSTEMS, Console
from rich.style import Style
from rich.text import Span, Text

from .._streams import write_stdout
from ..backends.base import IndexEntry
from ..event import Event, parse_timestamp
from .refs import short_ids

__all__ = [
    "abbreviate",
    "BIDI_CONTROLS",
    "Column",
    "columns",
    "console",
    "counted",
    "KIND_STYLES",
    "Styled",
    "event_line",
    "event_lines",
    "full_text",
    "joined",
    "local_time",
    "one_line",
    "preview",
    "print_lines",
    "print_styled",
    "safe_text",
]

PREVIEW_LIMIT = 120
#: Piped output is not cut to 80 columns: a pipe has no width.
PIPE_WIDTH = 240

KIND_STYLES = {
    "message": "bold",
    "tool_call": "magenta",
    "tool_result": "blue",
    "compaction": "bold yellow",
    "branch_summary": "yellow",
    "state": "dim",
    "label": "green",
    "tombstone": "bold red",
}


def counted(n: int, noun: str) -> str:
    """``n`` and ``noun``, plural unless ``n`` is one: "1 event", "2 events"."""
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def console() -> Console:
    """A console on the current stdout (so test runners can capture it)."""
    width = None
    if not sys.stdout.isatty() and not os.environ.get("COLUMNS"):
        width = PIPE_WIDTH
    # A pipe has no width: a message goes out as one whole line (soft wrap),
    # not broken at PIPE_WIDTH; tables still lay out within it.
    return Console(highlight=False, emoji=False, markup=False, width=width, soft_wrap=width is not None)


def print_lines(text: Text, keep: int = 0) -> None:
    """Print lines cut to a terminal's width, but never before their first
    ``keep`` cells (an id to type back); a pipe gets them whole and plain.

    Cropping and styling thousands of lines costs rich far more than the
    store spends reading them, and a pipe has no width to crop to."""
    out = console()
    if out.is_terminal:
        width = out.width if out.width >= keep else keep
        out.print(text, no_wrap=True, overflow="ellipsis", width=width)
    else:
        write_stdout(text.plain + "\n")


def _on_terminal() -> bool:
    return sys.stdout.isatty()


class Column(NamedTuple):
    """A column of :func:`columns`: its title, the widest a cell may be on
    a terminal, and its alignment ("<" or ">"). On a terminal narrower than
    the table, a column with a ``floor`` is narrowed down to it first, and
    columns are then left out in ``drop`` order (1 first; 0: never), so
    the columns that stay are whole instead of the line being cut."""

    title: str
    cap: int
    align: str
    floor: int = 0
    drop: int = 0


def columns(headers: Sequence[Column], rows: Iterable[Sequence[tuple[str, str]]], width: int | None = None) -> Text:
    """A plain aligned table: each cell is (text, style). On a terminal,
    cells over their column's width end in "…" and the table is fitted to
    ``width`` (the terminal's, unless given; :class:`Column`); piped, every
    cell is whole (docs/cli.md, "Output").

    rich's Table costs seconds per few thousand rows, and a listing of
    many sessions reaches tens of thousands."""
    cut = _on_terminal()
    # Each cell once: its text made safe and cut, and its width in cells.
    table = [[(title, "bold", _cells(title)) for title, *_ in headers]]
    for row in rows:
        cells = []
        for (text, style), column in zip(row, headers, strict=True):
            text = safe_text(text)
            if cut:
                text = _cut(text, column.cap)
            cells.append((text, style, _cells(text)))
        table.append(cells)
    widths = [max(row[i][2] for row in table) for i in range(len(headers))]
    if cut:
        kept = _fit(headers, widths, console().width if width is None else width)
        if kept is not None:
            headers = [headers[i] for i in kept]
            widths = [widths[i] for i in kept]
            table = [[_recut(row[i], widths[n]) for n, i in enumerate(kept)] for row in table]
    aligns = [column.align for column in headers]
    last = len(headers) - 1
    # The table is built as one string and its styled spans: a Text.append
    # a cell cost a second per 10,000 rows. Cells hold no control codes
    # (safe_text above), so the string is what the terminal gets.
    lines: list[str] = []
    spans: list[Span] = []
    at = 0  # where the line being built starts
    for cells in table:
        first_span = len(spans)
        line = ""
        for i, (text, style, size) in enumerate(cells):
            pad = " " * (widths[i] - size)
            padded = pad + text if aligns[i] == ">" else (text if i == last else text + pad)
            if style and padded:
                spans.append(Span(at + len(line), at + len(line) + len(padded), style))
            line += padded if i == last else padded + "  "
        line = line.rstrip()
        end = at + len(line)
        # a cell's padding that rstrip took must not carry its style into the next line
        spans[first_span:] = [Span(sp.start, min(sp.end, end), sp.style) for sp in spans[first_span:] if sp.start < end]
        lines.append(line)
        at = end + 1
    return Text("\n".join(lines), spans=spans, no_wrap=True, overflow="ellipsis")


def _fit(headers: Sequence[Column], widths: list[int], room: int) -> list[int] | None:
    """The columns to show within ``room`` cells, ``widths`` narrowed in
    place to fit; None when the table fits as it is. A title is never cut:
    a column narrows to its floor or its title, whichever is wider."""

    def needed(shown: list[int], floor: bool) -> int:
        gaps = 2 * (len(shown) - 1)
        return gaps + sum(min(widths[i], _narrowest(headers[i])) if floor else widths[i] for i in shown)

    shown = list(range(len(headers)))
    if needed(shown, floor=False) <= room:
        return None
    droppable = sorted((c.drop, i) for i, c in enumerate(headers) if c.drop)
    while needed(shown, floor=True) > room and droppable:
        shown.remove(droppable.pop(0)[1])
    # Narrow what is over: the widest narrowable column first, a cell at a time.
    over = needed(shown, floor=False) - room
    while over > 0:
        narrowable = [i for i in shown if headers[i].floor and widths[i] > _narrowest(headers[i])]
        if not narrowable:
            break  # print_lines cuts the line at the edge, past the id
        widest = max(narrowable, key=lambda i: widths[i])
        widths[widest] -= 1
        over -= 1
    return shown


def _narrowest(column: Column) -> int:
    return max(column.floor, _cells(column.title)) if column.floor else 10**9


def _recut(cell: tuple[str, str, int], width: int) -> tuple[str, str, int]:
    text, style, size = cell
    if size <= width:
        return cell
    text = _cut(text, width)
    return text, style, _cells(text)


def _cells(text: str) -> int:
    """Columns ``text`` takes on a terminal: a Chinese or Japanese character
    takes two (titles in those scripts misaligned every column after them)."""
    return len(text) if text.isascii() else cell_len(text)


def _cut(text: str, cap: int) -> str:
    if _cells(text) <= cap:
        return text
    return (text[: cap - 1] if text.isascii() else set_cell_size(text, cap - 1)).rstrip(" ") + "…"


# --- ids and times -------------------------------------------------------------
def abbreviate(ids: Iterable[str], only: Iterable[str] | None = None) -> dict[str, str]:
    """Each id's short form (see ``refs.short_ids``): a unique random tail
    among ``ids``; with ``only``, the forms of those ids alone."""
    return short_ids(list(ids), only=only)


def local_time(timestamp: str | None, *, seconds: bool = True) -> str:
    """An RFC 3339 UTC timestamp shown in local time (the JSON keeps UTC)."""
    if not timestamp:
        return "-"
    # agentlog's own form (…T12:34:56.123456Z) is shown by its second, which
    # most events share with a neighbour: parsing each of 100,000 timestamps
    # whole took 0.8 s of a tree.
    tail = timestamp[19:]
    if tail == "Z" or (tail[:1] == "." and tail[-1:] == "Z" and tail[1:-1].isdigit()):
        return _second_shown(timestamp[:19] + "Z", seconds) or timestamp
    return _shown(timestamp, seconds) or timestamp


def _shown(timestamp: str, seconds: bool) -> str | None:
    """``timestamp`` in local time, or None if it is not one."""
    try:
        secs = parse_timestamp(timestamp) // 1_000_000_000
    except ValueError:
        return None
    return time.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M", time.localtime(secs))


_second_shown = functools.lru_cache(maxsize=4096)(_shown)


# --- record text -----------------------------------------------------------------
#: Control characters shown as what they are, never sent to the terminal:
#: a record (from a session imported from another tool, or a tool's
#: output) holding ESC sequences would otherwise retitle the window, clear
#: the screen or hide text. C0 controls become their Unicode control
#: pictures (ESC is "␛"), DEL "␡", C1 controls "�"; one character for
#: one, so highlight offsets into the text stay right. Newline and tab are
#: kept for the callers that print several lines. The bidirectional
#: embedding, override and isolate controls become "�" too: one in a title
#: turned the rest of its ``ls`` row around on screen (the columns after
#: it read backwards), and in a tool's output they make code read other
#: than it runs ("Trojan Source"). Right-to-left text needs none of them.
_CONTROLS = {c: 0x2400 + c for c in range(0x20) if chr(c) not in "\n\t"}
_CONTROLS[0x7F] = 0x2421
_CONTROLS.update({c: 0xFFFD for c in range(0x80, 0xA0)})
BIDI_CONTROLS = (*range(0x202A, 0x202F), *range(0x2066, 0x206A))
_CONTROLS.update({c: 0xFFFD for c in BIDI_CONTROLS})


def safe_text(text: str) -> str:
    """``text`` with control characters made visible (see ``_CONTROLS``)."""
    return text.translate(_CONTROLS)


def one_line(text: str, limit: int = PREVIEW_LIMIT) -> str:
    """``text`` on one line (runs of whitespace made one space), cut to
    ``limit``. Only the words the line shows are read: splitting a 48 MB
    tool output whole to show 100 characters of it took 1.3 GB."""
    words: list[str] = []
    size = 0
    for word in _WORD.finditer(text):
        words.append(word[0])
        size += len(word[0]) + 1
        if size > limit + 1:  # more than the line holds: it is cut below
            break
    flat = safe_text(" ".join(words))
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


_WORD = re.compile(r"\S+")


def _parts_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        pieces = []
        for part in content:
            if isinstance(part, str):
                pieces.append(part)
            elif isinstance(part, dict):
                text = part.get("text")
                pieces.append(text if isinstance(text, str) else f"[{part.get('type', 'part')}]")
        return " ".join(pieces)
    return _compact(content)


def _compact(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return repr(value)


def full_text(kind: str, record: Any) -> str:
    """The human-meaningful text of a record (see docs/records.md)."""
    if record is None:
        return ""
    if isinstance(record, str):
        return record
    if not isinstance(record, dict):
        return _compact(record)
    if kind == "tool_call" and "name" in record:
        args = record.get("arguments")
        return f"{record['name']}({args if isinstance(args, str) else _compact(args)})"
    if kind == "tool_result" and "content" in record:
        text = _parts_text(record["content"])
        name = record.get("name")
        mark = "error: " if record.get("is_error") else ""
        return f"{name}: {mark}{text}" if name else f"{mark}{text}"
    if kind == "label" and "name" in record:
        target = record.get("target")
        return f"{record['name']} -> {target}" if target else str(record["name"])
    if kind == "tombstone" and isinstance(record.get("quarantined"), dict):
        return _tombstone_text(record)
    for key in ("content", "summary", "text"):
        if key in record:
            return _parts_text(record[key])
    return _compact(record)


def _tombstone_text(record: dict[str, Any]) -> str:
    """What fsck --repair put in a damaged record's place (docs/format.md)."""
    q = record["quarantined"]
    was = " ".join(str(v) for v in (record.get("kind"), record.get("role")) if v)
    return f"damaged {was or 'event'} quarantined in {q.get('file')} @{q.get('offset')}: {q.get('reason')}"


def preview(event: Event, limit: int = PREVIEW_LIMIT) -> str:
    """One line saying what an event holds; a blob not loaded is named, not read."""
    if not event.loaded:
        return f"<blob {(event.digest or '')[:19]}… not loaded>"
    return one_line(full_text(event.kind, event.record), limit)


# --- event lines -----------------------------------------------------------------
class Styled:
    """One line of output and its styled spans, built by string appends.

    A rich ``Text.append`` costs microseconds: the tree of a 100,000-event
    session made a million of them (8.9 s, piped). Lines are built here and
    made one ``Text`` at the end (``joined``), or none at all for a pipe."""

    __slots__ = ("plain", "spans")

    def __init__(self, text: str = "", style: str = "") -> None:
        self.plain = ""
        self.spans: list[tuple[int, int, str]] = []
        self.add(text, style)

    def add(self, text: str, style: str = "") -> Styled:
        if style and text:
            self.spans.append((len(self.plain), len(self.plain) + len(text), style))
        self.plain += text
        return self

    def add_styled(self, other: Styled) -> Styled:
        at = len(self.plain)
        self.spans += [(start + at, end + at, style) for start, end, style in other.spans]
        self.plain += other.plain
        return self


def joined(lines: Sequence[Styled]) -> Text:
    """``lines`` as one ``Text``, a line each."""
    spans: list[Span] = []
    at = 0
    for line in lines:
        spans += [Span(start + at, end + at, style) for start, end, style in line.spans]
        at += len(line.plain) + 1
    return Text("\n".join(line.plain for line in lines), spans=spans, no_wrap=True, overflow="ellipsis")


def print_styled(lines: Sequence[Styled], keep: int = 0) -> None:
    """``print_lines`` of ``lines``, as fast as a pipe: a terminal gets each
    line cut to its width (never before ``keep`` cells) and coloured here,
    where rich's own printing took 10 s for 100,000 lines."""
    out = console()
    if not out.is_terminal:
        write_stdout("".join(line.plain + "\n" for line in lines))
        return
    width = max(out.width, keep)
    # None where the terminal takes no styles (TERM=dumb)
    system = COLOR_SYSTEMS.get(out.color_system) if out.color_system else None
    styles: dict[str, Style] = {}

    def style_of(name: str) -> Style:
        # NO_COLOR keeps bold and dim and drops the colours, as rich does.
        look = Style.parse(name)
        return look.without_color if out.no_color else look

    chunks = []
    for line in lines:
        plain, spans = line.plain, line.spans
        if _cells(plain) > width:  # cut as rich's "ellipsis" overflow cuts
            plain = (plain[: width - 1] if plain.isascii() else set_cell_size(plain, width - 1)) + "…"
            end = len(plain)  # a span the cut goes through colours the "…" too
            spans = [(start, min(stop, end), style) for start, stop, style in spans if start < end]
        if system is None or not spans:
            chunks.append(plain)
        else:
            at = 0
            for start, stop, style in spans:  # in order, never overlapping (Styled.add)
                look = styles.get(style) or styles.setdefault(style, style_of(style))
                chunks.append(plain[at:start])
                chunks.append(look.render(plain[start:stop], color_system=system))
                at = stop
            chunks.append(plain[at:])
        chunks.append("\n")
    out.file.write("".join(chunks))
    out.file.flush()


def event_line(
    event: Event | IndexEntry,
    short: str,
    text: str,
    *,
    widths: Sequence[int] = (0, 0, 0),
    head: bool = False,
    labels: Sequence[str] = (),
) -> Styled:
    kind_w, role_w, short_w = widths
    line = Styled(short.ljust(short_w), "yellow").add("  ").add(local_time(event.timestamp), "dim").add("  ")
    line.add(event.kind.ljust(kind_w), KIND_STYLES.get(event.kind, "")).add("  ")
    line.add((event.role or "-").ljust(role_w), "cyan")
    if text:
        line.add("  ").add(text)
    if head:
        line.add("  ◀ HEAD", "bold green")
    for name in labels:
        line.add(f"  [{name}]", "bold green")
    return line


def event_lines(
    events: Sequence[Event], shorts: dict[str, str], head: str, previews: dict[str, str] | None = None
) -> list[Styled]:
    """Aligned one-line views of ``events`` (for log and context); ``previews``
    gives the words of events whose record is not in hand (a blob's)."""
    said = previews or {}
    widths = (
        max((len(e.kind) for e in events), default=0),
        max((len(e.role or "-") for e in events), default=0),
        max((len(shorts.get(e.id, e.id)) for e in events), default=0),
    )
    return [
        event_line(e, shorts.get(e.id, e.id), said.get(e.id) or preview(e), widths=widths, head=e.id == head)
        for e in events
    ]
