"""Provider views of a context, the pairing guarantee, and the sync() inverse."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentlog.errors import InvalidEvent
from agentlog.event import NIL_ID, Event, IdGenerator
from agentlog.providers import (
    INTERRUPTED,
    chat_messages_to_drafts,
    events_to_chat_messages,
    normalize_chat_messages,
    to_chat_messages,
    to_responses_input,
)

_ids = IdGenerator()


def ev(kind, role, record, digest=None):
    return Event(_ids.next(), NIL_ID, kind, role, "2026-01-01T00:00:00.000000000Z", record, digest)


def user(text):
    return ev("message", "user", {"content": text})


def assistant(text, **extra):
    return ev("message", "assistant", {"content": text, **extra})


def call(cid, name="read_file", args='{"path": "a.py"}'):
    return ev("tool_call", "assistant", {"id": cid, "name": name, "arguments": args})


def result(cid, content="ok", name="read_file", is_error=False):
    return ev("tool_result", "tool", {"tool_call_id": cid, "name": name, "content": content, "is_error": is_error})


def events_from(drafts):
    return [ev(kind, role, record) for kind, record, role in drafts]


# --- chat view -------------------------------------------------------------------


def test_chat_view_maps_every_kind():
    events = [
        ev("compaction", "system", {"summary": "S1", "first_kept_event_id": None}),
        ev("branch_summary", "system", {"summary": "tried B"}),
        user("hi"),
        ev("state", "system", {"todos": []}),
        ev("label", None, {"name": "x", "target": NIL_ID}),
        ev("custom", "user", {"anything": 1}),
        ev("my.kind", None, {"x": 1}),
        assistant("looking", usage={"input_tokens": 5, "output_tokens": 1}, reasoning="hmm"),
        call("c1"),
        call("c2", "grep", '{"q": 1}'),
        result("c1", "A"),
        result("c2", "B"),
        assistant("done"),
    ]
    msgs = to_chat_messages(events, system="be brief")
    assert msgs[0] == {"role": "system", "content": "be brief"}
    assert msgs[1]["role"] == "user"
    assert msgs[1]["content"].startswith("The conversation so far was summarized:\n")
    assert msgs[1]["content"].endswith("S1")
    assert msgs[2]["role"] == "user" and "abandoned" in msgs[2]["content"]
    assert msgs[2]["content"].endswith("tried B")
    assert msgs[3] == {"role": "user", "content": "hi"}
    # usage and reasoning stay in the record: the API would refuse them
    assert msgs[4] == {
        "role": "assistant",
        "content": "looking",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}},
            {"id": "c2", "type": "function", "function": {"name": "grep", "arguments": '{"q": 1}'}},
        ],
    }
    assert msgs[5:] == [
        {"role": "tool", "tool_call_id": "c1", "content": "A"},
        {"role": "tool", "tool_call_id": "c2", "content": "B"},
        {"role": "assistant", "content": "done"},
    ]


def test_tool_call_without_assistant_message_gets_one_with_no_content():
    msgs = to_chat_messages([user("go"), call("c1"), result("c1")])
    assert msgs[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "a.py"}'}}
        ],
    }


def test_calls_after_results_start_a_new_assistant_message():
    msgs = to_chat_messages([user("go"), assistant("a"), call("c1"), result("c1"), call("c2"), result("c2")])
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "assistant", "tool"]
    assert msgs[3]["content"] is None and msgs[3]["tool_calls"][0]["id"] == "c2"


def test_orphan_result_is_dropped_and_interrupted_call_gets_synthetic_result():
    events = [
        result("ghost"),  # its call was cut away
        user("go"),
        assistant("try"),
        call("c1"),
        call("c2"),
        result("c1"),
        user("stop, do something else"),  # c2 never answered: interrupted
        result("c2", "late"),  # too late: c2 was closed
        result("c1", "again"),  # a duplicate
        assistant("ok"),
        call("c3"),  # the context ends mid-turn
    ]
    msgs = to_chat_messages(events)
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "tool", "user", "assistant", "tool"]
    assert msgs[3] == {"role": "tool", "tool_call_id": "c2", "content": INTERRUPTED}
    assert msgs[6] == {"role": "tool", "tool_call_id": "c3", "content": INTERRUPTED}
    assert "late" not in json.dumps(msgs) and "again" not in json.dumps(msgs)
    # the faithful view does not repair
    faithful = events_to_chat_messages(events)
    assert [m["role"] for m in faithful].count("tool") == 4


def test_unloaded_or_malformed_events_are_refused():
    lazy = ev("message", "assistant", None, digest="sha256:" + "0" * 64)
    with pytest.raises(InvalidEvent, match="not loaded"):
        to_chat_messages([lazy])
    with pytest.raises(InvalidEvent, match="non-object"):
        to_chat_messages([ev("message", "user", "text")])
    with pytest.raises(InvalidEvent, match="role"):
        to_chat_messages([ev("message", "robot", {"content": "x"})])
    with pytest.raises(InvalidEvent, match="id"):
        to_chat_messages([ev("tool_call", "assistant", {"name": "x", "arguments": "{}"})])


# --- responses view ----------------------------------------------------------------


def test_responses_view():
    events = [
        user("hi"),
        ev(
            "message",
            "user",
            {
                "content": [
                    {"type": "text", "text": "see"},
                    {"type": "image_url", "image_url": {"url": "data:x", "detail": "low"}},
                ]
            },
        ),
        assistant(None),
        call("c1", "f", "{}"),
        result("c1", [{"type": "text", "text": "r1"}]),
        assistant("thinking"),
        call("c2", "g", "{}"),
    ]
    items = to_responses_input(events, system="sys")
    assert items == [
        {"type": "message", "role": "system", "content": "sys"},
        {"type": "message", "role": "user", "content": "hi"},
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "see"},
                {"type": "input_image", "image_url": "data:x", "detail": "low"},
            ],
        },
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "r1"},
        {"type": "message", "role": "assistant", "content": "thinking"},
        {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c2", "output": INTERRUPTED},
    ]


# --- random logs: the pairing guarantee holds whatever the log holds -------------------

_call_ids = st.sampled_from(["c1", "c2", "c3", "c4"])
_raw_event = st.one_of(
    st.builds(lambda t: ("message", "user", {"content": t}), st.text(max_size=5)),
    st.builds(lambda t: ("message", "assistant", {"content": t}), st.one_of(st.none(), st.text(max_size=5))),
    st.builds(lambda c: ("tool_call", "assistant", {"id": c, "name": "f", "arguments": "{}"}), _call_ids),
    st.builds(lambda c: ("tool_result", "tool", {"tool_call_id": c, "name": "f", "content": "r"}), _call_ids),
    st.just(("state", "system", {"todos": []})),
    st.just(("compaction", "system", {"summary": "s"})),
)


def _check_chat_pairing(msgs):
    i = 0
    while i < len(msgs):
        m = msgs[i]
        assert m["role"] != "tool", f"tool message without its call at {i}: {msgs}"
        calls = [c["id"] for c in m.get("tool_calls", [])]
        i += 1
        answered = []
        while i < len(msgs) and msgs[i]["role"] == "tool":
            answered.append(msgs[i]["tool_call_id"])
            i += 1
        assert sorted(answered) == sorted(calls), msgs


def _check_responses_pairing(items):
    open_calls: list[str] = []
    for item in items:
        if item["type"] == "function_call":
            open_calls.append(item["call_id"])
        elif item["type"] == "function_call_output":
            assert item["call_id"] in open_calls, items
            open_calls.remove(item["call_id"])
        else:
            assert not open_calls, items
    assert not open_calls, items


@settings(max_examples=200, deadline=None)
@given(st.lists(_raw_event, max_size=25))
def test_views_pair_every_call_with_one_result(raw):
    events = [ev(*r) for r in raw]
    _check_chat_pairing(to_chat_messages(events))
    _check_responses_pairing(to_responses_input(events))


# --- the inverse -------------------------------------------------------------------------

_text = st.text(alphabet='abc xyz\n{}"é', max_size=12)
_name = st.from_regex(r"[a-z_]{1,8}", fullmatch=True)


@st.composite
def chat_lists(draw):
    msgs = []
    if draw(st.booleans()):
        msgs.append({"role": "system", "content": draw(_text)})
    n = 0
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["user", "assistant", "tools", "developer"]))
        if kind in ("user", "developer"):
            msg = {
                "role": kind,
                "content": draw(
                    st.one_of(_text, st.lists(st.builds(lambda t: {"type": "text", "text": t}, _text), max_size=2))
                ),
            }
            if draw(st.booleans()):
                msg["name"] = draw(_name)
            msgs.append(msg)
        elif kind == "assistant":
            msgs.append({"role": "assistant", "content": draw(_text)})
        else:
            calls = []
            for _ in range(draw(st.integers(1, 3))):
                n += 1
                calls.append(
                    {
                        "id": f"call_{n}",
                        "type": "function",
                        "function": {"name": draw(_name), "arguments": json.dumps({"x": draw(_text)})},
                    }
                )
            msgs.append({"role": "assistant", "content": draw(st.one_of(st.none(), _text)), "tool_calls": calls})
            for c in draw(st.permutations(calls)):
                msgs.append({"role": "tool", "tool_call_id": c["id"], "content": draw(_text)})
    return msgs


@settings(max_examples=120, deadline=None)
@given(chat_lists())
def test_chat_drafts_events_chat_is_identity(msgs):
    drafts, system = chat_messages_to_drafts(msgs)
    events = events_from(drafts)
    assert events_to_chat_messages(events, system=system) == msgs
    # a well-formed list needs no repair: both views agree, except that the
    # provider view sends empty text beside tool calls as null
    blank_is_null = [{**m, "content": None} if m.get("tool_calls") and m["content"] == "" else m for m in msgs]
    assert to_chat_messages(events, system=system) == blank_is_null
    assert normalize_chat_messages(msgs) == msgs


def test_drafts_follow_the_record_conventions():
    msgs = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "hi"},
        {
            "role": "assistant",
            "content": None,
            "refusal": None,
            "reasoning": "r",
            "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "grep", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "found"},
        {"role": "system", "content": "a mid-conversation note"},
    ]
    drafts, system = chat_messages_to_drafts(msgs)
    assert system == "sys"
    assert drafts == [
        ("message", {"content": "hi"}, "user"),
        ("message", {"content": None, "refusal": None, "reasoning": "r"}, "assistant"),
        ("tool_call", {"id": "c1", "name": "grep", "arguments": "{}"}, "assistant"),
        ("tool_result", {"tool_call_id": "c1", "name": "grep", "content": "found", "is_error": False}, "tool"),
        ("message", {"content": "a mid-conversation note"}, "system"),
    ]


def test_drafts_from_model_dump_objects_and_several_system_messages():
    class Msg:
        def __init__(self, **kw):
            self.kw = kw

        def model_dump(self):
            return dict(self.kw)

    drafts, system = chat_messages_to_drafts(
        [
            Msg(role="system", content="one"),
            {"role": "system", "content": [{"type": "text", "text": "two"}]},
            Msg(role="assistant", content="x", audio=None, function_call=None, annotations=[]),
        ]
    )
    assert system == "one\n\ntwo"
    # extra fields are kept in the record, and dropped from the canonical view when empty
    assert drafts == [
        ("message", {"content": "x", "audio": None, "function_call": None, "annotations": []}, "assistant")
    ]
    assert events_to_chat_messages(events_from(drafts)) == [{"role": "assistant", "content": "x"}]


def test_non_string_arguments_become_json_text():
    drafts, _ = chat_messages_to_drafts(
        [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": {"a": 1}}}],
            }
        ]
    )
    assert json.loads(drafts[1][1]["arguments"]) == {"a": 1}


@pytest.mark.parametrize(
    "bad",
    [
        42,
        {"role": "function", "content": "x", "name": "f"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "custom", "custom": {}}]},
    ],
)
def test_unstorable_chat_messages_are_refused(bad):
    with pytest.raises(InvalidEvent):
        chat_messages_to_drafts([bad])


def test_through_a_real_file_session_with_a_blob(tmp_path):
    """Stored, reopened, read back lazily and resolved: the same messages."""
    from agentlog import Store

    msgs = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "read it"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "big"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "x" * 5000},  # over the blob threshold
        {"role": "assistant", "content": "it is big"},
    ]
    drafts, system = chat_messages_to_drafts(msgs)
    store = Store(tmp_path, blob_threshold=1024)
    with store.create() as session:
        session.append_many(drafts)
        sid = session.id
    with store.open(sid, readonly=True) as session:
        lazy = session.context()
        assert any(not e.loaded for e in lazy)
        with pytest.raises(InvalidEvent, match="not loaded"):
            to_chat_messages(lazy)
        context = session.context(resolve=True)
    assert events_to_chat_messages(context, system=system) == msgs
    assert to_chat_messages(context, system=system) == msgs


def test_tool_names_carry_across_piecewise_conversion():
    names: dict[str, str] = {}
    chat_messages_to_drafts(
        [
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "grep", "arguments": "{}"}}],
            }
        ],
        names,
    )
    drafts, _ = chat_messages_to_drafts([{"role": "tool", "tool_call_id": "c1", "content": "r"}], names)
    assert drafts[0][1]["name"] == "grep"
    alone, _ = chat_messages_to_drafts([{"role": "tool", "tool_call_id": "c1", "content": "r"}])
    assert alone[0][1]["name"] == ""  # nothing says which tool it was


def test_an_assistant_message_with_an_empty_list_of_parts_is_sent_with_no_content():
    """A reply that failed before its first token (pi's stopReason "error"
    with no content) or a reasoning item kept alone: the APIs refuse an
    empty list of parts, and accept an empty text."""
    events = [user("hi"), assistant([]), user("again"), assistant("ok")]
    assert to_chat_messages(events) == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "again"},
        {"role": "assistant", "content": "ok"},
    ]
    assert [i.get("content") for i in to_responses_input(events)] == ["hi", "", "again", "ok"]
    # the faithful view, which sync() compares with, keeps the record as it is
    assert events_to_chat_messages(events)[1] == {"role": "assistant", "content": []}


def test_an_empty_list_of_parts_beside_tool_calls_is_sent_as_no_content():
    events = [user("hi"), assistant([]), call("c1"), result("c1", "text")]
    chat = to_chat_messages(events)
    assert chat[1]["content"] is None and [c["id"] for c in chat[1]["tool_calls"]] == ["c1"]
    assert [i["type"] for i in to_responses_input(events)] == ["message", "function_call", "function_call_output"]


def test_thinking_parts_are_not_sent():
    """Imported Claude Code and pi replies hold Anthropic thinking parts,
    which neither OpenAI API takes as content."""
    thinking = {"type": "thinking", "thinking": "let me see", "signature": "sig"}
    events = [user("hi"), assistant([thinking, {"type": "text", "text": "ok"}]), assistant([thinking]), call("c1")]
    events += [result("c1"), assistant([{"type": "redacted_thinking", "data": "x"}])]
    chat = to_chat_messages(events)
    assert chat[1] == {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}
    assert chat[2]["content"] is None and chat[2]["tool_calls"][0]["id"] == "c1"
    assert chat[4] == {"role": "assistant", "content": ""}
    responses = to_responses_input(events)
    assert responses[1]["content"] == [{"type": "output_text", "text": "ok", "annotations": []}]
    assert [i["type"] for i in responses[2:]] == ["function_call", "function_call_output", "message"]
    assert events_to_chat_messages(events)[1]["content"][0] == thinking  # the faithful view keeps them
