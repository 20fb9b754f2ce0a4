"""The structured form of a summary: its empty shape, and how one is
normalized (from a model's or a stored record's JSON), merged with the
previous one, and rendered as the markdown the model reads."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from ..records import StructuredSummary

__all__ = [
    "MAX_GOAL_CHARS",
    "MAX_ITEMS",
    "MAX_ITEM_CHARS",
    "empty_structured",
    "merge_structured",
    "normalize_structured",
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
