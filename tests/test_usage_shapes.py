"""The providers' usage shapes, read one way by every reader (totals,
``stats``, the server, the context counter): Anthropic's cached prompt
tokens are part of the input, and the Chat Completions names count."""

from __future__ import annotations

from agentlog import Store
from agentlog.export.totals import totals
from agentlog.tokens import usage_tokens

ANTHROPIC = {
    "input_tokens": 4,
    "cache_creation_input_tokens": 1200,
    "cache_read_input_tokens": 30000,
    "output_tokens": 50,
    "service_tier": "standard",
}


def test_anthropic_cache_tokens_count_as_input_and_chat_names_count() -> None:
    store = Store.memory()
    with store.create() as s:
        s.append("message", {"content": "q"}, role="user")
        a = s.append("message", {"content": "a", "usage": ANTHROPIC}, role="assistant")
        b = s.append(
            "message", {"content": "b", "usage": {"prompt_tokens": 10, "completion_tokens": 2}}, role="assistant"
        )
        events = s.transcript()
    got = usage_tokens(a)
    assert got is not None and (got.input_tokens, got.output_tokens, got.total_tokens) == (31204, 50, 31254)
    chat = usage_tokens(b)
    assert chat is not None and (chat.input_tokens, chat.output_tokens) == (10, 2)
    t = totals(events)
    assert (t.input_tokens, t.output_tokens, t.total_tokens) == (31214, 52, 31266)
