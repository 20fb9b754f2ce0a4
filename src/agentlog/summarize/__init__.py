"""Summarizers: what a compaction says about the events it replaces.

A summarizer turns events (and the previous compaction's structured
summary, if any) into a ``Summary``: markdown ``text`` for the model and a
``structured`` dict with the keys of ``empty_structured()``, kept in the
compaction record so the next compaction can update it.

- ``ExtractiveSummarizer`` is offline and deterministic: it picks
  sentences and names out of the events by pattern.
- ``LLMSummarizer`` asks a model for the same JSON; any failure raises
  ``SummarizerError`` so the caller writes nothing and can retry.

The parts, one concern a module: ``protocol`` (``Summary``,
``Summarizer``), ``structured`` (the structured form: normalize, merge,
render), ``eventtext`` (events as text), ``extractive`` with
``toolfiles`` (the files a tool call touched), and ``llm``.
"""

from __future__ import annotations

from .eventtext import render_events
from .extractive import ExtractiveSummarizer
from .llm import CompletionModel, LLMSummarizer, StreamingModel, parse_summary_json
from .protocol import Summarizer, Summary
from .structured import empty_structured, merge_structured, normalize_structured, render_markdown

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
