"""Token counts for deciding when and where to compact.

Counting uses tiktoken when it is installed (the ``tokens`` extra) and its
encoding can be loaded: the model's own encoding, else ``o200k_base``,
else ``cl100k_base``. Otherwise, and always with ``exact=False``, it is an
estimate: one token per 4 characters, rounded up, for English and code;
more where text packs more tokens into a character (``estimate_tokens``:
Chinese, Japanese and Korean, emoji, other scripts, base64). Chat-shaped input adds
``MESSAGE_OVERHEAD`` tokens per message for the role and framing, and a
non-text part (an image, audio) counts as ``PART_TOKENS``, because its
bytes (often base64) say little about what the provider charges.

tiktoken fetches an encoding file on first use; offline, point
``TIKTOKEN_CACHE_DIR`` at a copy or get the estimate.

The provider's own report is better than any count: ``context_tokens``
starts from the latest reported usage and estimates only what came after.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from .backends.base import DEFAULT_BLOB_THRESHOLD
from .event import Event
from .records import UsageRecord

__all__ = [
    "BLOB_TOKENS",
    "MESSAGE_OVERHEAD",
    "PART_TOKENS",
    "Usage",
    "context_tokens",
    "count_tokens",
    "estimate_tokens",
    "event_tokens",
    "usage_tokens",
]

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 4
PART_TOKENS = 256
BLOB_TOKENS = DEFAULT_BLOB_THRESHOLD // CHARS_PER_TOKEN
_FALLBACK_ENCODINGS = ("o200k_base", "cl100k_base")


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens one model call consumed, as the provider reported them.

    The one usage type: models return it (``Completion.usage``), assistant
    message records store it (``to_dict``, docs/records.md) and
    ``usage_tokens`` reads it back. A session's running totals are
    ``state.UsageTotals``, a different thing."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cost_usd: float | None = None

    def to_dict(self) -> UsageRecord:
        out: UsageRecord = {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "total_tokens": self.total_tokens,
        }
        if self.cost_usd is not None:
            out["cost_usd"] = self.cost_usd
        return out


#: Characters a tokenizer spends more tokens on than four a token, with what
#: each costs in all (o200k_base, measured: Chinese 0.56 and Japanese 0.68 a
#: character, an emoji 1.6, base64 0.55; each rate here is at or above its
#: measure, so the estimate errs towards compacting early, never towards a
#: request over the window).
_WIDE = re.compile(r"[\u1100-\u11ff\u2e80-\u9fff\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uffef]")
_WIDE_TOKENS = 0.8  # Han, kana, Hangul, fullwidth forms
_ASTRAL = re.compile(r"[\U00010000-\U0010ffff]")
_ASTRAL_TOKENS = 2.0  # emoji and the other characters beyond the BMP
_OTHER_TOKENS = 0.5  # any other non-ASCII character (Cyrillic, Greek, accents...)
_RUN = re.compile(r"[A-Za-z0-9+/=_-]{64,}")
_RUN_TOKENS = 0.55  # a long run of mixed letters and digits: base64, a key


def estimate_tokens(text: str) -> int:
    """The offline estimate: a quarter of the characters, rounded up, for
    English and code; Chinese, Japanese and Korean characters, emoji and
    other non-ASCII characters, and base64-like runs at their own rates."""
    tokens = len(text) / CHARS_PER_TOKEN
    if not text.isascii():
        wide = len(text) - len(_WIDE.sub("", text))
        astral = len(text) - len(_ASTRAL.sub("", text))
        ascii_chars = len(text.encode("ascii", "ignore"))
        other = len(text) - ascii_chars - wide - astral
        quarter = 1 / CHARS_PER_TOKEN
        tokens += wide * (_WIDE_TOKENS - quarter) + astral * (_ASTRAL_TOKENS - quarter)
        tokens += other * (_OTHER_TOKENS - quarter)
    if len(text) >= 64:
        for run in _RUN.findall(text):
            # Mixed case and digits, as base64 is (a row of one letter, or
            # hex, tokenizes as densely as words do).
            if not (run.isalpha() or run.islower() or run.isupper()):
                tokens += len(run) * (_RUN_TOKENS - 1 / CHARS_PER_TOKEN)
    return math.ceil(tokens)


@lru_cache(maxsize=32)
def _encoding(model: str | None) -> Any:
    try:
        import tiktoken  # type: ignore[import-not-found, unused-ignore]  # optional extra
    except ImportError:
        return None
    if model:
        try:
            return tiktoken.encoding_for_model(model)
        except Exception:  # unknown model (KeyError), or its file cannot be fetched
            pass
    for name in _FALLBACK_ENCODINGS:
        try:
            return tiktoken.get_encoding(name)
        except Exception:  # offline: tiktoken downloads encodings on first use
            continue
    return None


def _text_tokens(text: str, model: str | None, exact: bool) -> int:
    encoding = _encoding(model) if exact else None
    if encoding is None:
        return estimate_tokens(text)
    return len(encoding.encode(text, disallowed_special=()))


def _content_tokens(content: Any, model: str | None, exact: bool) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return _text_tokens(content, model, exact)
    if isinstance(content, list):
        total = 0
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                total += _text_tokens(part["text"], model, exact)
            elif isinstance(part, str):
                total += _text_tokens(part, model, exact)
            else:
                total += PART_TOKENS
        return total
    return _text_tokens(json.dumps(content, default=str), model, exact)


def _message_tokens(message: Mapping[str, Any], model: str | None, exact: bool) -> int:
    total = MESSAGE_OVERHEAD + _content_tokens(message.get("content"), model, exact)
    for key in ("name", "tool_call_id"):
        if isinstance(message.get(key), str):
            total += _text_tokens(message[key], model, exact)
    for call in message.get("tool_calls") or ():
        fn = call.get("function", {}) if isinstance(call, dict) else {}
        total += _content_tokens(fn.get("name"), model, exact)
        total += _content_tokens(fn.get("arguments"), model, exact)
    return total


def count_tokens(value: str | Iterable[Mapping[str, Any]], model: str | None = None, *, exact: bool = True) -> int:
    """Tokens in a text, or in a list of chat messages (with overhead)."""
    if isinstance(value, str):
        return _text_tokens(value, model, exact)
    return sum(_message_tokens(m, model, exact) for m in value)


def event_tokens(event: Event, model: str | None = None, *, exact: bool = True) -> int:
    """What one event adds to a model request; 0 for kinds never sent.

    A record not loaded (kept in a blob) is not read here; a blob holds at
    least the default blob threshold (16 KiB), so it counts as
    ``BLOB_TOKENS``, a lower bound. Resolve it for a real count."""
    kind = event.kind
    if kind not in ("message", "tool_call", "tool_result", "compaction", "branch_summary"):
        return 0
    rec = event.record
    if not isinstance(rec, dict):
        return MESSAGE_OVERHEAD + (BLOB_TOKENS if not event.loaded else 0)
    if kind == "tool_call":
        body = _content_tokens(rec.get("name"), model, exact) + _content_tokens(rec.get("arguments"), model, exact)
    elif kind in ("compaction", "branch_summary"):
        body = _content_tokens(rec.get("summary"), model, exact)
    else:
        body = _content_tokens(rec.get("content"), model, exact)
    return MESSAGE_OVERHEAD + body


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def usage_tokens(event: Event) -> Usage | None:
    """The provider-reported usage of an assistant message, if recorded.

    Reads ``usage.input_tokens`` / ``output_tokens`` (docs/records.md) and
    also the Chat Completions names ``prompt_tokens`` / ``completion_tokens``.
    Anthropic's usage (as its API returns it, and as Claude Code's files
    keep it) counts cached prompt tokens apart, in
    ``cache_creation_input_tokens`` and ``cache_read_input_tokens``, and
    leaves them out of ``input_tokens``: they are added back, so that the
    input is every prompt token, as the other providers count it."""
    if event.kind != "message" or event.role != "assistant" or not isinstance(event.record, dict):
        return None
    usage = event.record.get("usage")
    if not isinstance(usage, dict):
        return None
    inp = _int(usage.get("input_tokens", usage.get("prompt_tokens")))
    out = _int(usage.get("output_tokens", usage.get("completion_tokens")))
    if inp is None or out is None:
        return None
    cached = [_int(usage.get(k)) for k in ("cache_creation_input_tokens", "cache_read_input_tokens")]
    inp += sum(c for c in cached if c is not None)
    total = _int(usage.get("total_tokens"))
    cost = usage.get("cost_usd")
    return Usage(
        inp,
        out,
        total if total is not None else inp + out,
        float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None,
    )


def context_tokens(
    events: list[Event], model: str | None = None, *, system: str | None = None, exact: bool = True
) -> int:
    """How big the next request built from ``events`` is.

    The latest assistant message with usage gives input + output; the
    events after it are counted. A usage of zero input tokens is not a
    report (a model that got none records zeros) and is passed over.
    Usage reported before the latest
    compaction measured the uncompacted history, so it is ignored (an
    event's UUIDv7 id orders it against the compaction's). Without usable
    usage, everything is counted, with ``system`` (the prompt) too."""
    floor = None
    for event in events:
        if event.kind == "compaction":
            floor = event.id
    for i in range(len(events) - 1, -1, -1):
        usage = usage_tokens(events[i])
        # A prompt of zero tokens cannot happen: zero input means the provider
        # did not report usage (the models record zeros then), so it is no floor.
        if usage is not None and usage.input_tokens > 0 and (floor is None or events[i].id > floor):
            rest = sum(event_tokens(e, model, exact=exact) for e in events[i + 1 :])
            return usage.input_tokens + usage.output_tokens + rest
    total = sum(event_tokens(e, model, exact=exact) for e in events)
    if system:
        total += MESSAGE_OVERHEAD + _text_tokens(system, model, exact)
    return total
