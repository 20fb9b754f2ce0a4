"""QA regressions for what every adapter shares: the ids framework names
become, and the chat view of the Responses parts the Agents SDK stores."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from agentlog import InvalidSessionId
from agentlog.event import Event
from agentlog.integrations._ids import session_key
from agentlog.providers import events_to_chat_messages, to_chat_messages, to_responses_input

DOCS = Path(__file__).resolve().parent.parent / "docs" / "integrations.md"


# --- ids (every adapter) -----------------------------------------------------------


def test_hashed_id_is_the_first_40_hex_digits_of_sha256_as_documented() -> None:
    assert session_key("", "") == "h--" + hashlib.sha256(b"").hexdigest()[:40]
    assert session_key("adk", "a", "b", "c") == "adk--h--" + hashlib.sha256(b"a\x1fb\x1fc").hexdigest()[:40]
    # The example the docs give is the real id of the empty name.
    assert session_key("", "") in DOCS.read_text()


def test_a_name_with_a_lone_surrogate_is_an_invalid_session_id() -> None:
    with pytest.raises(InvalidSessionId, match="surrogate"):
        session_key("lg", "thread\ud800")
    with pytest.raises(InvalidSessionId, match="u\\\\ud800"):  # names the part that holds it
        session_key("adk", "app", "u\ud800", "s")


# --- the chat view of Responses parts --------------------------------------------------


def _ev(kind: str, role: str | None, record: dict[str, Any], n: int) -> Event:
    return Event(
        id=f"00000000-0000-7000-8000-{n:012d}",
        parent_id="00000000-0000-0000-0000-000000000000",
        kind=kind,
        role=role,
        timestamp="2026-01-01T00:00:00.000000000Z",
        record=record,
    )


RESPONSES_HISTORY = [
    ("message", "user", {"role": "user", "content": [{"type": "input_text", "text": "look"}]}),
    (
        "message",
        "user",
        {
            "role": "user",
            "content": [
                {"type": "input_image", "image_url": "https://x/cat.png", "detail": "low"},
                {"type": "input_image", "file_id": "file_1", "detail": "auto"},
                {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}},
            ],
        },
    ),
    (
        "message",
        "assistant",
        {
            "type": "message",
            "id": "msg_1",
            "status": "completed",
            "role": "assistant",
            "content": [
                {"type": "output_text", "text": "a cat", "annotations": [], "logprobs": []},
                {"type": "refusal", "refusal": "no more"},
            ],
        },
    ),
    ("tool_call", "assistant", {"id": "c1", "name": "f", "arguments": "{}"}),
    ("tool_result", "tool", {"tool_call_id": "c1", "content": [{"type": "input_text", "text": "out"}]}),
]


def _history() -> list[Event]:
    return [_ev(kind, role, record, n) for n, (kind, role, record) in enumerate(RESPONSES_HISTORY)]


def test_chat_view_turns_responses_parts_into_chat_parts() -> None:
    messages = to_chat_messages(_history())
    assert messages[0] == {"role": "user", "content": [{"type": "text", "text": "look"}]}
    assert messages[1]["content"] == [
        {"type": "image_url", "image_url": {"url": "https://x/cat.png", "detail": "low"}},
        # no URL: Chat cannot name an uploaded image, so it is left as stored
        {"type": "input_image", "file_id": "file_1", "detail": "auto"},
        {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}},  # the same in both
    ]
    assert messages[2]["content"] == [{"type": "text", "text": "a cat"}, {"type": "refusal", "refusal": "no more"}]
    assert messages[3] == {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "out"}]}


def test_faithful_chat_view_and_responses_view_keep_responses_parts() -> None:
    # sync() compares with the faithful view: it shows what is stored.
    faithful = events_to_chat_messages(_history())
    assert faithful[0]["content"] == [{"type": "input_text", "text": "look"}]
    items = to_responses_input(_history())
    assert items[0]["content"] == [{"type": "input_text", "text": "look"}]
    assert items[2]["content"] == RESPONSES_HISTORY[2][2]["content"]
    assert items[4] == {"type": "function_call_output", "call_id": "c1", "output": "out"}


def test_chat_and_responses_parts_convert_both_ways() -> None:
    chat_parts = [
        {"type": "text", "text": "see"},
        {"type": "image_url", "image_url": {"url": "data:x", "detail": "high"}},
    ]
    as_chat = to_chat_messages([_ev("message", "user", {"content": chat_parts}, 1)])
    assert as_chat[0]["content"] == chat_parts
    items = to_responses_input([_ev("message", "user", {"content": chat_parts}, 1)])
    back = to_chat_messages([_ev("message", "user", {"content": items[0]["content"]}, 1)])
    assert back[0]["content"] == chat_parts
