"""The event model: what one fact on a session's timeline looks like."""

from __future__ import annotations

import functools
import hashlib
import re
import time
import uuid
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, TypeGuard

import uuid_utils

from ._slots import slot_constructor
from .errors import InvalidEvent, InvalidEventId, InvalidName, InvalidSessionId, StreamedDeltaError

__all__ = [
    "KINDS",
    "NIL_ID",
    "RESERVED_KINDS",
    "Event",
    "IdGenerator",
    "check_event_id",
    "check_kind",
    "check_new_session_id",
    "check_record",
    "check_role",
    "check_session_id",
    "check_sidecar_name",
    "digest_of",
    "is_event_id",
    "is_session_id",
    "stored_record_problem",
    "format_timestamp",
    "parse_timestamp",
]

NIL_ID = "00000000-0000-0000-0000-000000000000"

#: The kinds agentlog knows. Any other name matching ``KIND_PATTERN`` is
#: accepted as a custom kind; each line says whether it reaches the model.
KINDS = (
    "message",  # reaches the model: user / assistant / system text
    "tool_call",  # reaches the model: the assistant's request to run a tool
    "tool_result",  # reaches the model: the tool's output, paired by call id
    "compaction",  # reaches the model as a summary; earlier events stay on disk
    "branch_summary",  # reaches the model: what an abandoned branch tried
    "state",  # never sent: checkpointed harness state (todos, usage...)
    "label",  # never sent: a bookmark on the timeline
    "custom",  # never sent: anything a harness wants to keep
)

#: Kinds only agentlog itself writes, with why. The library stores them as
#: they come (a bundle import brings a repaired session's tombstones back),
#: but what a person or a client writes by hand (``agentlog append``, the
#: HTTP API) is refused: a tombstone always means a repair.
RESERVED_KINDS = {
    "tombstone": "only 'agentlog fsck --repair' writes it, in the place of a damaged event",
}

# The one definition of each identifier's grammar; every module imports these.
KIND_PATTERN = re.compile(r"[a-z][a-z0-9_.-]{0,31}\Z")
ROLE_PATTERN = KIND_PATTERN  # one grammar for both
_SESSION_ID = re.compile(r"[A-Za-z0-9_-]{1,128}\Z")
_EVENT_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}\Z")
# Printable ASCII without quote or backslash, bounded (older writers' forms are kept).
_TIMESTAMP = re.compile(r"[ !#-\[\]-~]{1,40}\Z")
# Sidecar names: one path component, no hidden or temporary names.
_SIDECAR = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}\Z")


def is_event_id(value: object) -> bool:
    """True for a canonical lower-case UUID (the form every event id takes)."""
    return isinstance(value, str) and _EVENT_ID.match(value) is not None


def digest_of(data: bytes) -> str:
    """A blob's name: its SHA-256, with the algorithm as a prefix."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def is_session_id(value: object) -> TypeGuard[str]:
    """True for a safe session id (what ``check_session_id`` accepts)."""
    return isinstance(value, str) and _SESSION_ID.match(value) is not None


def check_session_id(value: object) -> str:
    """Return ``value`` if it is a safe session id, else raise InvalidSessionId.

    Checked before any path is built from it (invariant 8)."""
    if not is_session_id(value):
        raise InvalidSessionId(value)
    return value


def check_new_session_id(value: object) -> str:
    """A session id that may be created: safe, and not read as an option.

    An id starting with ``-`` is refused here (every shell tool would take
    ``agentlog log -rf`` as options); existing ones still open."""
    check_session_id(value)
    assert isinstance(value, str)
    if value.startswith("-"):
        raise InvalidSessionId(value, "it starts with '-', which command lines read as an option")
    return value


def check_sidecar_name(value: object) -> str:
    """A sidecar (artifact) name: one safe path component (invariant 8)."""
    if not isinstance(value, str) or not _SIDECAR.match(value) or value.endswith(".tmp"):
        raise InvalidName(
            f"invalid sidecar name {value!r}: use A-Z a-z 0-9 _ . - (max 128), "
            "not starting with '.' or '-', not ending in .tmp"
        )
    return value


def check_event_id(value: object) -> str:
    if not isinstance(value, str) or not _EVENT_ID.match(value):
        raise InvalidEventId(value)
    return value


@functools.lru_cache(maxsize=1024)
def _valid_name(value: str) -> bool:
    """Kinds and roles share one grammar; appends repeat a handful of them."""
    return KIND_PATTERN.match(value) is not None


def check_kind(kind: object) -> str:
    if not isinstance(kind, str) or not _valid_name(kind):
        raise InvalidEvent(f"invalid event kind {kind!r}: use a-z 0-9 _ . - (max 32)")
    if kind == "delta" or kind.endswith(("_delta", ".delta")):
        raise StreamedDeltaError(
            f"kind {kind!r} is a streaming delta: deltas are live-only; "
            "publish them to the hub and append the settled message instead"
        )
    return kind


def check_role(role: object) -> str | None:
    if role is None:
        return None
    if not isinstance(role, str) or not _valid_name(role):
        raise InvalidEvent(f"invalid role {role!r}: use a-z 0-9 _ . - (max 32)")
    return role


def check_record(record: Any) -> Any:
    """Refuse what is plainly a streamed chunk rather than a settled record."""
    if isinstance(record, dict):
        if record.get("object") == "chat.completion.chunk" or (
            isinstance(record.get("type"), str) and record["type"].endswith(".delta")
        ):
            raise StreamedDeltaError(
                "this record is a streaming chunk: deltas are live-only; append the settled message instead"
            )
    return record


def stored_record_problem(rec: dict[str, Any]) -> str | None:
    """Why a stored record (checksum intact) is still not a valid event, or None.

    A checksum proves the bytes are the ones written, not that a valid
    writer wrote them: a record whose fields name paths or fill index
    slots is checked before it is believed (invariant 3)."""
    for key in ("id", "parent_id"):
        if not is_event_id(rec.get(key)):
            return f"event record has a malformed {key}"
    kind, role, stamp = rec.get("kind"), rec.get("role"), rec.get("timestamp")
    if not (isinstance(kind, str) and KIND_PATTERN.match(kind)):
        return "event record has a malformed kind"
    if role is not None and not (isinstance(role, str) and ROLE_PATTERN.match(role)):
        return "event record has a malformed role"
    if not (isinstance(stamp, str) and _TIMESTAMP.match(stamp)):
        return "event record has a malformed timestamp"
    branch_from = rec.get("branch_from")
    if branch_from is not None and not is_event_id(branch_from):
        return "event record has a malformed branch_from"
    digest = rec.get("digest")
    if digest is not None and not (isinstance(digest, str) and _DIGEST.match(digest)):
        return "event record has a malformed digest"
    return None


_second: tuple[str, str] = ("", "")  # the last second formatted; appends come many a second


def format_timestamp(ns: int) -> str:
    """RFC 3339 in UTC with nanoseconds: 2026-08-25T17:21:22.454897183Z."""
    global _second
    digits = str(ns)
    if len(digits) != 19:  # before 2001-09-09 or after 2286: the arithmetic way
        secs, frac = divmod(ns, 1_000_000_000)
        return f"{time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(secs))}.{frac:09d}Z"
    # 19 digits: ten of seconds, nine of nanoseconds (no division, no format spec).
    cached = _second  # one tuple, replaced whole: safe to share between threads
    if cached[0] != digits[:10]:
        cached = _second = (digits[:10], time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(int(digits[:10]))))
    return cached[1] + digits[10:] + "Z"


#: agentlog's own form, which nearly every time read back is in.
_CANONICAL_TIME = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})\.([0-9]{9})Z")


def parse_timestamp(text: str) -> int:
    """Inverse of format_timestamp (nanoseconds since the epoch)."""
    canonical = _CANONICAL_TIME.fullmatch(text)
    if canonical is not None:
        # Read by slicing, not strptime (20x slower: a listing reads one a
        # session); datetime() checks the ranges strptime would.
        y, mo, d, h, mi, sec, ns = map(int, canonical.groups())
        try:
            return int(datetime(y, mo, d, h, mi, sec, tzinfo=UTC).timestamp()) * 1_000_000_000 + ns
        except ValueError:
            pass  # a form datetime() refuses (a leap second): strptime decides, below
    main, _, frac = text.rstrip("Z").partition(".")
    dt = datetime.strptime(main, "%Y-%m-%dT%H:%M:%S").replace(tzinfo=UTC)
    return int(dt.timestamp()) * 1_000_000_000 + int((frac or "0").ljust(9, "0")[:9])


def is_timestamp(value: object) -> bool:
    """True for text ``parse_timestamp`` reads. Cheaper than parsing for
    agentlog's own form (listing checks two a session): the form by its
    pattern, the date and time by the C parser of their ISO form."""
    if not isinstance(value, str):
        return False
    if _CANONICAL_TIME.fullmatch(value) is not None:
        try:
            datetime.fromisoformat(value[:19])
            return True
        except ValueError:
            pass  # a form fromisoformat refuses (a leap second): parse_timestamp decides
    try:
        parse_timestamp(value)
    except (ValueError, OverflowError):
        return False
    return True


@dataclass(frozen=True, slots=True)
class Event:
    """One durable fact on a session's timeline.

    ``record`` is None while a payload kept in a blob is not loaded; then
    ``digest`` names it (``sha256:<hex>``) and ``Session.resolve`` loads it.
    """

    id: str
    parent_id: str
    kind: str
    role: str | None
    timestamp: str
    record: Any = None
    digest: str | None = None
    branch_from: str | None = None
    extra: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)

    @property
    def is_root(self) -> bool:
        return self.parent_id == NIL_ID

    @property
    def loaded(self) -> bool:
        return self.digest is None or self.record is not None

    def with_record(self, record: Any) -> Event:
        return replace(self, record=record)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "parent_id": self.parent_id,
            "branch_from": self.branch_from,
            "kind": self.kind,
            "role": self.role,
            "timestamp": self.timestamp,
            "record": self.record,
            "digest": self.digest,
        }


#: ``Event`` built without its frozen ``__init__`` (``_slots``), for the
#: readers that build one per stored event: every field is given, in order
#: (id, parent, kind, role, timestamp, record, digest, branch_from, extra).
make_event = slot_constructor(Event)


class IdGenerator:
    """UUIDv7 ids that strictly increase within a session.

    Time-ordered ids let the index stay sorted by id, so a lookup is a
    binary search; the clock alone cannot promise that (it can step back),
    so a new id is never allowed below the last one issued."""

    def __init__(self, last: str | None = None) -> None:
        # Canonical ids (lower-case hex, fixed dashes) sort as text exactly as
        # their 128-bit values do, so only the text is kept and compared.
        value = uuid.UUID(last).int if last else 0
        self._last_text = _format_uuid(value) if value else ""  # the nil id counts as none

    def is_last(self, event_id: str) -> bool:
        """True if ``event_id`` is the newest id issued or observed (on the
        append path: a string compare, no parsing)."""
        return event_id == self._last_text

    def last(self) -> str:
        """The newest id issued or observed ("" before any)."""
        return self._last_text

    def observe(self, event_id: str) -> None:
        value = uuid.UUID(event_id).int
        if value and (text := _format_uuid(value)) > self._last_text:
            self._last_text = text

    def next(self) -> str:
        text = str(uuid_utils.uuid7())  # canonical form
        if text <= self._last_text:  # the clock stepped back, or a kept id is ahead of it
            value = uuid.UUID(self._last_text).int + 1
            if value >= 1 << 128:  # a kept (forked, migrated or damaged) id at the very top
                raise InvalidEvent("no event id sorts after the largest UUID already stored")
            text = _format_uuid(value)
        self._last_text = text
        return text


def _format_uuid(value: int) -> str:
    h = f"{value:032x}"  # str(uuid.UUID(int=...)) costs more than the id itself
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
