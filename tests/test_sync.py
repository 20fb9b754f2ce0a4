"""sync(): a harness's plain message list and the timeline kept in step.

Only the new suffix is appended; a list whose prefix differs from what is
saved raises ContextMismatch and writes nothing (the event count and the
chunk bytes are checked before and after). The system prompt is not
durable, so system messages never count.
"""

from __future__ import annotations

import copy

import pytest

from agentlog import ContextMismatch
from helpers import chunk_paths

BASE = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "List the files."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
            {"id": "call_2", "type": "function", "function": {"name": "pwd", "arguments": "{}"}},
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "a.py\nb.py"},
    {"role": "tool", "tool_call_id": "call_2", "content": "/work"},
    {"role": "assistant", "content": "Two files: a.py and b.py."},
]


def state_of(store, s):
    data = [p.read_bytes() for p in chunk_paths(store, s.id)] if store.backend.home else None
    return len(s), s.head, data


def test_first_sync_stores_everything_but_the_system_prompt(store):
    with store.create() as s:
        events = s.sync(BASE)
        assert [(e.kind, e.role) for e in events] == [
            ("message", "user"),
            ("message", "assistant"),
            ("tool_call", "assistant"),
            ("tool_call", "assistant"),
            ("tool_result", "tool"),
            ("tool_result", "tool"),
            ("message", "assistant"),
        ]
        assert events[2].record == {"id": "call_1", "name": "ls", "arguments": "{}"}
        assert events[4].record["name"] == "ls"  # the result names its tool
        assert s.to_chat_messages(system="You are terse.") == BASE


def test_sync_appends_only_the_new_suffix(store):
    with store.create() as s:
        s.sync(BASE)
        count = len(s)
        more = BASE + [{"role": "user", "content": "Thanks."}, {"role": "assistant", "content": "You're welcome."}]
        new = s.sync(more)
        assert [e.record["content"] for e in new] == ["Thanks.", "You're welcome."]
        assert len(s) == count + 2
        assert new[0].parent_id == s.path()[count - 1].id
        assert s.sync(more) == [] and len(s) == count + 2  # nothing new: nothing written


def test_a_differing_prefix_raises_and_writes_nothing(store):
    with store.create() as s:
        s.sync(BASE)
        before = state_of(store, s)
        changed = copy.deepcopy(BASE)
        changed[3]["content"] = "a.py\nb.py\nc.py"  # a tool result rewritten
        with pytest.raises(ContextMismatch) as info:
            s.sync(changed + [{"role": "user", "content": "and now?"}])
        assert "message 2" in str(info.value)
        assert state_of(store, s) == before
        reordered = [BASE[0], BASE[1], BASE[2], BASE[4], BASE[3], BASE[5]]
        with pytest.raises(ContextMismatch):
            s.sync(reordered)
        with pytest.raises(ContextMismatch):
            s.sync(BASE[:3])  # shorter than what is saved
        assert state_of(store, s) == before


def test_system_messages_are_ignored(store):
    with store.create() as s:
        s.sync(BASE)
        before = state_of(store, s)
        other_prompt = [{"role": "system", "content": "A different prompt now."}] + BASE[1:]
        assert s.sync(other_prompt) == []
        no_prompt = BASE[1:] + [{"role": "system", "content": "mid-conversation note"}]
        assert s.sync(no_prompt) == []
        assert state_of(store, s) == before
        assert all(e.role != "system" for e in s.path())


def test_representation_details_are_not_a_mismatch(store):
    class Pydantic:
        """Stands in for an SDK message object: it has model_dump()."""

        def __init__(self, data):
            self.data = data

        def model_dump(self):
            return dict(self.data)

    with store.create() as s:
        s.sync(BASE)
        as_objects = [Pydantic(copy.deepcopy(m)) for m in BASE]
        as_objects[1].data["name"] = None  # an optional field set to None
        assert s.sync(as_objects) == []
        new = s.sync(as_objects + [Pydantic({"role": "user", "content": "ok"})])
        assert len(new) == 1


def test_extra_fields_are_kept_in_the_record(store):
    with store.create() as s:
        (event,) = s.sync(
            [{"role": "assistant", "content": "hi", "refusal": None, "reasoning_content": "because", "id": "msg_1"}]
        )
        assert event.record["reasoning_content"] == "because"
        assert event.record["id"] == "msg_1"


def test_sync_after_compaction_starts_from_the_rendered_context(store):
    with store.create() as s:
        s.sync(BASE)
        for n in range(5):
            s.sync(
                s.to_chat_messages()
                + [
                    {"role": "user", "content": f"question {n} " * 20},
                    {"role": "assistant", "content": f"answer {n} " * 20},
                ]
            )
        c = s.compact(keep_tokens=80)
        assert c is not None
        with pytest.raises(ContextMismatch):  # the harness's old full list no longer matches
            s.sync(BASE)
        view = s.to_chat_messages(system="You are terse.")
        new = s.sync(view + [{"role": "user", "content": "after the compaction"}])
        assert [e.record["content"] for e in new] == ["after the compaction"]


def test_sync_of_a_large_tool_result_compares_the_resolved_payload(store):
    big = [
        {"role": "user", "content": "cat it"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c", "type": "function", "function": {"name": "cat", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c", "content": "z" * 5000},
    ]
    with store.create() as s:
        events = s.sync(big)
        assert events[-1].digest is not None
        assert s.sync(big) == []
        changed = copy.deepcopy(big)
        changed[2]["content"] = "z" * 4999 + "y"
        with pytest.raises(ContextMismatch):
            s.sync(changed)


def test_after_select_the_list_is_compared_with_the_selected_path(store):
    """sync() appends where the next event goes; after select() that is the
    selected path, so that is what the harness's list must extend. Whatever
    the list, the active path afterwards is exactly the list."""
    with store.create() as s:
        s.sync(BASE)
        branch_point = s.head
        head_list = BASE + [
            {"role": "user", "content": "Now delete b.py."},
            {"role": "assistant", "content": "Deleted."},
        ]
        s.sync(head_list)
        old_head = s.head

        s.select(branch_point)
        (new,) = s.sync(BASE + [{"role": "user", "content": "Keep b.py; rename it."}])
        assert new.parent_id == branch_point and new.branch_from == branch_point
        assert s.to_chat_messages(system="You are terse.") == BASE + [
            {"role": "user", "content": "Keep b.py; rename it."}
        ]

        # A list that still extends the old HEAD's path, synced after selecting
        # the branch point: never glued onto the shorter history.
        s.select(branch_point)
        longer = head_list + [{"role": "user", "content": "continue"}]
        s.sync(longer)
        assert s.to_chat_messages(system="You are terse.") == longer
        assert old_head not in {e.id for e in s.path()}  # a new branch, old one intact
        assert old_head in s
