"""The model-backed summarizer: ``LLMSummarizer`` asks a model for the
structured summary as JSON; any failure raises ``SummarizerError`` so the
caller writes nothing and can retry."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Protocol, cast

from ..errors import SummarizerError
from ..event import Event
from ..records import StructuredSummary
from .eventtext import render_events
from .protocol import Summary
from .structured import normalize_structured, render_markdown

__all__ = ["CompletionModel", "LLMSummarizer", "StreamingModel", "parse_summary_json"]


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
