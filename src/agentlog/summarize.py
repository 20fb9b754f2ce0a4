"""Summarizers: what a compaction says about the events it replaces.

A summarizer turns events (and the previous compaction's structured
summary, if any) into a ``Summary``: markdown ``text`` for the model and a
``structured`` dict with the keys of ``empty_structured()``, kept in the
compaction record so the next compaction can update it.

- ``ExtractiveSummarizer`` is offline and deterministic: it picks
  sentences and names out of the events by pattern.
- ``LLMSummarizer`` asks a model for the same JSON; any failure raises
  ``SummarizerError`` so the caller writes nothing and can retry.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, cast, runtime_checkable

from ._text import content_text
from .errors import SummarizerError
from .event import Event
from .records import StructuredSummary

__all__ = [
    "CompletionModel",
    "ExtractiveSummarizer",
    "LLMSummarizer",
    "StreamingModel",
    "Summarizer",
    "Summary",
    "empty_structured",
    "merge_structured",
    "normalize_structured",
    "parse_summary_json",
    "render_events",
    "render_markdown",
]

MAX_ITEMS = 20
MAX_ITEM_CHARS = 240
MAX_GOAL_CHARS = 600
# Sections that shed their newest entries when over the bound, because
# the first constraints are the ones the session was set up with.
_KEEP_OLDEST = ("constraints",)


def empty_structured() -> StructuredSummary:
    return {
        "goal": "",
        "constraints": [],
        "progress": {"done": [], "in_progress": [], "blocked": []},
        "decisions": [],
        "files": {"read": [], "modified": []},
        "next_steps": [],
        "identifiers": [],
    }


@dataclass(frozen=True)
class Summary:
    text: str
    structured: StructuredSummary = field(default_factory=empty_structured)


@runtime_checkable
class Summarizer(Protocol):
    """What compaction and branch summaries call (``Session.summarizer``).

    ``previous`` is the ``structured`` value of the previous compaction
    record, as stored: normally a StructuredSummary, but read from JSON, so
    normalize it (``normalize_structured``) before trusting its shape. A
    failure may raise anything; the caller turns it into SummarizerError
    and writes nothing."""

    def summarize(self, events: list[Event], previous: Mapping[str, Any] | None) -> Summary: ...


# --- the structured form: normalize, merge, render ---------------------------------

_LIST_PATHS: tuple[tuple[str, ...], ...] = (
    ("constraints",),
    ("progress", "done"),
    ("progress", "in_progress"),
    ("progress", "blocked"),
    ("decisions",),
    ("files", "read"),
    ("files", "modified"),
    ("next_steps",),
    ("identifiers",),
)


def _key(item: str) -> str:
    return " ".join(item.lower().split()).rstrip(".")


def _bounded(items: Iterable[Any], section: str, limit: int = MAX_ITEMS) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        text = " ".join(str(item).split())
        if len(text) > MAX_ITEM_CHARS:
            text = text[: MAX_ITEM_CHARS - 3] + "..."
        if text and _key(text) not in seen:
            seen.add(_key(text))
            out.append(text)
    return out[:limit] if section in _KEEP_OLDEST else out[-limit:]


def _get(d: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        d = d.get(key) if isinstance(d, dict) else None
    return d


def _structured(goal: str, lists: Callable[[tuple[str, ...]], list[str]]) -> StructuredSummary:
    """A summary with ``goal`` and, at each of ``_LIST_PATHS``, ``lists(path)``."""
    return {
        "goal": goal,
        "constraints": lists(("constraints",)),
        "progress": {
            "done": lists(("progress", "done")),
            "in_progress": lists(("progress", "in_progress")),
            "blocked": lists(("progress", "blocked")),
        },
        "decisions": lists(("decisions",)),
        "files": {"read": lists(("files", "read")), "modified": lists(("files", "modified"))},
        "next_steps": lists(("next_steps",)),
        "identifiers": lists(("identifiers",)),
    }


def normalize_structured(data: Any, limit: int = MAX_ITEMS) -> StructuredSummary:
    """Coerce a summary dict (possibly from a model) to the schema: every
    key present, lists of unique short strings, a string goal."""
    if not isinstance(data, dict):
        return empty_structured()
    goal = data.get("goal")

    def items(path: tuple[str, ...]) -> list[str]:
        value = _get(data, path)
        if isinstance(value, str):
            value = [value]
        present = [v for v in value if v] if isinstance(value, list) else []
        return _bounded(present, path[0], limit)

    return _structured(" ".join(str(goal).split())[:MAX_GOAL_CHARS] if goal else "", items)


def merge_structured(
    previous: Mapping[str, Any] | None,
    current: Mapping[str, Any],
    goal_changed: bool = False,
    limit: int = MAX_ITEMS,
) -> StructuredSummary:
    """Update ``previous`` with ``current``: lists unioned (old first, no
    duplicates, bounded); what is now done leaves in-progress and next
    steps; files modified leave files read; the goal stays unless changed."""
    prev, cur = normalize_structured(previous, limit), normalize_structured(current, limit)
    done = {_key(x) for x in prev["progress"]["done"] + cur["progress"]["done"]}
    modified = {_key(x) for x in prev["files"]["modified"] + cur["files"]["modified"]}

    def items(path: tuple[str, ...]) -> list[str]:
        both: list[str] = _get(prev, path) + _get(cur, path)
        if path in (("progress", "in_progress"), ("next_steps",)):
            both = [x for x in both if _key(x) not in done]
        elif path == ("files", "read"):
            both = [x for x in both if _key(x) not in modified]
        return _bounded(both, path[0], limit)

    return _structured(cur["goal"] if (goal_changed or not prev["goal"]) else prev["goal"], items)


def render_markdown(structured: Mapping[str, Any]) -> str:
    """The compact markdown the model reads; empty sections are left out."""
    s = normalize_structured(structured, limit=1 << 30)  # shape only; bounds are the caller's
    lines: list[str] = []

    def section(title: str, items: list[str], level: str = "##") -> None:
        if items:
            lines.append(f"{level} {title}")
            lines.extend(f"- {item}" for item in items)

    if s["goal"]:
        lines += ["## Goal", s["goal"]]
    section("Constraints & preferences", s["constraints"])
    progress = s["progress"]
    if any(progress.values()):
        lines.append("## Progress")
        section("Done", progress["done"], "###")
        section("In progress", progress["in_progress"], "###")
        section("Blocked", progress["blocked"], "###")
    section("Key decisions", s["decisions"])
    if s["files"]["read"] or s["files"]["modified"]:
        lines.append("## Files")
        if s["files"]["read"]:
            lines.append("- Read: " + ", ".join(s["files"]["read"]))
        if s["files"]["modified"]:
            lines.append("- Modified: " + ", ".join(s["files"]["modified"]))
    section("Next steps", s["next_steps"])
    if s["identifiers"]:
        lines += ["## Critical identifiers", ", ".join(f"`{x}`" for x in s["identifiers"])]
    return "\n".join(lines)


# --- reading events --------------------------------------------------------------


_text = content_text


def _rec(event: Event) -> dict[str, Any]:
    return event.record if isinstance(event.record, dict) else {}


def _messages(events: list[Event], role: str) -> list[str]:
    return [_text(_rec(e).get("content")) for e in events if e.kind == "message" and e.role == role]


def _sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?])\s+|\n+", text)
    return [re.sub(r"^\s*(?:[-*+>]|\d+[.)])\s+", "", p).strip() for p in parts if p.strip()]


def render_events(events: list[Event], max_result_chars: int = 2000) -> str:
    """Events as plain text for a summarizing model; long tool output is cut."""
    lines: list[str] = []
    for e in events:
        rec = _rec(e)
        if e.kind == "message":
            lines.append(f"[{e.role}] {_text(rec.get('content'))}")
        elif e.kind == "tool_call":
            lines.append(f"[tool call {rec.get('name', '')}] {rec.get('arguments', '')}")
        elif e.kind == "tool_result":
            out = _text(rec.get("content"))
            if len(out) > max_result_chars:
                out = out[:max_result_chars] + f"\n... ({len(out) - max_result_chars} more characters)"
            flag = " (error)" if rec.get("is_error") else ""
            lines.append(f"[tool result {rec.get('name', '')}{flag}] {out}")
        elif e.kind in ("compaction", "branch_summary"):
            lines.append(f"[{e.kind}] {rec.get('summary', '')}")
    return "\n".join(lines)


# --- the extractive summarizer ---------------------------------------------------------

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
_PATH = re.compile(
    r"(?<![\w/.:-])(?:~|\.{1,2})?/?(?:[\w.-]+/)+[\w.-]+"
    r"|(?<![\w/.-])[\w-]+\.(?:py|md|rst|txt|json|jsonl|toml|ya?ml|cfg|ini|js|ts|tsx|"
    r"rs|go|c|h|cc|cpp|java|rb|sh|sql|html|css|lock)\b"
)
_BACKTICK = re.compile(r"`([^`\s]{2,80})`")

_READ_TOOLS = re.compile(r"read|view|cat|open|grep|search|glob|find|list|ls", re.I)
_WRITE_TOOLS = re.compile(r"write|edit|create|patch|replace|insert|delete|remove|move|rename|save", re.I)
_SHELL_TOOLS = re.compile(r"bash|shell|exec|run|terminal|command", re.I)
_PATH_ARGS = ("path", "file", "file_path", "filepath", "filename", "target_file", "paths", "files")
# A redirection's target is a whole word: ``>alert(2)`` names no file.
_ARG = r"([^\s;&|<>()'\"]+)(?=$|[\s;&|<>)])"
_SHELL_WRITE = re.compile(
    r">>?\s*"
    + _ARG  # redirection (not 2>&1)
    + r"|\b(?:tee(?:\s+-a)?|touch|rm(?:\s+-\w+)*)\s+"
    + _ARG
    + r"|\bsed\s+-i\S*\s+(?:'[^']*'|\"[^\"]*\"|\S+)\s+"
    + _ARG
)  # in-place edit
_SHELL_READ = re.compile(r"(?:^|[;&|]\s*)(?:cat|head|tail|less|more|wc|grep|rg|diff|ls)\b([^;&|>]*)")
# Text a shell does not read as redirections: a quoted string, and an HTML
# tag (``<script>``, ``<img src=x>``), which in a tool's arguments is
# almost always markup being written or echoed, not ``< file > file``.
_QUOTED = re.compile(r"'([^']*)'|\"((?:[^\"\\]|\\.)*)\"")
_TAG = re.compile(r"</?[A-Za-z][\w:-]*(?:\s+[\w:-]+=[^\s<>]*)*/?>")
_PLAIN_WORD = re.compile(r"[^\s;&|<>()'\"`$]+")
_NOT_A_PATH = re.compile(r"[<>\x00-\x1f]")


def _shell_words(command: str) -> str:
    """``command`` with quoted strings and HTML tags made inert: a quoted
    plain word (``'file.txt'``) keeps its text, any other quoted string
    becomes ``''``, and a tag becomes spaces."""

    def unquote(m: re.Match[str]) -> str:
        text = m.group(1) if m.group(1) is not None else m.group(2)
        return text if _PLAIN_WORD.fullmatch(text) else "''"

    return _TAG.sub(lambda m: " " * len(m.group()), _QUOTED.sub(unquote, command))


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
        hits += [(m.start(), m.group().rstrip(".")) for m in _PATH.finditer(text)]
        hits += [(m.start(1), m.group(1)) for m in _BACKTICK.finditer(text)]
        found += [value for _, value in sorted(hits)]
    return found


def _call_files(name: str, arguments: Any) -> tuple[list[str], list[str]]:
    """(read, modified) paths named by one tool call."""
    try:
        args = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        args = {}
    args = args if isinstance(args, dict) else {}
    shell = args.get("command") or args.get("cmd")
    if _SHELL_TOOLS.search(name) and isinstance(shell, str):
        shell = _shell_words(shell)
        written = [next(g for g in m.groups() if g) for m in _SHELL_WRITE.finditer(shell)]
        read = [
            tok
            for m in _SHELL_READ.finditer(shell)
            for tok in m.group(1).split()
            if not tok.startswith("-") and _PATH.fullmatch(tok)
        ]
        return read, [w for w in written if not w.startswith("/dev/")]
    paths: list[str] = []
    for key in _PATH_ARGS:
        value = args.get(key)
        values = value if isinstance(value, list) else [value]
        # A value with markup or a line break in it is not a path to report.
        paths += [v for v in values if isinstance(v, str) and v and not _NOT_A_PATH.search(v)]
    command = args.get("command")  # an editor tool's sub-command, e.g. view / str_replace
    if command in ("view", "read"):
        return paths, []
    if command in ("create", "str_replace", "insert", "write", "edit", "undo_edit"):
        return [], paths
    if _WRITE_TOOLS.search(name):
        return [], paths
    if _READ_TOOLS.search(name):
        return paths, []
    return [], []


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
        states = [e for e in events if e.kind == "state" and isinstance(_rec(e).get("todos"), list)]
        for item in _rec(states[-1])["todos"] if states else ():
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
        if results and _rec(results[-1]).get("is_error"):
            rec = _rec(results[-1])
            first = (_text(rec.get("content")).strip().splitlines() or [""])[0]
            blocked.append(f"tool {rec.get('name') or 'call'} failed: {first}")
        s["progress"] = {"done": done, "in_progress": doing, "blocked": blocked}

        latest = assistants[-1] if assistants else ""
        s["next_steps"] = [x for x in _sentences(latest) if _NEXT.search(x)] + todo

        read: list[str] = []
        modified: list[str] = []
        calls = [_rec(e) for e in events if e.kind == "tool_call"]
        for call in calls:
            r, m = _call_files(str(call.get("name", "")), call.get("arguments"))
            read += r
            modified += m
        s["files"] = {"read": read, "modified": modified}
        s["identifiers"] = _identifiers(users + assistants + [str(c.get("arguments", "")) for c in calls])
        return s, bool(changes)


# --- the model-backed summarizer -------------------------------------------------------


class CompletionModel(Protocol):
    def complete(self, messages: list[dict[str, Any]]) -> str: ...


class StreamingModel(Protocol):
    """The stream interface: the last item yielded carries ``.content``."""

    def stream(self, messages: list[dict[str, Any]], tools: Any = None) -> Iterable[Any]: ...


_PROMPT = """You maintain the working summary of an AI agent's session. Parts of the
conversation are being removed from the model's context; your summary replaces them.
Update the previous summary (if any) with the new conversation. Keep every
constraint, decision and identifier (paths, ids, URLs, hashes, names) that may
still matter; drop steps that are finished from next_steps.
Answer with one JSON object and nothing else, with exactly these keys:
{"goal": str, "constraints": [str], "progress": {"done": [str], "in_progress": [str],
"blocked": [str]}, "decisions": [str], "files": {"read": [str], "modified": [str]},
"next_steps": [str], "identifiers": [str]}"""

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def parse_summary_json(text: str) -> StructuredSummary:
    """The JSON object in a model's answer (code fences and prose around it
    tolerated), normalized; SummarizerError if there is none."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            data = json.loads(candidate)
        except ValueError:
            continue  # try the next candidate; none parsing raises below
        if isinstance(data, dict):
            return normalize_structured(data)
    raise SummarizerError(f"summarizer model did not answer with a JSON object: {text[:200]!r}")


class LLMSummarizer:
    """Asks ``model`` for the structured summary as JSON.

    ``model`` has ``complete(messages) -> str`` or ``stream(messages,
    tools=None)`` whose last item has ``.content``. Model errors and
    unparseable answers raise ``SummarizerError``. The answer replaces the
    previous summary: the prompt hands the model the previous one to
    update, so it may also drop what no longer matters."""

    def __init__(self, model: CompletionModel | StreamingModel, max_result_chars: int = 2000) -> None:
        self.model = model
        self.max_result_chars = max_result_chars

    def prompt(self, events: list[Event], previous: Mapping[str, Any] | None) -> list[dict[str, Any]]:
        prev = json.dumps(normalize_structured(previous), indent=1) if previous else "(none)"
        body = (
            f"<previous-summary>\n{prev}\n</previous-summary>\n\n<conversation>\n"
            f"{render_events(events, self.max_result_chars)}\n</conversation>"
        )
        return [{"role": "system", "content": _PROMPT}, {"role": "user", "content": body}]

    def _ask(self, messages: list[dict[str, Any]]) -> str:
        answer: object
        try:
            complete = getattr(self.model, "complete", None)
            if callable(complete):
                answer = complete(messages)
            else:
                last = None
                for item in cast(StreamingModel, self.model).stream(messages, tools=None):
                    last = item  # the last item yielded carries the answer
                answer = getattr(last, "content", None)
        except Exception as exc:  # any backend failure means: no summary, nothing written
            raise SummarizerError(f"summarizer model failed: {exc}") from exc
        if not isinstance(answer, str):
            raise SummarizerError(f"summarizer model gave no text (got {type(answer).__name__})")
        return answer

    def summarize(self, events: list[Event], previous: Mapping[str, Any] | None) -> Summary:
        structured = parse_summary_json(self._ask(self.prompt(list(events), previous)))
        text = render_markdown(structured)
        if not text:  # "{}" or every field empty: junk, not a summary
            raise SummarizerError("summarizer model answered with an empty summary")
        return Summary(text, structured)
