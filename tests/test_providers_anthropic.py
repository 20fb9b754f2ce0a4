"""The Anthropic Messages API view of a context (``agentlog.providers_anthropic``):
sessions built through the public API, rendered, and checked against the
API's rules, the Claude Code transcripts they came from, and the real SDK."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentlog import Session, Store
from agentlog.providers import INTERRUPTED
from agentlog.providers_anthropic import LEADING_USER_TEXT, to_anthropic_input
from importers_support import copy_fixture, do_import, source_lines
from stub_openai import Json, StubOpenAI

PNG = "iVBORw0KGgo="


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def session_of(*drafts: tuple[str, Any, str | None]) -> Session:
    """A session on a memory store holding ``drafts`` (kind, record, role)."""
    session = Store.memory().create()
    session.append_many(list(drafts))
    return session


def user(content: Any) -> tuple[str, Any, str]:
    return ("message", {"content": content}, "user")


def assistant(content: Any, **extra: Any) -> tuple[str, Any, str]:
    return ("message", {"content": content, **extra}, "assistant")


def call(cid: str, name: str = "read_file", args: Any = '{"path": "a.py"}', **extra: Any) -> tuple[str, Any, str]:
    return ("tool_call", {"id": cid, "name": name, "arguments": args, **extra}, "assistant")


def result(cid: str, content: Any = "ok", is_error: bool = False) -> tuple[str, Any, str]:
    return ("tool_result", {"tool_call_id": cid, "name": "read_file", "content": content, "is_error": is_error}, "tool")


def messages(session: Session, system: str | None = None) -> list[dict[str, Any]]:
    out = session.to_anthropic_input(system=system)
    check_api_rules(out["messages"])
    return out["messages"]


def check_api_rules(msgs: list[dict[str, Any]]) -> None:
    """What the Messages API enforces on ``messages``: user first, roles
    alternating, no empty message or blank text, and every tool_use
    answered at the start of the very next message, results nowhere else."""
    if not msgs:
        return
    assert msgs[0]["role"] == "user", msgs
    for i, msg in enumerate(msgs):
        assert msg["role"] in ("user", "assistant"), msg
        assert i == 0 or msg["role"] != msgs[i - 1]["role"], msgs
        assert isinstance(msg["content"], list) and msg["content"], msg
        for block in msg["content"]:
            assert block["type"] != "text" or block["text"].strip(), msg
        uses = [b["id"] for b in msg["content"] if b["type"] == "tool_use"]
        following = msgs[i + 1]["content"] if i + 1 < len(msgs) else []
        leading = []
        for block in following:
            if block["type"] != "tool_result":
                break
            leading.append(block["tool_use_id"])
        if msg["role"] == "assistant":
            assert sorted(leading) == sorted(uses), msgs
            assert sum(b["type"] == "tool_result" for b in following) == len(leading), msgs
    if msgs[0]["content"]:
        assert all(b["type"] != "tool_result" for b in msgs[0]["content"]), msgs
    last = msgs[-1]
    if last["role"] == "assistant" and last["content"][-1]["type"] == "text":
        assert last["content"][-1]["text"] == last["content"][-1]["text"].rstrip()


# --- text, calls, results -------------------------------------------------------------


def test_text_calls_and_results_become_blocks_results_first_in_one_user_message() -> None:
    session = session_of(
        user("read both"),
        assistant("Reading.", usage={"input_tokens": 5, "output_tokens": 1}, reasoning="hmm"),
        call("c1"),
        call("c2", "grep", '{"q": "x"}'),
        result("c1", "A"),
        result("c2", [text("B1"), text("B2")]),
        user("and now?"),
        assistant("Done."),
    )
    out = session.to_anthropic_input()
    assert out == {
        "messages": [
            {"role": "user", "content": [text("read both")]},
            {
                "role": "assistant",
                "content": [
                    text("Reading."),  # usage and reasoning stay in the record
                    {"type": "tool_use", "id": "c1", "name": "read_file", "input": {"path": "a.py"}},
                    {"type": "tool_use", "id": "c2", "name": "grep", "input": {"q": "x"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "c1", "content": "A"},
                    {"type": "tool_result", "tool_use_id": "c2", "content": [text("B1"), text("B2")]},
                    text("and now?"),  # after the results, in the same turn
                ],
            },
            {"role": "assistant", "content": [text("Done.")]},
        ]
    }
    check_api_rules(out["messages"])


def test_is_error_is_carried_and_an_interrupted_call_gets_an_error_result() -> None:
    session = session_of(
        result("ghost"),  # an orphan: its call is not in the context
        user("go"),
        assistant("trying"),
        call("c1"),
        call("c2"),
        result("c1", "boom", is_error=True),
        user("stop"),  # c2 never answered
        result("c2", "late"),  # too late: dropped, as the OpenAI views drop it
        assistant(None),
        call("c3"),  # the context ends mid-turn
    )
    msgs = messages(session)
    assert msgs[2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "c1", "content": "boom", "is_error": True},
            {"type": "tool_result", "tool_use_id": "c2", "content": INTERRUPTED, "is_error": True},
            text("stop"),
        ],
    }
    assert msgs[3] == {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "c3", "name": "read_file", "input": {"path": "a.py"}}],
    }
    assert msgs[4] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "c3", "content": INTERRUPTED, "is_error": True}],
    }
    assert "late" not in json.dumps(msgs) and "ghost" not in json.dumps(msgs)


@pytest.mark.parametrize(
    ("arguments", "sent"),
    [
        ('{"path": "a.py"}', {"path": "a.py"}),
        ("{}", {}),
        ("", {}),  # no arguments at all
        ("  ", {}),
        (None, {}),
        ("{not json", {"arguments": "{not json"}),
        ("[1, 2]", {"arguments": "[1, 2]"}),
        ("42", {"arguments": "42"}),
        ('"text"', {"arguments": '"text"'}),
        ("null", {"arguments": "null"}),
        ({"already": "an object"}, {"already": "an object"}),  # another program's record
        ([1, 2], {"arguments": "[1, 2]"}),
    ],
)
def test_arguments_become_an_object_input_and_nothing_is_lost(arguments: Any, sent: dict[str, Any]) -> None:
    session = session_of(user("go"), assistant(None), call("c1", args=arguments), result("c1"))
    (use,) = messages(session)[1]["content"]
    assert use == {"type": "tool_use", "id": "c1", "name": "read_file", "input": sent}


def test_call_ids_the_api_refuses_are_rewritten_alike_in_call_and_result() -> None:
    """pi's OpenAI Responses ids (``call_x|fc_y``) break the API's pattern."""
    session = session_of(
        user("go"),
        assistant(None),
        call("call_a|fc_1"),
        call("call_a_fc_1"),  # what a naive replacement would collide with
        call("call_a.fc.1"),
        result("call_a|fc_1", "one"),
        result("call_a_fc_1", "two"),
        result("call_a.fc.1", "three"),
    )
    msgs = messages(session)
    uses = [b["id"] for b in msgs[1]["content"]]
    answers = {b["tool_use_id"]: b["content"] for b in msgs[2]["content"]}
    assert uses[1] == "call_a_fc_1"  # a valid id is left alone
    assert len(set(uses)) == 3 and all(u.replace("_", "").replace("-", "").isalnum() for u in uses)
    assert [answers[u] for u in uses] == ["one", "two", "three"]


# --- system text ------------------------------------------------------------------------


def test_system_argument_then_system_and_developer_messages_join_by_a_blank_line() -> None:
    session = session_of(
        ("message", {"content": "Be brief."}, "system"),
        user("hi"),
        ("message", {"content": [text("Use metric units.")]}, "developer"),
        ("message", {"content": "   "}, "system"),  # nothing to say
        assistant("hello"),
    )
    out = session.to_anthropic_input(system="You fix bugs.")
    assert out["system"] == "You fix bugs.\n\nBe brief.\n\nUse metric units."
    assert out["messages"] == [
        {"role": "user", "content": [text("hi")]},
        {"role": "assistant", "content": [text("hello")]},
    ]
    assert session.to_anthropic_input()["system"] == "Be brief.\n\nUse metric units."


def test_no_system_key_without_system_text() -> None:
    session = session_of(user("hi"))
    assert session.to_anthropic_input() == {"messages": [{"role": "user", "content": [text("hi")]}]}
    assert "system" not in session.to_anthropic_input(system="")
    assert to_anthropic_input([]) == {"messages": []}


def test_an_image_in_a_system_message_is_named_in_the_system_text() -> None:
    image = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
    session = session_of(("message", {"content": [text("Look:"), image]}, "system"), user("hi"))
    assert session.to_anthropic_input()["system"] == "Look:\n[image left out: the Messages API cannot take it here]"


# --- merging, empty content, the first and the last turn ---------------------------------------


def test_consecutive_messages_of_a_role_merge_and_empty_ones_disappear() -> None:
    session = session_of(
        user("one"),
        user([text("two"), text(""), text(" \n ")]),  # blank blocks: the API refuses them
        assistant(""),
        assistant([]),  # a reply that failed before its first token
        user("three"),  # joins the user turn: the assistant ones were empty
        assistant("a"),
        ("state", {"todos": []}, "system"),
        ("message", {"content": "note"}, "system"),  # moves to system, so the replies meet
        assistant([text("b"), "c"]),  # records.md: a list's items may be strings
    )
    msgs = messages(session)
    assert msgs == [
        {"role": "user", "content": [text("one"), text("two"), text("three")]},
        {"role": "assistant", "content": [text("a"), text("b"), text("c")]},
    ]


def test_a_context_beginning_with_an_assistant_turn_gets_a_user_turn_first() -> None:
    session = session_of(("message", {"content": "sys"}, "system"), assistant("Hello! How can I help?"), user("hi"))
    out = session.to_anthropic_input()
    assert out["messages"][:2] == [
        {"role": "user", "content": [text(LEADING_USER_TEXT)]},
        {"role": "assistant", "content": [text("Hello! How can I help?")]},
    ]
    check_api_rules(out["messages"])
    # a call alone at the start (its message cut away) is an assistant turn too
    calls_first = session_of(call("c1"), result("c1"), user("thanks"))
    assert [m["role"] for m in messages(calls_first)] == ["user", "assistant", "user"]


def test_a_final_assistant_text_loses_its_trailing_whitespace() -> None:
    """A final assistant message is a prefill, refused when it ends in whitespace."""
    msgs = messages(session_of(user("hi"), assistant("The answer is \n"), assistant("\n\n")))
    assert msgs[-1] == {"role": "assistant", "content": [text("The answer is")]}
    # only the final one: earlier replies are sent as they were
    msgs = messages(session_of(user("hi"), assistant("first \n"), user("more")))
    assert msgs[1]["content"] == [text("first \n")]


def test_compaction_and_branch_summaries_read_as_in_the_openai_views() -> None:
    with Store.memory().create() as session:
        first = session.append("message", {"content": "Fix the parser in src/parse.py"}, role="user")
        session.append("message", {"content": "I changed the tokenizer."}, role="assistant")
        session.select(first.id)
        assert session.summarize_branch() is not None
        session.append("message", {"content": "Try the grammar instead."}, role="user")
        session.append("message", {"content": "Grammar fixed."}, role="assistant")
        session.append("message", {"content": "Now the tests."}, role="user")
        session.append("message", {"content": "Tests pass."}, role="assistant")
        chat_before = [m["content"] for m in session.to_chat_messages()]
        msgs = messages(session)
        # the branch summary is a user message: it joins the user turns around it
        assert [b["text"] for b in msgs[0]["content"]] == chat_before[:3]
        assert session.compact(keep_tokens=0) is not None
        chat = session.to_chat_messages()
        msgs = messages(session)
    assert chat[0]["content"].startswith("The conversation so far was summarized:\n")
    assert msgs[0]["content"][0] == text(chat[0]["content"])
    assert [b["text"] for m in msgs for b in m["content"]] == [m["content"] for m in chat]


def test_marking_blocks_for_caching_leaves_the_session_alone() -> None:
    """Callers put ``cache_control`` on blocks; the records (here, events a
    harness holds and renders again) must not change."""
    image = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}
    session = session_of(user([text("see"), image]), assistant(None), call("c1", args={"path": "a"}), result("c1"))
    events = session.context(resolve=True)
    first = to_anthropic_input(events)
    for msg in first["messages"]:
        for block in msg["content"]:
            block["cache_control"] = {"type": "ephemeral"}
            if block["type"] == "tool_use":
                block["input"]["path"] = "changed"
    again = to_anthropic_input(events)
    assert again["messages"][0]["content"] == [text("see"), image]
    assert again["messages"][1]["content"][0]["input"] == {"path": "a"}


# --- thinking and server tools ---------------------------------------------------------------


def test_signed_thinking_is_kept_in_order_and_unsigned_thinking_is_dropped() -> None:
    signed = {"type": "thinking", "thinking": "let me see", "signature": "sig-1"}
    redacted = {"type": "redacted_thinking", "data": "opaque"}
    session = session_of(
        user("hi"),
        assistant([signed, text("Reading."), redacted], provider_name="anthropic"),
        call("c1"),
        result("c1"),
        assistant(
            [
                {"type": "thinking", "thinking": "no proof"},  # another provider's, or a cut stream
                {"type": "thinking", "thinking": "empty proof", "signature": ""},
                {"type": "redacted_thinking"},
                text("ok"),
            ],
            reasoning="an OpenAI model's reasoning text",
        ),
    )
    msgs = messages(session)
    assert msgs[1]["content"] == [
        signed,
        text("Reading."),
        redacted,
        {"type": "tool_use", "id": "c1", "name": "read_file", "input": {"path": "a.py"}},
    ]
    assert msgs[3] == {"role": "assistant", "content": [text("ok")]}
    assert "reasoning text" not in json.dumps(msgs)


def test_pi_thinking_signatures_count_on_anthropic_replies_only() -> None:
    pi_thinking = {"type": "thinking", "thinking": "plan", "thinkingSignature": "sig-pi"}
    from_anthropic = messages(session_of(user("a"), assistant([pi_thinking, text("x")], provider_name="anthropic")))
    assert from_anthropic[1]["content"][0] == {"type": "thinking", "thinking": "plan", "signature": "sig-pi"}
    # an OpenAI reasoning item's id is no Anthropic signature
    from_openai = messages(session_of(user("a"), assistant([pi_thinking, text("x")], provider_name="openai")))
    assert from_openai[1]["content"] == [text("x")]


_SEARCH_RESULT = {
    "type": "web_search_tool_result",
    "tool_use_id": "srvtoolu_1",
    "content": [{"type": "web_search_result", "title": "WAL", "url": "https://sqlite.org/wal.html"}],
}
_SERVER_USE = {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "sqlite wal"}}


def test_server_tool_blocks_stay_in_the_reply_as_a_harness_stores_them() -> None:
    """The shape a harness keeping Anthropic's content writes: both blocks in
    the content, and the call as a tool_call event too."""
    session = session_of(
        user("find wal"),
        assistant([_SERVER_USE, _SEARCH_RESULT, text("found it")]),
        call("srvtoolu_1", "web_search", '{"query":"sqlite wal"}', extra={"type": "server_tool_use"}),
        user("thanks"),
    )
    msgs = messages(session)
    assert msgs[1] == {"role": "assistant", "content": [_SERVER_USE, _SEARCH_RESULT, text("found it")]}
    assert msgs[2] == {"role": "user", "content": [text("thanks")]}  # no tool_result for a server call


def test_a_server_call_kept_as_an_event_goes_back_before_its_result() -> None:
    """The Claude Code importer's shape: the call is a tool_call event only.
    A server call whose result the reply lacks is an ordinary interrupted call."""
    session = session_of(
        user("find wal"),
        assistant([text("Searching."), _SEARCH_RESULT, text("found it")], provider_name="anthropic"),
        call("srvtoolu_1", "web_search", '{"query": "sqlite wal"}', extra={"type": "server_tool_use"}),
        user("again"),
        assistant([text("Searching more.")], provider_name="anthropic"),
        call("srvtoolu_2", "web_search", '{"query": "wal2"}', extra={"type": "server_tool_use"}),
    )
    msgs = messages(session)
    assert msgs[1] == {
        "role": "assistant",
        "content": [text("Searching."), _SERVER_USE, _SEARCH_RESULT, text("found it")],
    }
    assert msgs[3]["content"][-1] == {
        "type": "tool_use",
        "id": "srvtoolu_2",
        "name": "web_search",
        "input": {"query": "wal2"},
    }
    assert msgs[4] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "srvtoolu_2", "content": INTERRUPTED, "is_error": True}],
    }


# --- images, documents, other parts ------------------------------------------------------------


def test_images_and_documents_convert_and_the_rest_is_named() -> None:
    native_image = {"type": "image", "source": {"type": "base64", "media_type": "image/gif", "data": "R0lG"}}
    native_doc = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "notes"}}
    parts = [
        text("see"),
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}", "detail": "low"}},
        {"type": "image_url", "image_url": "https://example.com/a.jpg"},
        {"type": "input_image", "image_url": f"data:image/jpg;base64,{PNG}"},  # a common misspelling
        {"type": "input_image", "file_id": "file-abc"},  # an OpenAI file: nothing Anthropic can read
        {"type": "image_url", "image_url": {"url": "data:image/svg+xml;base64,PHN2Zz4="}},
        {"type": "image", "data": PNG, "mimeType": "image/webp"},  # pi's
        native_image,
        native_doc,
        {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0=", "filename": "r.pdf"}},
        {"type": "input_file", "file_id": "file-xyz", "filename": "s.pdf"},
        {"type": "input_audio", "input_audio": {"data": "AAA", "format": "wav"}},
        {"type": "input_text", "text": "end"},
        7,
    ]
    msgs = messages(session_of(user(parts)))
    assert msgs[0]["content"] == [
        text("see"),
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.jpg"}},
        {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": PNG}},
        text("[input_image left out: the Messages API cannot take it here]"),
        text("[image_url (image/svg+xml) left out: the Messages API cannot take it here]"),
        {"type": "image", "source": {"type": "base64", "media_type": "image/webp", "data": PNG}},
        native_image,
        native_doc,
        {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="}}
        | {"title": "r.pdf"},
        text("[input_file s.pdf left out: the Messages API cannot take it here]"),
        text("[input_audio left out: the Messages API cannot take it here]"),
        text("end"),
        text("[int left out: the Messages API cannot take it here]"),
    ]


def test_tool_results_keep_images_and_name_what_they_cannot_hold() -> None:
    shot = {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
    session = session_of(
        user("screenshot"),
        assistant(None),
        call("c1", "screenshot", "{}"),
        call("c2", "stat", "{}"),
        call("c3", "noop", "{}"),
        result("c1", [text("here"), shot, {"type": "thinking", "thinking": "x", "signature": "s"}]),
        result("c2", {"size": 3}),  # free JSON
        result("c3", None),
    )
    results = messages(session)[2]["content"]
    assert results == [
        {
            "type": "tool_result",
            "tool_use_id": "c1",
            "content": [
                text("here"),
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
                text("[thinking left out: the Messages API cannot take it here]"),
            ],
        },
        {"type": "tool_result", "tool_use_id": "c2", "content": '{"size": 3}'},
        {"type": "tool_result", "tool_use_id": "c3"},  # content is optional: none rather than empty
    ]


# --- whatever the log holds, the API's rules hold ------------------------------------------------

_ids = st.sampled_from(["c1", "c2", "c3"])
_words = st.sampled_from(["", " ", "hi", "ok \n"])
_draft = st.one_of(
    st.builds(user, _words),
    st.builds(lambda t: assistant(t), st.one_of(st.none(), _words, st.just([]))),
    st.builds(lambda t: ("message", {"content": t}, "system"), _words),
    st.builds(lambda c: call(c, "f", "{}"), _ids),
    st.builds(result, _ids),
    st.just(("state", {"todos": []}, "system")),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(_draft, max_size=20))
def test_any_log_renders_a_request_the_api_accepts(drafts: list[tuple[str, Any, str]]) -> None:
    session = Store.memory().create()
    session.append_many(drafts)
    check_api_rules(session.to_anthropic_input()["messages"])


# --- Claude Code sessions round-trip -------------------------------------------------------------


def _claude_request(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages a transcript's leaf had sent: its line chain (parentUuid)
    back to the root, user and assistant lines only, split replies rejoined,
    with the API's own defaults (``is_error: false``) left out."""
    by_uuid = {o["uuid"]: o for o in lines if "uuid" in o}
    leaf = next(o for o in reversed(lines) if o.get("type") in ("user", "assistant"))
    chain = []
    while leaf is not None:
        chain.append(leaf)
        leaf = by_uuid.get(leaf.get("parentUuid") or "")
    out: list[dict[str, Any]] = []
    for line in reversed(chain):
        if line["type"] not in ("user", "assistant"):
            continue
        content = line["message"]["content"]
        blocks = [text(content)] if isinstance(content, str) else content
        blocks = [b for b in blocks if b.get("type") != "text" or b["text"].strip()]
        blocks = [{k: v for k, v in b.items() if (k, v) != ("is_error", False)} for b in blocks]
        if out and out[-1]["role"] == line["type"]:
            out[-1]["content"].extend(blocks)
        elif blocks:
            out.append({"role": line["type"], "content": blocks})
    return out


@pytest.mark.parametrize(
    "name", ["claude-code_v2.1.42_real_03eb5929.jsonl", "claude-code_v1.0.51_real_summary-records_326189cf.jsonl"]
)
def test_an_imported_claude_code_session_gives_back_its_own_request(tmp_path: Path, name: str) -> None:
    """Thinking with its signature, tool_use with ``caller``, tool results and
    their errors, split replies: what Claude Code sent, block for block."""
    path = copy_fixture(name, tmp_path / "src")
    store = Store(tmp_path / "home")
    (imported,) = do_import(store, "claude", path).sessions
    with store.open(imported.session_id, readonly=True) as session:
        out = session.to_anthropic_input()
    expected = _claude_request(source_lines(path))
    assert out == {"messages": expected}
    check_api_rules(out["messages"])
    kinds = {b["type"] for m in expected for b in m["content"]}
    assert {"tool_use", "tool_result", "text"} <= kinds  # the comparison covers them all


# --- the real SDK ----------------------------------------------------------------------------------


def test_the_anthropic_sdk_sends_it_unchanged(tmp_path: Path) -> None:
    anthropic = pytest.importorskip("anthropic")
    from pydantic import TypeAdapter

    store = Store(tmp_path / "home", blob_threshold=1024)
    with store.create() as session:
        session.append_many(
            [
                ("message", {"content": "Be careful."}, "system"),
                user(
                    [text("What is in this picture?"), {"type": "image_url", "image_url": {"url": "https://x/y.png"}}]
                ),
                assistant(
                    [{"type": "thinking", "thinking": "look", "signature": "sig"}, text("Let me read it.")],
                    provider_name="anthropic",
                ),
                call("toolu_1", "read_file", '{"path": "big.txt"}'),
                call("toolu_2", "grep", "not json"),
                result("toolu_1", "x" * 5000),  # over the blob threshold: resolved for the view
                result("toolu_2", "no match", is_error=True),
                user("Summarize."),
            ]
        )
        produced = session.to_anthropic_input(system="You read files.")
    for message in produced["messages"]:
        TypeAdapter(anthropic.types.MessageParam).validate_python(message)
    reply = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [{"type": "text", "text": "It is a picture."}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }
    with StubOpenAI([Json(reply)]) as stub:
        client = anthropic.Anthropic(base_url=stub.url.removesuffix("/v1"), api_key="x", max_retries=0)
        answer = client.messages.create(model="claude-test", max_tokens=64, **produced)
    assert answer.content[0].text == "It is a picture."
    (request,) = stub.requests
    assert request.path == "/v1/messages"
    assert request.body == {"model": "claude-test", "max_tokens": 64, **produced}
    assert produced["system"] == "You read files.\n\nBe careful."
    assert produced["messages"][2]["content"][0]["content"] == "x" * 5000
