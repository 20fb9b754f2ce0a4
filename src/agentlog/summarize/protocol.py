"""What a summarizer is given and what it gives back: ``Summarizer`` and ``Summary``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..event import Event
from ..records import StructuredSummary
from .structured import empty_structured

__all__ = ["Summarizer", "Summary"]


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
