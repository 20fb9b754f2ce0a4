"""Compaction and branch summaries: new events, never deletions (invariant 4)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from ._text import content_text
from .cutpoints import choose_cut
from .errors import AgentlogError, InvalidOption, SummarizerError
from .event import NIL_ID, Event
from .summarize import Summarizer, Summary, render_events
from .tokens import count_tokens, event_tokens
from .view import SessionView

__all__ = ["CompactionPolicy", "check_count", "check_flag", "compact", "summarize_branch"]

#: How much of the current request a summary quotes when the cut falls
#: inside its turn (about 2,000 tokens).
REQUEST_CHARS = 8000

#: The most an automatic compaction keeps, as a share of the level that
#: triggers it (``threshold`` x the context window). Without it a
#: ``keep_tokens`` near or above that level (the default 20,000 against an
#: 8k window) keeps nearly everything, so compactions free no room and the
#: context outgrows the window; keeping at most half of the trigger leaves
#: the other half for the summary and the steps until the next compaction.
KEEP_SHARE = 0.5


@dataclass
class CompactionPolicy:
    """When to compact automatically, and how much recent history to keep.

    Compact when reported usage reaches ``threshold`` of the model's
    context window; keep about ``keep_tokens`` of the most recent events
    verbatim (never cutting inside a tool call / result group), but never
    more than ``KEEP_SHARE`` of that trigger level (``keep_for``)."""

    threshold: float = 0.8
    keep_tokens: int = 20_000
    enabled: bool = True

    def __post_init__(self) -> None:
        self.check()

    def check(self) -> None:
        """InvalidOption for a field out of its range or of the wrong type
        (checked again on use: the fields can be set one by one)."""
        threshold = self.threshold
        if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0 < threshold <= 1:
            raise InvalidOption(f"compaction threshold must be a number above 0 and at most 1, not {threshold!r}")
        check_count("keep_tokens", self.keep_tokens)
        check_flag("enabled", self.enabled)

    def due(self, used_tokens: int, context_window: int) -> bool:
        """Whether ``used_tokens`` of a ``context_window`` (0: unknown, never
        due) call for a compaction."""
        self.check()
        check_count("used_tokens", used_tokens)
        check_count("context_window", context_window)
        return self.enabled and context_window > 0 and used_tokens >= self.threshold * context_window

    def keep_for(self, context_window: int) -> int:
        """What an automatic compaction keeps for a model with
        ``context_window`` tokens (0: unknown): ``keep_tokens``, capped at
        ``KEEP_SHARE`` of ``threshold`` x ``context_window``."""
        self.check()
        check_count("context_window", context_window)
        if context_window == 0:
            return self.keep_tokens
        return min(self.keep_tokens, int(self.threshold * context_window * KEEP_SHARE))


def check_count(name: str, value: Any) -> int:
    """A count of tokens: an int of at least 0 (a bool or "5" is a mistake
    to report here, not a TypeError deep in the cut-point search)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidOption(f"{name} must be an integer, not {type(value).__name__} {value!r}")
    if value < 0:
        raise InvalidOption(f"{name} must be >= 0, not {value!r}")
    return value


def check_flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidOption(f"{name} must be True or False, not {type(value).__name__} {value!r}")
    return value


def _summarize(summarizer: Summarizer, events: list[Event], previous: dict[str, Any] | None) -> Summary:
    try:
        summary = summarizer.summarize(events, previous)
    except SummarizerError:
        raise
    except AgentlogError as exc:
        raise SummarizerError(f"summarizer failed: {exc}") from exc
    except Exception as exc:  # a plug-in's own failure; nothing was written
        raise SummarizerError(f"summarizer failed: {type(exc).__name__}: {exc}") from exc
    # A plug-in that returns the wrong thing is the same kind of failure.
    if not isinstance(summary, Summary) or not isinstance(summary.text, str):
        shown = type(summary.text if isinstance(summary, Summary) else summary).__name__
        raise SummarizerError(f"summarizer returned {shown}, not a Summary whose text is a string")
    if not isinstance(summary.structured, dict):
        # The record's schema (docs/records.md); the next compaction reads it.
        shown = type(summary.structured).__name__
        raise SummarizerError(f"summarizer returned a structured summary that is a {shown}, not an object")
    if not summary.text.strip() and render_events(events).strip():
        # An empty summary would silently drop everything it replaces from
        # the model's context: that is a failed summary, not a short one.
        raise SummarizerError("summarizer returned an empty summary of events that have content")
    try:
        orjson.dumps(summary.structured)
    except TypeError as exc:  # a set, an object: it could not be stored
        raise SummarizerError(f"summarizer returned a structured summary JSON cannot hold: {exc}") from None
    return summary


def compact(
    session: SessionView, *, summarizer: Summarizer, keep_tokens: int, split_turn: bool = False
) -> Event | None:
    """Summarize the context before a cut point into a ``compaction`` event.

    Returns the new event, or None when there is nothing worth compacting.
    A failing summarizer raises SummarizerError and writes nothing, so the
    compaction can simply be retried.

    The current turn (from the last user message) is kept whole. With
    ``split_turn``, a current turn that alone costs more than
    ``keep_tokens`` is cut too, at an assistant step: what an agent loop
    needs when one request runs many tool steps (``Agent`` does this)."""
    check_count("keep_tokens", keep_tokens)
    check_flag("split_turn", split_turn)
    # The compaction goes where the next append goes: after a select(), on
    # the selected path, which is the path context() reads.
    context = session.context(resolve=True)
    previous = context[0] if context and context[0].kind == "compaction" else None
    body = context[1:] if previous else context
    cut = choose_cut(body, keep_tokens)
    if split_turn and (cut is None or sum(event_tokens(e) for e in body[cut:]) > keep_tokens):
        # The current turn alone is over the budget (a long agentic turn: one
        # user message, many tool steps). Keeping it whole would compact
        # nothing, or too little, while the context keeps growing, so the cut
        # moves inside it, to an assistant step (never inside a tool group).
        inner = choose_cut(body, keep_tokens, keep_last_turn=False)
        if inner is not None and (cut is None or inner > cut):
            cut = inner
    if cut is None or cut <= 0:
        return None
    older, kept = body[:cut], body[cut:]
    prior = previous.record.get("structured") if previous and isinstance(previous.record, dict) else None
    summary = _summarize(summarizer, older, prior)
    text = summary.text
    request = _current_request(session, kept[0])
    goal = summary.structured.get("goal")
    if request and " ".join(request.split()) != (goal if isinstance(goal, str) else None):
        # The cut fell inside a turn: the request the kept messages answer is
        # quoted, not paraphrased, so the model keeps doing what was asked.
        text = f"{text}\n## The request the following messages answer (verbatim)\n{request}".lstrip("\n")
    record = {
        "summary": text,
        "structured": summary.structured,
        "first_kept_event_id": kept[0].id if kept else None,
        # Both figures are estimates of the same kind (the events as the
        # model would see them), so they compare; provider-reported usage
        # also counts the system prompt and tools, which compaction keeps.
        "tokens_before": sum(event_tokens(e) for e in context),
        "tokens_after": count_tokens(text) + sum(event_tokens(e) for e in kept),
        "previous_compaction_id": previous.id if previous else None,
    }
    return session.append("compaction", record, role="system")


def _current_request(session: SessionView, first_kept: Event) -> str | None:
    """The text of the user message whose turn the kept part starts inside,
    or None when the kept part starts a turn (at a user message)."""
    if first_kept.kind == "message" and first_kept.role == "user":
        return None
    if first_kept.parent_id == NIL_ID:
        return None
    for event in session.walk(first_kept.parent_id):
        if event.kind == "message" and event.role == "user":
            record = session.resolve(event).record
            text = content_text(record.get("content")) if isinstance(record, dict) else ""
            text = text.strip()
            if len(text) > REQUEST_CHARS:
                text = text[:REQUEST_CHARS] + f"... ({len(text) - REQUEST_CHARS} more characters)"
            return text or None
    return None


def _ancestors(session: SessionView, event_id: str) -> set[str]:
    return {e.id for e in session.walk(event_id)} | {NIL_ID}


def summarize_branch(session: SessionView, *, summarizer: Summarizer) -> Event | None:
    """After ``select()``, record what the abandoned branch tried.

    The events from HEAD back to the common ancestor with the selected
    event are summarized into a ``branch_summary`` that becomes the first
    event of the new branch (a child of the selected event)."""
    target = session.pending
    head = session.head
    if target is None or target == head:
        return None
    keep = _ancestors(session, target) if target != NIL_ID else {NIL_ID}
    abandoned: list[Event] = []
    ancestor = NIL_ID
    for event in session.walk():
        if event.id in keep:
            ancestor = event.id
            break
        abandoned.append(event)
    if not abandoned:
        return None
    abandoned.reverse()
    resolved = [session.resolve(e) for e in abandoned]
    summary = _summarize(summarizer, resolved, None)
    record = {
        "summary": summary.text,
        "structured": summary.structured,
        "abandoned_head": head,
        "common_ancestor": ancestor,
    }
    return session.append("branch_summary", record, role="system")
