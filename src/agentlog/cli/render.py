"""Human output shared by the commands: short ids, previews, times, tables, trees.

User content always goes into ``rich.text.Text`` objects, never into
markup strings, so a record containing ``[bold]`` prints as typed.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import orjson
from rich.cells import cell_len, set_cell_size
from rich.console import Console
from rich.text import Span, Text

from .._streams import write_stdout
from ..backends.base import IndexEntry
from ..event import NIL_ID, Event, parse_timestamp
from .refs import short_ids

__all__ = [
    "abbreviate",
    "columns",
    "console",
    "counted",
    "event_line",
    "event_lines",
    "full_text",
    "hide_kinds",
    "local_time",
    "one_line",
    "preview",
    "print_lines",
    "safe_text",
    "session_tree",
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


def columns(headers: Sequence[tuple[str, int, str]], rows: Iterable[Sequence[tuple[str, str]]]) -> Text:
    """A plain aligned table: ``headers`` are (title, max width, "<" or ">"),
    each cell is (text, style). On a terminal, cells over their column's
    width end in "…"; piped, every cell is whole (docs/cli.md, "Output").

    rich's Table costs seconds per few thousand rows, and a listing of
    many sessions reaches tens of thousands."""
    cut = _on_terminal()
    # Each cell once: its text made safe and cut, and its width in cells.
    table = [[(title, "bold", _cells(title)) for title, _, _ in headers]]
    for row in rows:
        cells = []
        for (text, style), (_, cap, _) in zip(row, headers, strict=True):
            text = safe_text(text)
            if cut:
                text = _cut(text, cap)
            cells.append((text, style, _cells(text)))
        table.append(cells)
    widths = [max(row[i][2] for row in table) for i in range(len(headers))]
    aligns = [align for _, _, align in headers]
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


def _cells(text: str) -> int:
    """Columns ``text`` takes on a terminal: a Chinese or Japanese character
    takes two (titles in those scripts misaligned every column after them)."""
    return len(text) if text.isascii() else cell_len(text)


def _cut(text: str, cap: int) -> str:
    if _cells(text) <= cap:
        return text
    return (text[: cap - 1] if text.isascii() else set_cell_size(text, cap - 1).rstrip(" ")) + "…"


# --- ids and times -------------------------------------------------------------
def abbreviate(ids: Iterable[str], only: Iterable[str] | None = None) -> dict[str, str]:
    """Each id's short form (see ``refs.short_ids``): a unique random tail
    among ``ids``; with ``only``, the forms of those ids alone."""
    return short_ids(list(ids), only=only)


def local_time(timestamp: str | None, *, seconds: bool = True) -> str:
    """An RFC 3339 UTC timestamp shown in local time (the JSON keeps UTC)."""
    if not timestamp:
        return "-"
    try:
        secs = parse_timestamp(timestamp) // 1_000_000_000
    except ValueError:
        return timestamp
    return time.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M", time.localtime(secs))


# --- record text -----------------------------------------------------------------
#: Control characters shown as what they are, never sent to the terminal:
#: a record (from a session imported from another tool, or a tool's
#: output) holding ESC sequences would otherwise retitle the window, clear
#: the screen or hide text. C0 controls become their Unicode control
#: pictures (ESC is "␛"), DEL "␡", C1 controls "�"; one character for
#: one, so highlight offsets into the text stay right. Newline and tab are
#: kept for the callers that print several lines.
_CONTROLS = {c: 0x2400 + c for c in range(0x20) if chr(c) not in "\n\t"}
_CONTROLS[0x7F] = 0x2421
_CONTROLS.update({c: 0xFFFD for c in range(0x80, 0xA0)})


def safe_text(text: str) -> str:
    """``text`` with control characters made visible (see ``_CONTROLS``)."""
    return text.translate(_CONTROLS)


def one_line(text: str, limit: int = PREVIEW_LIMIT) -> str:
    flat = safe_text(" ".join(text.split()))
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


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
def event_line(
    event: Event | IndexEntry,
    short: str,
    text: str,
    *,
    widths: Sequence[int] = (0, 0, 0),
    head: bool = False,
    labels: Sequence[str] = (),
) -> Text:
    kind_w, role_w, short_w = widths
    line = Text(no_wrap=True, overflow="ellipsis")
    line.append(short.ljust(short_w), style="yellow")
    line.append("  ")
    line.append(local_time(event.timestamp), style="dim")
    line.append("  ")
    line.append(event.kind.ljust(kind_w), style=KIND_STYLES.get(event.kind, ""))
    line.append("  ")
    line.append((event.role or "-").ljust(role_w), style="cyan")
    if text:
        line.append("  ")
        line.append(text)
    if head:
        line.append("  ◀ HEAD", style="bold green")
    for name in labels:
        line.append(f"  [{name}]", style="bold green")
    return line


def event_lines(
    events: Sequence[Event], shorts: dict[str, str], head: str, previews: dict[str, str] | None = None
) -> list[Text]:
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


# --- the branch tree ---------------------------------------------------------------
class _Node:
    """One line of the tree and the lines drawn under it."""

    __slots__ = ("label", "children")

    def __init__(self, label: Text) -> None:
        self.label = label
        self.children: list[_Node] = []

    def add(self, label: Text) -> _Node:
        node = _Node(label)
        self.children.append(node)
        return node


def _draw(root: _Node) -> Text:
    """Box-drawing lines for ``root``, without recursion (a deep tree is fine)."""
    lines = [root.label]
    stack = [(child, "", i == len(root.children) - 1) for i, child in reversed(list(enumerate(root.children)))]
    while stack:
        node, prefix, last = stack.pop()
        # Only the connector is dim: a Text's own style spans all it holds.
        line = Text(no_wrap=True, overflow="ellipsis").append(prefix + ("└── " if last else "├── "), style="dim")
        line.append_text(node.label)
        lines.append(line)
        inner = prefix + ("    " if last else "│   ")
        count = len(node.children)
        stack.extend((child, inner, i == count - 1) for i, child in reversed(list(enumerate(node.children))))
    return Text("\n", no_wrap=True, overflow="ellipsis").join(lines)


def hide_kinds(entries: Sequence[IndexEntry], head: str, hidden: frozenset[str]) -> tuple[list[IndexEntry], str]:
    """``entries`` without the ``hidden`` kinds, each shown event re-parented
    to its nearest shown ancestor; and HEAD moved the same way."""
    if not hidden:
        return list(entries), head
    by_id = {e.id: e for e in entries}

    def shown(event_id: str) -> str:
        seen = 0
        while event_id in by_id and by_id[event_id].kind in hidden and seen <= len(by_id):
            event_id = by_id[event_id].parent_id
            seen += 1
        return event_id

    kept = [dataclasses.replace(e, parent_id=shown(e.parent_id)) for e in entries if e.kind not in hidden]
    return kept, shown(head)


_KIND_MARKS = {"compaction": "  ⇤ compaction: earlier history kept above", "branch_summary": "  ↩ branch summary"}


def session_tree(
    title: Text,
    entries: Sequence[IndexEntry],
    head: str,
    texts: dict[str, str],
    *,
    labels: Mapping[str, Sequence[str]] | None = None,
) -> Text:
    """The whole event tree, with linear runs kept flat.

    A chain of single children is drawn as siblings at one depth. At a
    branch point (an event with several children) the branch toward HEAD
    (else the newest) goes on at the same depth, marked "↳ branch i/n",
    and every other branch hangs under the branch point as a labelled
    subtree. Depth therefore grows with how deeply branches nest inside
    side branches, never with the length of the session or the number of
    retries along it."""
    by_id = {e.id: e for e in entries}
    kids: dict[str, list[IndexEntry]] = defaultdict(list)
    for e in entries:
        kids[e.parent_id].append(e)
    on_head_path = set()
    current = head
    while current in by_id and current not in on_head_path:
        on_head_path.add(current)
        current = by_id[current].parent_id
    shorts = abbreviate(by_id)
    widths = (
        max((len(e.kind) for e in entries), default=0),
        max((len(e.role or "-") for e in entries), default=0),
        max((len(v) for v in shorts.values()), default=0),
    )

    def label(e: IndexEntry, went_on: str | None) -> Text:
        line = event_line(
            e, shorts[e.id], texts.get(e.id, ""), widths=widths, head=e.id == head, labels=(labels or {}).get(e.id, ())
        )
        if went_on:  # the first event of the branch that goes on at its branch point's depth
            line.append(f"  ↳ {went_on}", style="bold green" if "active" in went_on else "magenta")
        if e.kind in _KIND_MARKS:
            line.append(_KIND_MARKS[e.kind], style=KIND_STYLES[e.kind])
        if len(kids[e.id]) > 1:
            line.append(f"  ⑂ {len(kids[e.id])} branches", style="bold magenta")
        return line

    tree = _Node(title)
    todo: list[tuple[_Node, IndexEntry, str | None]] = []

    def branch_out(node: _Node, children: list[IndexEntry], what: str = "branch") -> tuple[IndexEntry, str]:
        """Hang the side branches of a branch point under ``node``, each a
        labelled subtree; return the child that goes on at the branch
        point's own depth (the one toward HEAD, else the newest) and its
        label. So a session rewound and retried a thousand times stays one
        column wide along its active path, rather than a level deeper at
        every retry."""
        went_on = next((c for c in children if c.id in on_head_path), children[-1])
        mark = ""
        for n, child in enumerate(children, 1):
            tag = f"{what} {n}/{len(children)}" + ("  (active)" if child.id in on_head_path else "")
            if child is went_on:
                mark = tag
            else:
                todo.append((node.add(Text(tag, style="magenta")), child, None))
        return went_on, mark

    drawn: set[str] = set()

    def grow() -> None:
        while todo:
            container, event, went_on = todo.pop()
            while event.id not in drawn:  # ids increase along parents, but stay safe
                drawn.add(event.id)
                node = container.add(label(event, went_on))
                children = kids.get(event.id, [])
                if not children:
                    break
                went_on = None
                if len(children) > 1:
                    event, went_on = branch_out(node, children)
                else:
                    event = children[0]

    roots = kids.get(NIL_ID, [])
    if len(roots) == 1:
        todo.append((tree, roots[0], None))
    elif roots:
        first, mark = branch_out(tree, roots, "root")
        todo.append((tree, first, mark))
    grow()
    # Events whose parent is gone (quarantined by a repair) still show.
    for e in entries:
        if e.parent_id != NIL_ID and e.parent_id not in by_id:
            orphan = tree.add(Text(f"orphaned: parent {e.parent_id} is missing", style="red"))
            todo.append((orphan, e, None))
    grow()
    if not entries:
        tree.add(Text("(no events)", style="dim"))
    return _draw(tree)
