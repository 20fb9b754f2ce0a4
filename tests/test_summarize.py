"""Summarizers: the extractive default, merging, and the model-backed one."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from agentlog.errors import ModelError, SummarizerError
from agentlog.event import NIL_ID, Event, IdGenerator
from agentlog.summarize import (
    ExtractiveSummarizer,
    LLMSummarizer,
    Summarizer,
    empty_structured,
    merge_structured,
    normalize_structured,
    parse_summary_json,
    render_markdown,
)

_ids = IdGenerator()


def ev(kind, role, record):
    return Event(_ids.next(), NIL_ID, kind, role, "2026-01-01T00:00:00.000000000Z", record)


def msg(role, text, **extra):
    return ev("message", role, {"content": text, **extra})


def call(cid, name, **args):
    return ev("tool_call", "assistant", {"id": cid, "name": name, "arguments": json.dumps(args)})


def result(cid, name, content, is_error=False):
    return ev("tool_result", "tool", {"tool_call_id": cid, "name": name, "content": content, "is_error": is_error})


CONVERSATION = [
    msg(
        "user",
        "Add a --json flag to `agentlog ls` in src/agentlog/cli/ls.py. "
        "You must not change the text output. Never push to main.",
    ),
    msg("assistant", "I will read the command first."),
    call("c1", "read_file", path="src/agentlog/cli/ls.py"),
    result("c1", "read_file", "def ls(): ..."),
    msg("assistant", "I decided to use orjson instead of the json module."),
    call("c2", "str_replace_based_edit_tool", command="str_replace", path="src/agentlog/cli/ls.py"),
    result("c2", "str_replace_based_edit_tool", "edited"),
    call("c3", "bash", command="cat tests/test_ls.py && pytest -q tests/test_ls.py > /tmp/out.log"),
    result("c3", "bash", "1 failed\nAssertionError", is_error=True),
    msg(
        "assistant",
        "Added the flag to the parser.\n- [x] parse --json\n- [ ] document it\n"
        "The test for session 0191d7a2-3c4e-7f00-8a1b-2c3d4e5f6a7b fails at commit 9f3e2ab. "
        "Next I will fix `format_row` and update https://example.com/docs/cli.",
    ),
    ev(
        "state",
        "system",
        {"todos": [{"text": "write tests", "status": "pending"}, {"text": "wire the flag", "status": "done"}]},
    ),
]


def test_extractive_summary_of_a_fixed_conversation():
    summary = ExtractiveSummarizer().summarize(CONVERSATION, None)
    s = summary.structured
    assert s["goal"].startswith("Add a --json flag")
    assert s["constraints"] == ["You must not change the text output.", "Never push to main."]
    assert s["decisions"] == ["I decided to use orjson instead of the json module."]
    assert s["progress"]["done"] == ["parse --json", "Added the flag to the parser.", "wire the flag"]
    assert s["progress"]["in_progress"] == ["document it"]
    assert s["progress"]["blocked"] == ["tool bash failed: 1 failed"]
    assert s["files"] == {"read": ["tests/test_ls.py"], "modified": ["src/agentlog/cli/ls.py", "/tmp/out.log"]}
    assert s["next_steps"] == ["Next I will fix `format_row` and update https://example.com/docs/cli.", "write tests"]
    # first-seen order; `agentlog ls` has a space, so it is prose, not a name
    assert s["identifiers"] == [
        "src/agentlog/cli/ls.py",
        "0191d7a2-3c4e-7f00-8a1b-2c3d4e5f6a7b",
        "9f3e2ab",
        "format_row",
        "https://example.com/docs/cli",
        "tests/test_ls.py",
        "/tmp/out.log",
    ]
    # the text carries every section, and nothing varies between runs
    for heading in (
        "## Goal",
        "## Constraints & preferences",
        "### Done",
        "### Blocked",
        "## Key decisions",
        "## Files",
        "## Next steps",
        "## Critical identifiers",
    ):
        assert heading in summary.text
    assert ExtractiveSummarizer().summarize(list(CONVERSATION), None) == summary
    assert isinstance(ExtractiveSummarizer(), Summarizer)


def test_short_first_message_is_joined_by_the_next():
    s = ExtractiveSummarizer().summarize([msg("user", "hi"), msg("user", "please fix the flaky test")], None)
    assert s.structured["goal"] == "hi please fix the flaky test"


def test_repeated_compaction_merges_the_previous_summary():
    first = ExtractiveSummarizer().summarize(CONVERSATION, None).structured
    later = [
        msg("user", "Also always run ruff before committing."),
        msg("assistant", "Documented it. Fixed format_row. We chose click instead of argparse."),
        call("c9", "write_file", path="docs/cli.md"),
        result("c9", "write_file", "ok"),
        msg("assistant", "- [x] document it\nThen I will open the PR."),
    ]
    merged = ExtractiveSummarizer().summarize(later, first).structured
    assert merged["goal"] == first["goal"]  # a new message is not a new goal
    assert merged["constraints"] == first["constraints"] + ["Also always run ruff before committing."]
    assert merged["decisions"][0] == first["decisions"][0]
    assert "We chose click instead of argparse." in merged["decisions"]
    assert "document it" in merged["progress"]["done"]
    assert "document it" not in merged["progress"]["in_progress"]  # done now
    assert merged["files"]["modified"] == ["src/agentlog/cli/ls.py", "/tmp/out.log", "docs/cli.md"]
    assert merged["next_steps"] == [*first["next_steps"], "Then I will open the PR."]
    assert set(first["identifiers"]) <= set(merged["identifiers"])
    # merging the same thing again changes nothing
    again = ExtractiveSummarizer().summarize(later, merged).structured
    assert again == merged


def test_an_announced_new_goal_replaces_the_old_one():
    previous = {**empty_structured(), "goal": "old goal"}
    s = ExtractiveSummarizer().summarize([msg("user", "New task: port the CLI to Rust.")], previous)
    assert s.structured["goal"] == "New task: port the CLI to Rust."


def test_merge_is_bounded_and_deduplicated():
    prev = {
        **empty_structured(),
        "constraints": [f"must {i}" for i in range(20)],
        "decisions": [f"chose {i}" for i in range(20)],
        "identifiers": ["a", "b"],
    }
    cur = {
        **empty_structured(),
        "constraints": ["must new"],
        "decisions": ["chose new", "Chose 3."],
        "identifiers": ["B", "b", "c"],
    }
    out = merge_structured(prev, cur, limit=20)
    assert out["constraints"] == prev["constraints"]  # the first constraints are kept
    assert out["decisions"] == [f"chose {i}" for i in range(1, 20)] + ["chose new"]  # the oldest go
    assert out["identifiers"] == ["a", "b", "c"]  # case-insensitive dedup keeps the first spelling


def test_normalize_tolerates_a_sloppy_shape():
    s = normalize_structured(
        {
            "goal": "  g  ",
            "constraints": "one",
            "progress": {"done": ["x", None, ""]},
            "files": "nope",
            "next_steps": [1, 2],
        }
    )
    assert s["goal"] == "g" and s["constraints"] == ["one"] and s["progress"]["done"] == ["x"]
    assert s["files"] == {"read": [], "modified": []} and s["next_steps"] == ["1", "2"]
    assert normalize_structured("garbage") == empty_structured()
    assert render_markdown(empty_structured()) == ""


# --- the model-backed summarizer -----------------------------------------------------------

GOOD = {
    "goal": "ship it",
    "constraints": ["never push to main"],
    "progress": {"done": ["a"], "in_progress": [], "blocked": []},
    "decisions": ["use orjson"],
    "files": {"read": ["x.py"], "modified": []},
    "next_steps": ["b"],
    "identifiers": ["9f3e2ab"],
}


class CompleteModel:
    def __init__(self, answer):
        self.answer = answer
        self.seen = None

    def complete(self, messages):
        self.seen = messages
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


class StreamModel:
    def __init__(self, answer):
        self.answer = answer

    def stream(self, messages, tools=None):
        yield SimpleNamespace(content=None, delta="{")
        yield SimpleNamespace(content=self.answer)


@pytest.mark.parametrize(
    "answer",
    [
        json.dumps(GOOD),
        "Here you go:\n```json\n" + json.dumps(GOOD, indent=2) + "\n```\n",
        "Sure! " + json.dumps(GOOD) + " Hope that helps.",
    ],
)
def test_llm_summarizer_parses_json(answer):
    model = CompleteModel(answer)
    summary = LLMSummarizer(model).summarize(CONVERSATION, {"goal": "earlier goal"})
    assert summary.structured == normalize_structured(GOOD)
    assert "## Goal\nship it" in summary.text
    prompt = model.seen[-1]["content"]
    assert "earlier goal" in prompt and "[tool call read_file]" in prompt and "(error)" in prompt


def test_llm_summarizer_with_a_streaming_model():
    summary = LLMSummarizer(StreamModel(json.dumps(GOOD))).summarize(CONVERSATION, None)
    assert summary.structured["decisions"] == ["use orjson"]


def test_llm_summarizer_cuts_long_tool_output_in_the_prompt():
    model = CompleteModel(json.dumps(GOOD))
    LLMSummarizer(model, max_result_chars=100).summarize([result("c", "bash", "z" * 5000)], None)
    assert "z" * 101 not in model.seen[-1]["content"] and "4900 more characters" in model.seen[-1]["content"]


@pytest.mark.parametrize(
    "model",
    [
        CompleteModel("I could not summarize that."),
        CompleteModel('```json\n{"goal": "x",\n```'),
        CompleteModel("[1, 2, 3]"),
        CompleteModel(None),
        CompleteModel(ModelError("503 from provider")),
        CompleteModel(TimeoutError("read timed out")),
        StreamModel(None),
    ],
)
def test_llm_summarizer_failures_raise_summarizer_error(model):
    with pytest.raises(SummarizerError):
        LLMSummarizer(model).summarize(CONVERSATION, None)


def test_parse_error_names_what_the_model_said():
    with pytest.raises(SummarizerError, match="no idea"):
        parse_summary_json("no idea")


@pytest.mark.parametrize(
    "name, args, read, modified",
    [
        (
            "bash",
            {"command": "cat a.py b/c.txt 2>&1 | grep x > out.log; sed -i 's/x/y/' src/m.py"},
            ["a.py", "b/c.txt"],
            ["out.log", "src/m.py"],
        ),
        (
            "bash",
            {"command": "echo hi >/dev/null; tee -a logs/run.txt < z; touch new.md"},
            [],
            ["logs/run.txt", "new.md"],
        ),
        ("str_replace_based_edit_tool", {"command": "view", "path": "src/x.py"}, ["src/x.py"], []),
        ("str_replace_based_edit_tool", {"command": "create", "path": "src/y.py"}, [], ["src/y.py"]),
        ("edit_file", {"file_path": "z.rs"}, [], ["z.rs"]),
        ("read_many", {"paths": ["p.py", 3, "q.py"]}, ["p.py", "q.py"], []),
        ("web_search", {"query": "x"}, [], []),
        ("bash", "not json", [], []),
    ],
)
def test_files_from_tool_calls(name, args, read, modified):
    arguments = args if isinstance(args, str) else json.dumps(args)
    s = ExtractiveSummarizer().summarize(
        [ev("tool_call", "assistant", {"id": "c", "name": name, "arguments": arguments})], None
    )
    assert s.structured["files"] == {"read": read, "modified": modified}


def test_a_checked_box_counts_once():
    s = ExtractiveSummarizer().summarize([msg("assistant", "- [x] fixed the parser\n- [ ] added docs")], None)
    assert s.structured["progress"] == {"done": ["fixed the parser"], "in_progress": ["added docs"], "blocked": []}
