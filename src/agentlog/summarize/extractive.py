"""The offline, deterministic summarizer: ``ExtractiveSummarizer`` picks
sentences and names out of the events by pattern."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from .._text import content_text
from ..event import Event
from ..records import StructuredSummary
from .eventtext import record_of, render_events
from .protocol import Summary
from .structured import MAX_ITEMS, empty_structured, merge_structured, render_markdown
from .toolfiles import PATH_PATTERN, call_files

__all__ = ["ExtractiveSummarizer"]

_text = content_text

_CONSTRAINT = re.compile(
    r"\b(must|never|always|don't|do not|prefer|avoid|should not|shouldn't|"
    r"make sure|required?|only use)\b",
    re.I,
)
_DECISION = re.compile(
    r"\b(decided|decide to|chose|choose to|will use|going with|instead|"
    r"opted|settled on|switch(?:ed)? to)\b",
    re.I,
)
_DONE = re.compile(r"\b(done|finished|completed|implemented|fixed|added|created|now pass(?:es)?)\b", re.I)
_BLOCKED = re.compile(r"\b(blocked|stuck|unable to|cannot|can't)\b", re.I)
_NEXT = re.compile(r"\b(next|then|remaining|still need|need to|todo|will|plan to)\b", re.I)
_GOAL_CHANGE = re.compile(
    r"\b(new (?:goal|task)|change of plans?|forget (?:that|about|the previous)|"
    r"instead,? (?:let's|please)|now let's)\b",
    re.I,
)
_CHECKBOX = re.compile(r"^\s*[-*]\s*\[([ xX])\]\s*(.+)$", re.M)
_BOX = re.compile(r"\[[ xX]\]")  # a checkbox line, once _sentences took its bullet off

_URL = re.compile(r"https?://[^\s<>\"'`)\]]+")
_UUID = re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
_HASH = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,64}\b")
_BACKTICK = re.compile(r"`([^`\s]{2,80})`")


def _messages(events: list[Event], role: str) -> list[str]:
    return [_text(record_of(e).get("content")) for e in events if e.kind == "message" and e.role == role]


def _sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?])\s+|\n+", text)
    return [re.sub(r"^\s*(?:[-*+>]|\d+[.)])\s+", "", p).strip() for p in parts if p.strip()]


def _identifiers(texts: Iterable[str]) -> list[str]:
    """Names in first-seen order. A URL or UUID is blanked out once found
    (same length, so positions hold) so its parts are not found again."""

    def blank(m: re.Match[str]) -> str:
        return " " * len(m.group())

    found: list[str] = []
    for text in texts:
        hits = [(m.start(), m.group().rstrip(".,;:")) for m in _URL.finditer(text)]
        text = _URL.sub(blank, text)
        hits += [(m.start(), m.group()) for m in _UUID.finditer(text)]
        text = _UUID.sub(blank, text)
        hits += [(m.start(), m.group()) for m in _HASH.finditer(text)]
        hits += [(m.start(), m.group().rstrip(".")) for m in PATH_PATTERN.finditer(text)]
        hits += [(m.start(1), m.group(1)) for m in _BACKTICK.finditer(text)]
        found += [value for _, value in sorted(hits)]
    return found


class ExtractiveSummarizer:
    """Offline, deterministic summaries by pattern (see module docstring).

    - goal: the first user message (or, with a previous goal, a user
      message that announces a new goal);
    - constraints: user/system sentences with must, never, always, don't,
      prefer, avoid...;
    - decisions: sentences with decided, chose, will use, instead...;
    - progress: the latest ``state`` event's todos, ``[x]``/``[ ]``
      checkboxes, "done/fixed/added" sentences, and a failing last tool;
    - files: paths in file-tool arguments and shell commands (a quoted
      string or an HTML tag in a command is not a redirection, and a value
      with markup in it is not a path);
    - next steps: forward-looking sentences of the latest assistant text,
      and pending todos;
    - identifiers: URLs, UUIDs, hex hashes, paths, `backticked` names.
    """

    def __init__(self, max_items: int = MAX_ITEMS) -> None:
        self.max_items = max_items

    def summarize(self, events: list[Event], previous: Mapping[str, Any] | None) -> Summary:
        current, goal_changed = self._extract(list(events))
        merged = merge_structured(previous, current, goal_changed, self.max_items)
        text = render_markdown(merged)
        if not text:
            # No pattern matched (assistant text only, say). An empty summary
            # would drop these events from the context without a trace, so
            # the last lines of the events stand in, as work in progress.
            lines = [line for line in render_events(events).splitlines() if line.strip()]
            current["progress"]["in_progress"] = lines[-3:]
            merged = merge_structured(previous, current, goal_changed, self.max_items)
            text = render_markdown(merged)
        return Summary(text, merged)

    def _extract(self, events: list[Event]) -> tuple[StructuredSummary, bool]:
        s = empty_structured()
        users = _messages(events, "user")
        assistants = [t for t in _messages(events, "assistant") if t.strip()]
        rules = users + _messages(events, "system") + _messages(events, "developer")

        changes = [u for u in users if _GOAL_CHANGE.search(u)]
        if changes:
            s["goal"] = changes[-1]
        elif users:  # a bare "hi" says little: then the next message joins it
            s["goal"] = users[0] if len(users[0]) >= 40 or len(users) == 1 else f"{users[0]} {users[1]}"
        s["constraints"] = [x for t in rules for x in _sentences(t) if _CONSTRAINT.search(x)]
        s["decisions"] = [x for t in assistants + users for x in _sentences(t) if _DECISION.search(x)]

        done: list[str] = []
        doing: list[str] = []
        blocked: list[str] = []
        todo: list[str] = []
        for text in assistants:
            for mark, item in _CHECKBOX.findall(text):
                (doing if mark == " " else done).append(item)
            done += [x for x in _sentences(text) if _DONE.search(x) and not _BOX.match(x)]
        for text in assistants[-3:]:
            blocked += [x for x in _sentences(text) if _BLOCKED.search(x)]
        states = [e for e in events if e.kind == "state" and isinstance(record_of(e).get("todos"), list)]
        for item in record_of(states[-1])["todos"] if states else ():
            if not isinstance(item, dict) or not item.get("text"):
                continue
            status = str(item.get("status", "")).lower()
            bucket = {
                "done": done,
                "completed": done,
                "in_progress": doing,
                "doing": doing,
                "blocked": blocked,
                "failed": blocked,
            }.get(status, todo)
            bucket.append(str(item["text"]))
        results = [e for e in events if e.kind == "tool_result"]
        if results and record_of(results[-1]).get("is_error"):
            rec = record_of(results[-1])
            first = (_text(rec.get("content")).strip().splitlines() or [""])[0]
            blocked.append(f"tool {rec.get('name') or 'call'} failed: {first}")
        s["progress"] = {"done": done, "in_progress": doing, "blocked": blocked}

        latest = assistants[-1] if assistants else ""
        s["next_steps"] = [x for x in _sentences(latest) if _NEXT.search(x)] + todo

        read: list[str] = []
        modified: list[str] = []
        calls = [record_of(e) for e in events if e.kind == "tool_call"]
        for call in calls:
            r, m = call_files(str(call.get("name", "")), call.get("arguments"))
            read += r
            modified += m
        s["files"] = {"read": read, "modified": modified}
        s["identifiers"] = _identifiers(users + assistants + [str(c.get("arguments", "")) for c in calls])
        return s, bool(changes)
