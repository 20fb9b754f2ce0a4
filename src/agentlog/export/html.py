"""A session as one self-contained HTML file.

Everything is inline (CSS, a few lines of JS); the page makes no network
request and has no external reference, so it works offline and can be
mailed. It shows the branch tree in a sidebar (HEAD marked), the active
path, then every other branch; compactions as boundaries with the
history before them still there; branch summaries; tool calls and
results collapsible; and the token and cost totals. All user content is
escaped, so a record holding ``<script>`` shows as text.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from html import escape
from typing import Any

import orjson

from ..branching import event_counts, going_on
from ..event import NIL_ID, Event
from ..recordtext import answer_content, readable_content, reasoning_shown, record_text, strip_terminal_codes
from .view import ExportView

__all__ = ["html_chunks", "render_html"]

_CSS = """
body{margin:0;font:14px/1.45 system-ui,sans-serif;color:#1d1d1f;background:#fafafa;display:flex}
aside{order:-1;width:320px;flex:none;height:100vh;overflow:auto;position:sticky;top:0;
background:#f0f0f3;border-right:1px solid #ddd;padding:12px;box-sizing:border-box;font-size:12px}
aside ul{list-style:none;margin:0;padding-left:12px;border-left:1px dotted #bbb}
aside>ul{padding-left:0;border:0}
aside a{color:#333;text-decoration:none;display:block;white-space:nowrap;overflow:hidden;
text-overflow:ellipsis}
aside a:hover{background:#e2e2ea}
aside .active>a{font-weight:600}
aside li.branch>small{color:#7c3aed}
main{flex:1;max-width:920px;padding:16px 28px}
article{background:#fff;border:1px solid #e3e3e3;border-radius:6px;padding:8px 12px;margin:10px 0}
article.user{border-left:4px solid #3b82f6}
article.assistant{border-left:4px solid #10b981}
article.tool_call,article.tool_result{border-left:4px solid #a855f7;background:#fcfaff}
article.state{opacity:.7}
.hdr{font-size:12px;color:#666;margin-bottom:4px}
.hdr code{color:#b45309}
.head{background:#16a34a;color:#fff;border-radius:3px;padding:0 4px;font-weight:600}
.label{background:#dcfce7;color:#166534;border-radius:3px;padding:0 4px}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f6f8;padding:6px;border-radius:4px;
margin:4px 0}
.text{white-space:pre-wrap;word-break:break-word}
.compaction{border:2px dashed #d97706;background:#fffbeb}
.branch_summary{border:2px dashed #ca8a04;background:#fefce8}
.boundary{color:#b45309;font-weight:600}
table.totals td{padding:0 12px 0 0}
h2{margin-top:28px;border-bottom:1px solid #ddd}
"""

_JS = """
function openAll(v){document.querySelectorAll('main details').forEach(function(d){d.open=v;});}
"""


#: What a page shows in place of characters a reader must not have obeyed:
#: the bidirectional embeddings, overrides and isolates as marks, as the
#: viewer shows them (one in a message made "; ls -la #" read backwards:
#: "Trojan Source"), and the C0 controls and DEL as their control pictures,
#: as the CLI shows them (an ESC or a NUL is no character of an HTML page).
_SHOWN: dict[int, str] = {c: f"\u27e6U+{c:04X}\u27e7" for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}
_SHOWN.update({c: chr(0x2400 + c) for c in range(0x20) if chr(c) not in "\t\n\r"})
_SHOWN[0x7F] = "\u2421"


def _e(text: Any) -> str:
    """``text`` as HTML text: escaped, a terminal's escape codes taken out
    (as search reads a tool's coloured output), the rest shown (``_SHOWN``)."""
    return escape(strip_terminal_codes(str(text)).translate(_SHOWN), quote=True)


def _anchor(eid: str) -> str:
    return f"e-{eid}"


def _marks(view: ExportView, eid: str) -> str:
    out = ""
    if eid == view.head:
        out += ' <span class="head">HEAD</span>'
    for name in view.labels.get(eid, []):
        out += f' <span class="label">{_e(name)}</span>'
    return out


def _arguments(record: dict[str, Any]) -> str:
    args = record.get("arguments")
    if isinstance(args, str):
        try:
            return orjson.dumps(orjson.loads(args), option=orjson.OPT_INDENT_2).decode()
        except orjson.JSONDecodeError:
            return args
    return orjson.dumps(args, option=orjson.OPT_INDENT_2).decode()


def _article(view: ExportView, event: Event) -> str:
    short = view.shorts.get(event.id, event.id)
    record = event.record if isinstance(event.record, dict) else {}
    css = event.role if event.kind == "message" and event.role else event.kind
    hdr = (
        f'<div class="hdr">{_e(event.kind)} · {_e(event.role or "-")} · '
        f"<code>{_e(short)}</code> · {_e(event.timestamp)}{_marks(view, event.id)}</div>"
    )
    if event.id in view.unreadable:
        body = (
            f'<div class="boundary">payload unreadable ({_e(view.unreadable[event.id])}); '
            f"see <code>agentlog fsck {_e(view.id)}</code></div>"
        )
    elif event.kind == "message":
        text = answer_content(record.get("content")) if record else record_text("message", event.record)
        body = f'<div class="text">{_e(text)}</div>'
        reasoning = reasoning_shown(record)
        if reasoning:
            body += f"<details><summary>reasoning</summary><pre>{_e(reasoning)}</pre></details>"
    elif event.kind == "tool_call":
        body = (
            f"<details><summary>tool call <b>{_e(record.get('name', '?'))}</b></summary>"
            f"<pre>{_e(_arguments(record))}</pre></details>"
        )
    elif event.kind == "tool_result":
        error = " (error)" if record.get("is_error") else ""
        text = readable_content(record.get("content")) if record else record_text("tool_result", event.record)
        body = (
            f"<details><summary>tool result{error} ({len(text):,} characters)</summary><pre>{_e(text)}</pre></details>"
        )
    elif event.kind == "compaction":
        body = (
            '<div class="boundary">⇤ compaction: the model\'s context was summarized '
            "here. Every event above is kept and shown.</div>"
            f'<details open><summary>summary</summary><div class="text">'
            f"{_e(record.get('summary', ''))}</div></details>"
        )
    elif event.kind == "branch_summary":
        body = (
            '<div class="boundary">↩ branch summary (what an abandoned branch did)</div>'
            f'<div class="text">{_e(record.get("summary", ""))}</div>'
        )
    else:
        body = (
            f"<details><summary>{_e(event.kind)}</summary>"
            f"<pre>{_e(record_text(event.kind, event.record))}</pre></details>"
        )
    return f'<article id="{_anchor(event.id)}" class="{_e(css)}">{hdr}{body}</article>'


#: Kinds left out of the sidebar (still shown, collapsed, in the page):
#: a checkpoint after every step would bury the conversation.
_SIDEBAR_HIDDEN = frozenset({"state"})


def _shown_links(view: ExportView) -> list[tuple[str, str]]:
    """(event id, the id it hangs from) of each event in the sidebar, in log
    order: a hidden event's children hang from its nearest shown ancestor."""
    entries = view.entries

    def anchor(eid: str) -> str:
        while eid in entries and entries[eid].kind in _SIDEBAR_HIDDEN:
            eid = entries[eid].parent_id
        return eid

    # log order: a parent comes before its children
    return [(eid, anchor(entries[eid].parent_id)) for eid in view.order if entries[eid].kind not in _SIDEBAR_HIDDEN]


def _preview(event: Event) -> str:
    """The sidebar's words for an event: the first line of its text (of a
    reply's answer, not of its thinking, which is no line of text)."""
    record = event.record
    answer = answer_content(record.get("content")) if event.kind == "message" and isinstance(record, dict) else ""
    return (answer.strip() or record_text(event.kind, record)).strip().split("\n", 1)[0][:60]


def _tree(view: ExportView, previews: dict[str, str]) -> str:
    """The branch tree: runs without branching flat, branch points nested
    (built without recursion, so a deep session is fine). ``previews``
    holds each event's words, gathered as the page's articles were written."""
    entries = view.entries
    active = set(view.active)
    links = _shown_links(view)
    children: dict[str, list[str]] = {}
    for eid, parent in links:
        children.setdefault(parent, []).append(eid)
    counts = event_counts(links)
    head_shown = view.head  # HEAD on a hidden checkpoint is marked on the event before it
    while head_shown in entries and entries[head_shown].kind in _SIDEBAR_HIDDEN:
        head_shown = entries[head_shown].parent_id
    out: list[str] = ["<ul>"]
    # Each stack item: ("run", event id, mark or "") to draw a run from an
    # event, ("open", title) to open a labelled branch, ("close",) to close
    # the list last opened. Popped last pushed first.
    stack: list[tuple[str, ...]] = []

    def fork(kids: Sequence[str], what: str) -> None:
        """Side branches as labelled lists under the branch point, then the
        branch that goes on (toward HEAD, else the one heading the most
        events, the newest of those) at the branch point's own level,
        marked: as in ``agentlog tree``, a session retried a thousand times
        does not nest a thousand lists deep, on the active path or off it
        (browsers re-parent what nests past 512 levels)."""
        went_on = going_on(kids, active, counts)
        titles = {k: f"{what} {n}/{len(kids)}" + ("  (active)" if k in active else "") for n, k in enumerate(kids, 1)}
        stack.append(("run", went_on, titles[went_on]))
        stack.append(("close",))  # the list of side branches
        for kid in reversed([k for k in kids if k != went_on]):
            stack.append(("close",))
            stack.append(("run", kid, ""))
            stack.append(("open", titles[kid]))

    roots = children.get(NIL_ID, ())
    if len(roots) > 1:
        out.append(f"<li><small>{len(roots)} roots</small><ul>")
        fork(roots, "root")
    elif roots:
        stack.append(("run", roots[0], ""))
    while stack:
        item = stack.pop()
        if item[0] == "close":
            out.append("</ul></li>")
            continue
        if item[0] == "open":
            out.append(f'<li class="branch"><small>{_e(item[1])}</small><ul>')
            continue
        current: str | None = item[1]
        mark = item[2]
        while current is not None:
            entry = entries[current]
            cls = ' class="active"' if current in active else ""
            text = previews.get(current, "")
            label = f"{view.shorts.get(current, current)} {entry.kind}"
            if entry.role:
                label += f"/{entry.role}"
            kids = children.get(current, ())
            line = (
                f'<li{cls}><a href="#{_anchor(current)}" title="{_e(text)}">{_e(label)} '
                f"{_e(text)}</a>{_marks(view, current)}"
            )
            if current == head_shown != view.head:
                line += ' <span class="head">HEAD</span>'
            if mark:
                line += f' <small class="went-on">↳ {_e(mark)}</small>'
                mark = ""
            if len(kids) == 1:
                out.append(line + "</li>")
                current = kids[0]
                continue
            if not kids:
                out.append(line + "</li>")
                current = None
                continue
            out.append(line + f" <small>{len(kids)} branches</small><ul>")
            fork(kids, "branch")
            current = None
    out.append("</ul>")
    return "".join(out)


def _totals(view: ExportView) -> str:
    t = view.totals
    if t.source == "none":
        return "<p>No token usage recorded.</p>"
    cost = f"${t.cost_usd:.4f}" if t.cost_usd is not None else "-"
    rows = [
        ("input tokens", f"{t.input_tokens:,}"),
        ("output tokens", f"{t.output_tokens:,}"),
        ("total tokens", f"{t.total_tokens:,}"),
        ("cost", cost),
        ("model calls", str(t.calls)),
        ("from", t.source),
    ]
    cells = "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in rows)
    return f'<table class="totals">{cells}</table>'


def render_html(view: ExportView) -> str:
    """The whole page as one string (``html_chunks`` writes it piece by piece)."""
    return "".join(html_chunks(view))


def html_chunks(view: ExportView) -> Iterator[str]:
    """The page, one event at a time: nothing holds more than one payload.
    The sidebar comes last in the file (CSS puts it first on screen), once
    every article has given its words to the tree."""
    meta = view.meta
    facts = [
        ("session", view.id),
        ("working directory", meta.get("working_dir") or "-"),
        ("model", meta.get("model") or "-"),
        ("created", meta.get("created_at") or "-"),
        (
            "events",
            f"{len(view.order):,} ({len(view.active):,} on the active path, {len(view.branches):,} other "
            f"{'branch' if len(view.branches) == 1 else 'branches'})",
        ),
    ]
    yield "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{_e(view.title)}</title><style>{_CSS}</style>",
            f"<script>{_JS}</script></head><body><main>",
            f"<h1>{_e(view.title)}</h1><p>",
            "<br>".join(f"<b>{_e(k)}</b>: {_e(v)}" for k, v in facts),
            "</p>",
            "<h2>Tokens and cost (active path)</h2>",
            _totals(view),
            '<p><button onclick="openAll(true)">expand all</button> '
            '<button onclick="openAll(false)">collapse all</button></p>',
            "<h2>Active path</h2>",
            "",
        ]
    )
    previews: dict[str, str] = {}

    def article(eid: str) -> str:
        event = view.load(eid)
        previews[eid] = _preview(event)
        return _article(view, event) + "\n"

    for eid in view.active:
        yield article(eid)
    for n, branch in enumerate(view.branches, 1):
        parent = (
            "a new root"
            if branch.parent == NIL_ID
            else f'<a href="#{_anchor(branch.parent)}">{_e(view.shorts.get(branch.parent, branch.parent))}</a>'
        )
        yield f'<h2 id="branch-{n}">Branch {n} <small>(from {parent})</small></h2>\n'
        for eid in branch.events:
            yield article(eid)
    yield f"</main>\n<aside><b>Branches</b> (HEAD marked){_tree(view, previews)}</aside></body></html>\n"
