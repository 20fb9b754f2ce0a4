"""The shapes of the records of each event kind, as ``TypedDict`` s.

``Event.record`` is free JSON; these types say what the kinds that reach
a model (and ``state``, ``label``) hold, per docs/records.md, which a test
(tests/test_records_doc.py) checks against this module field by field.

Records keep the provider's full structure, so a stored record may carry
keys beyond these (reasoning details, provider ids, raw payloads): the
types list the fields agentlog writes and reads, not a closed set. Read a
stored record through ``typing.cast`` after checking ``isinstance(record,
dict)``; its values still come from JSON someone else may have written.
"""

# No ``from __future__ import annotations`` here: on Python 3.11 it hides
# ``NotRequired`` from TypedDict's ``__required_keys__``, which readers and
# tests/test_records_doc.py rely on.
from collections.abc import Mapping
from typing import Any, Literal, NotRequired, TypedDict

__all__ = [
    "RECORD_TYPES",
    "BranchSummaryRecord",
    "CompactionRecord",
    "Content",
    "ContentPart",
    "FilesSummary",
    "LabelRecord",
    "MessageRecord",
    "ProgressSummary",
    "RecordTuple",
    "StateRecord",
    "StructuredSummary",
    "TodoRecord",
    "TodoStatus",
    "ToolCallRecord",
    "ToolResultRecord",
    "UsageRecord",
    "UsageTotalsRecord",
]

#: One part of a multi-part content: a string, or a provider's part object
#: such as ``{"type": "text", "text": ...}`` or ``{"type": "image_url", ...}``.
ContentPart = str | dict[str, Any]
#: A message's content as providers send it: text, parts, or null beside tool calls.
Content = str | list[ContentPart] | None

#: ``(kind, record, role)``: an event to append, as ``Session.append_many`` takes it.
RecordTuple = tuple[str, Mapping[str, Any], str | None]

TodoStatus = Literal["pending", "in_progress", "done", "blocked"]


class UsageRecord(TypedDict):
    """Tokens one model call consumed, as the provider reported them."""

    input_tokens: int
    output_tokens: int
    total_tokens: int
    cost_usd: NotRequired[float]


class MessageRecord(TypedDict):
    """``message`` (roles user, assistant, system, developer)."""

    content: Content
    # An assistant turn's settled output (agent.models.Completion.to_records):
    reasoning: NotRequired[str]
    usage: NotRequired[UsageRecord]
    model: NotRequired[str]
    finish_reason: NotRequired[str | None]
    provider: NotRequired[dict[str, Any]]
    provider_name: NotRequired[str]  # the provider's name, where a source gives only that (imports)
    # Chat Completions message fields the provider views send back as they are:
    name: NotRequired[str]
    refusal: NotRequired[str]
    audio: NotRequired[dict[str, Any]]


class ToolCallRecord(TypedDict):
    """``tool_call`` (role assistant): one call of an assistant turn."""

    id: str
    name: str
    arguments: str  # JSON text, as providers send it


class ToolResultRecord(TypedDict):
    """``tool_result`` (role tool): the answer to the call named by ``tool_call_id``."""

    tool_call_id: str
    name: str
    content: Content
    is_error: bool


class ProgressSummary(TypedDict):
    done: list[str]
    in_progress: list[str]
    blocked: list[str]


class FilesSummary(TypedDict):
    read: list[str]
    modified: list[str]


class StructuredSummary(TypedDict):
    """The ``structured`` summary of a compaction or branch summary
    (summarize.empty_structured gives an empty one)."""

    goal: str
    constraints: list[str]
    progress: ProgressSummary
    decisions: list[str]
    files: FilesSummary
    next_steps: list[str]
    identifiers: list[str]


class CompactionRecord(TypedDict):
    """``compaction`` (role system): a summary that replaces the events before
    ``first_kept_event_id`` in the context; nothing is deleted."""

    summary: str
    structured: StructuredSummary
    first_kept_event_id: str | None
    tokens_before: int | None  # None: an imported compaction whose source did not count
    tokens_after: int | None
    previous_compaction_id: str | None


class BranchSummaryRecord(TypedDict):
    """``branch_summary`` (role system): what an abandoned branch tried."""

    summary: str
    structured: StructuredSummary
    abandoned_head: str
    common_ancestor: str


class TodoRecord(TypedDict):
    text: str
    status: str  # a TodoStatus when agentlog wrote it; other values are read as pending
    retries: int


class UsageTotalsRecord(TypedDict):
    """The session's cumulative usage, in a ``state`` record."""

    input_tokens: int
    output_tokens: int
    cost_usd: float
    calls: int


class StateRecord(TypedDict):
    """``state`` (role system): the harness checkpoint (state.Checkpoint)."""

    scratchpad: str
    todos: list[TodoRecord]
    tool_calls: int
    usage: UsageTotalsRecord


class LabelRecord(TypedDict):
    """``label`` (no role): a name for an event."""

    name: str
    target: str


#: The record type of each kind that has a fixed shape (``custom`` has none).
RECORD_TYPES: dict[str, type] = {
    "message": MessageRecord,
    "tool_call": ToolCallRecord,
    "tool_result": ToolResultRecord,
    "compaction": CompactionRecord,
    "branch_summary": BranchSummaryRecord,
    "state": StateRecord,
    "label": LabelRecord,
}
