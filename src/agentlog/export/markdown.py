"""A session as Markdown: the active path, or with ``all_branches`` every
branch after it, each from where it leaves the events already shown."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import orjson

from ..event import NIL_ID, Event
from ..recordtext import answer_content, readable_content, reasoning_shown, record_text
from .view import ExportView

__all__ = ["markdown_chunks", "session_markdown"]

_BACKTICKS = re.compile(r"`+")


def _fence(text: str, lang: str = "") -> str:
    """``text`` in a code fence longer than any backtick run inside it."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


#: A line that opens or closes a CommonMark code fence.
_FENCE_LINE = re.compile(r" {0,3}(`{3,}|~{3,})")


#: The start of a CommonMark HTML block that runs until its own end marker
#: (types 1-5: <script, <pre, <style, <textarea, <!--, <?, <!X, <![CDATA[),
#: which a reply need not hold: a PHP file without "?>" or a half-pasted
#: page's "<!-- TODO" turned every later event of the document into raw
#: HTML (a comment: nothing shown).
_HTML_BLOCK = re.compile(r" {0,3}<(?=(?:script|pre|style|textarea)(?:[\s>]|\Z)|!--|\?|![A-Za-z]|!\[CDATA\[)", re.I)


def _closed(text: str) -> str:
    """Markdown from a model (a reply, its reasoning, a summary) as it is,
    but that it cannot change how the rest of the document renders: a code
    fence it left open is closed at its end (one turned every later event
    into code), and a line that would open an HTML block that runs to its
    own end marker has its "<" escaped, so it reads as the text it is."""
    open_fence = None
    lines = text.split("\n")
    for i, line in enumerate(lines):
        found = _FENCE_LINE.match(line)
        if found is None:
            if open_fence is None and (html := _HTML_BLOCK.match(line)):
                lines[i] = f"{line[: html.end() - 1]}\\{line[html.end() - 1 :]}"
            continue
        run, rest = found.group(1), line[found.end() :]
        if open_fence is None:
            if not (run[0] == "`" and "`" in rest):  # an info string holds no backtick
                open_fence = run
        elif run[0] == open_fence[0] and len(run) >= len(open_fence) and not rest.strip():
            open_fence = None
    text = "\n".join(lines)
    return text if open_fence is None else f"{text}\n{open_fence}"


def _one_line(value: Any) -> str:
    """A field of the header on its line: a name's newlines made headings of their own."""
    return " ".join(str(value).splitlines())  # "\r" too: Markdown ends a line at it


def _arguments(record: dict[str, Any]) -> str:
    args = record.get("arguments")
    if isinstance(args, str):
        try:
            return orjson.dumps(orjson.loads(args), option=orjson.OPT_INDENT_2).decode()
        except orjson.JSONDecodeError:
            return args
    return orjson.dumps(args, option=orjson.OPT_INDENT_2).decode()


def _event(view: ExportView, event: Event) -> list[str]:
    short = view.shorts.get(event.id, event.id)
    marks = ""
    if event.id == view.head:
        marks += " · **HEAD**"
    for name in view.labels.get(event.id, []):
        marks += f" · label `{name}`"
    where = f"`{short}` · {event.timestamp}{marks}"
    if event.id in view.unreadable:
        return [
            f"#### {event.kind} · {event.role or '-'} · {where}",
            "",
            f"> **payload unreadable** ({view.unreadable[event.id]}); see `agentlog fsck {view.id}`",
            "",
        ]
    record = event.record if isinstance(event.record, dict) else {}
    if event.kind == "message":
        lines = [f"### {event.role or 'message'} · {where}", ""]
        text = answer_content(record.get("content")) if record else record_text("message", event.record)
        if text:
            lines += [_closed(text), ""]
        reasoning = reasoning_shown(record)
        if reasoning:
            lines += ["<details><summary>reasoning</summary>", "", _closed(reasoning), "", "</details>", ""]
        return lines
    if event.kind == "tool_call":
        name = record.get("name", "?")
        return [f"#### tool call `{name}` · {where}", "", _fence(_arguments(record), "json"), ""]
    if event.kind == "tool_result":
        error = " (error)" if record.get("is_error") else ""
        body = readable_content(record.get("content")) if record else record_text("tool_result", event.record)
        return [f"#### tool result{error} · {where}", "", _fence(body), ""]
    if event.kind == "compaction":
        summary = record.get("summary", "")
        return [
            "---",
            "",
            f"### ⇤ compaction · {where}",
            "",
            "The model's context was summarized here; every event above is kept and still shown.",
            "",
            "> " + _closed(str(summary)).replace("\n", "\n> "),
            "",
            "---",
            "",
        ]
    if event.kind == "branch_summary":
        summary = record.get("summary", "")
        return [f"### ↩ branch summary · {where}", "", "> " + _closed(str(summary)).replace("\n", "\n> "), ""]
    text = record_text(event.kind, event.record)
    return [f"#### {event.kind} · {where}", "", _fence(text) if text else "(empty)", ""]


def _totals(view: ExportView) -> str:
    t = view.totals
    if t.source == "none":
        return "no token usage recorded"
    cost = f", ${t.cost_usd:.4f}" if t.cost_usd is not None else ""
    return f"{t.input_tokens:,} input + {t.output_tokens:,} output tokens{cost} over {t.calls} calls (from {t.source})"


def session_markdown(view: ExportView, *, all_branches: bool = False) -> str:
    """The whole document as one string (``markdown_chunks`` writes it piece by piece)."""
    return "".join(markdown_chunks(view, all_branches=all_branches))


def markdown_chunks(view: ExportView, *, all_branches: bool = False) -> Iterator[str]:
    """The document, one event at a time: nothing holds more than one payload."""
    view.showing = len(view.order) if all_branches else len(view.active)
    meta = view.meta
    lines = [
        f"# {_one_line(view.title)}",
        "",
        f"- session: `{view.id}`",
        f"- working directory: {_one_line(meta.get('working_dir') or '-')}",
        f"- model: {_one_line(meta.get('model') or '-')}",
        f"- created: {_one_line(meta.get('created_at') or '-')}",
        f"- HEAD: `{view.head}`",
        f"- events: {len(view.order):,} ({len(view.active):,} on the active path, "
        f"{len(view.branches):,} other {'branch' if len(view.branches) == 1 else 'branches'})",
        f"- tokens (active path): {_totals(view)}",
        "",
        "## Active path",
        "",
    ]
    yield "\n".join(lines) + "\n"
    for eid in view.active:
        yield "\n".join(_event(view, view.load(eid))) + "\n"
    if all_branches:
        for n, branch in enumerate(view.branches, 1):
            parent = "a new root" if branch.parent == NIL_ID else f"`{view.shorts.get(branch.parent, branch.parent)}`"
            yield f"## Branch {n} (from {parent}, ends at `{view.shorts.get(branch.tip, branch.tip)}`)\n\n"
            for eid in branch.events:
                yield "\n".join(_event(view, view.load(eid))) + "\n"
    shown = view.order if all_branches else view.active
    unreadable = [eid for eid in shown if eid in view.unreadable]
    if unreadable:
        yield f"## Payloads unreadable: {len(unreadable):,}\n\n"
        yield "".join(f"- `{view.shorts.get(eid, eid)}`: {view.unreadable[eid]}\n" for eid in unreadable)
