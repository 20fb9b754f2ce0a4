"""Token counts: the offline estimate, tiktoken when present, provider usage."""

from __future__ import annotations

import sys

import pytest

from agentlog import tokens
from agentlog.event import NIL_ID, Event, IdGenerator
from agentlog.tokens import (
    BLOB_TOKENS,
    MESSAGE_OVERHEAD,
    PART_TOKENS,
    Usage,
    context_tokens,
    count_tokens,
    estimate_tokens,
    event_tokens,
    usage_tokens,
)

_ids = IdGenerator()


def ev(kind, role, record, digest=None):
    return Event(_ids.next(), NIL_ID, kind, role, "2026-01-01T00:00:00.000000000Z", record, digest)


@pytest.fixture
def no_tiktoken(monkeypatch):
    """As if the 'tokens' extra were not installed."""
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # import raises ImportError
    tokens._encoding.cache_clear()
    yield
    tokens._encoding.cache_clear()


def _tiktoken_or_skip():
    try:
        import tiktoken
    except ImportError:
        pytest.skip(
            "SKIPPED LOUDLY: tiktoken is not installed (pip install 'agentlog[tokens]'), "
            "so the exact-count path is not tested here"
        )
    return tiktoken


@pytest.mark.parametrize("text, expected", [("", 0), ("a", 1), ("abcd", 1), ("abcde", 2), ("x" * 400, 100)])
def test_estimate_is_a_quarter_of_the_characters_rounded_up(text, expected):
    assert estimate_tokens(text) == expected


@pytest.mark.parametrize(
    "text, at_least",
    [
        # o200k_base counts (tiktoken): the estimate must not fall below them,
        # or a request it measured as fitting would be over the window.
        ("数据库连接失败，请检查网络设置。" * 20, 0.56 * 16 * 20),
        ("データベースへの接続に失敗しました" * 20, 0.68 * 17 * 20),
        ("😀🎉🚀" * 20, 1.6 * 3 * 20),
        (
            "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==" * 4,
            0.55 * 96 * 4,
        ),
    ],
)
def test_estimate_counts_dense_text_at_its_own_rate(text, at_least):
    assert estimate_tokens(text) >= at_least
    assert estimate_tokens(text) <= 2 * at_least  # and not so far above that it compacts for nothing


def test_without_tiktoken_counts_are_the_estimate(no_tiktoken):
    assert count_tokens("x" * 41) == 11
    assert count_tokens("x" * 41, model="gpt-4o") == 11
    messages = [
        {"role": "user", "content": "abcdefgh", "name": "bob"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "read", "arguments": "{}"}}],
        },
        {
            "role": "tool",
            "tool_call_id": "c",
            "content": [{"type": "text", "text": "abcd"}, {"type": "image_url", "image_url": {"url": "x" * 9999}}],
        },
    ]
    assert count_tokens(messages) == (MESSAGE_OVERHEAD + 2 + 1) + (MESSAGE_OVERHEAD + 1 + 1) + (
        MESSAGE_OVERHEAD + 1 + 1 + PART_TOKENS
    )


def test_tiktoken_path_uses_the_encoding(monkeypatch):
    """A byte-level encoding stands in for the downloaded one: the count
    must be the encoding's, not the estimate."""
    tiktoken = _tiktoken_or_skip()
    byte_level = tiktoken.Encoding(
        name="bytes", pat_str=r"[\s\S]", mergeable_ranks={bytes([i]): i for i in range(256)}, special_tokens={}
    )
    asked = []
    monkeypatch.setattr(tiktoken, "encoding_for_model", lambda m: asked.append(m) or byte_level)
    tokens._encoding.cache_clear()
    try:
        assert count_tokens("hello <|endoftext|>", model="some-model") == len("hello <|endoftext|>")
        assert asked == ["some-model"]
        assert count_tokens("abc", exact=False) == 1  # the estimate on request
    finally:
        tokens._encoding.cache_clear()


def test_unknown_model_falls_back_to_a_base_encoding_or_the_estimate(monkeypatch):
    _tiktoken_or_skip()
    tokens._encoding.cache_clear()
    try:
        n = count_tokens("hello world, hello tokens", model="no-such-model-anywhere")
    finally:
        tokens._encoding.cache_clear()
    assert 1 <= n <= estimate_tokens("hello world, hello tokens") * 2


def test_real_encoding_counts_known_text():
    tiktoken = _tiktoken_or_skip()
    try:
        tiktoken.get_encoding("cl100k_base")
    except Exception as exc:
        pytest.skip(f"SKIPPED LOUDLY: tiktoken cannot load cl100k_base (offline?): {exc}")
    tokens._encoding.cache_clear()
    try:
        assert count_tokens("hello world", model="gpt-4") == 2
    finally:
        tokens._encoding.cache_clear()


def test_event_tokens_per_kind():
    est = lambda e: event_tokens(e, exact=False)  # noqa: E731
    assert est(ev("message", "user", {"content": "abcdefgh"})) == MESSAGE_OVERHEAD + 2
    assert (
        est(ev("tool_call", "assistant", {"id": "c", "name": "read", "arguments": '{"p":1}'}))
        == MESSAGE_OVERHEAD + 1 + 2
    )
    result = ev("tool_result", "tool", {"tool_call_id": "c", "content": "x" * 400})
    assert est(result) == MESSAGE_OVERHEAD + 100
    assert est(ev("compaction", "system", {"summary": "abcd"})) == MESSAGE_OVERHEAD + 1
    for kind in ("state", "label", "custom", "whatever"):
        assert est(ev(kind, "system", {"content": "x" * 1000})) == 0
    lazy = ev("tool_result", "tool", None, digest="sha256:" + "0" * 64)
    assert est(lazy) == MESSAGE_OVERHEAD + BLOB_TOKENS


def test_usage_tokens_reads_recorded_usage():
    assert usage_tokens(
        ev(
            "message",
            "assistant",
            {"content": "x", "usage": {"input_tokens": 100, "output_tokens": 7, "total_tokens": 110}},
        )
    ) == Usage(100, 7, 110)
    assert usage_tokens(
        ev("message", "assistant", {"content": "x", "usage": {"prompt_tokens": 10, "completion_tokens": 2}})
    ) == Usage(10, 2, 12)
    for record in (
        {"content": "x"},
        {"usage": None},
        {"usage": {"input_tokens": True, "output_tokens": 1}},
        {"usage": {"input_tokens": -1, "output_tokens": 1}},
        {"usage": {"input_tokens": 5}},
    ):
        assert usage_tokens(ev("message", "assistant", record)) is None
    assert usage_tokens(ev("message", "user", {"usage": {"input_tokens": 1, "output_tokens": 1}})) is None


def test_context_tokens_prefers_the_latest_usage():
    events = [
        ev("message", "user", {"content": "x" * 4000}),
        ev("message", "assistant", {"content": "a", "usage": {"input_tokens": 50, "output_tokens": 5}}),
        ev("message", "assistant", {"content": "b", "usage": {"input_tokens": 900, "output_tokens": 10}}),
        ev("message", "user", {"content": "abcdefgh"}),
    ]
    assert context_tokens(events, exact=False) == 900 + 10 + MESSAGE_OVERHEAD + 2


def test_context_tokens_ignores_usage_from_before_the_compaction():
    kept = ev("message", "assistant", {"content": "abcd", "usage": {"input_tokens": 99999, "output_tokens": 1}})
    compaction = ev("compaction", "system", {"summary": "x" * 40, "first_kept_event_id": kept.id})
    after = ev("message", "user", {"content": "abcd"})
    context = [compaction, kept, after]
    expected = sum(event_tokens(e, exact=False) for e in context)
    assert context_tokens(context, exact=False) == expected
    assert context_tokens(context, exact=False, system="abcd") == expected + MESSAGE_OVERHEAD + 1
    newer = ev("message", "assistant", {"content": "z", "usage": {"input_tokens": 300, "output_tokens": 3}})
    assert context_tokens([*context, newer], exact=False) == 303


def test_context_tokens_of_nothing_is_zero():
    assert context_tokens([]) == 0
