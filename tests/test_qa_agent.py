"""QA round 3, the agent loop: the context window, the documented imports,
bad tool arguments, and the files a compaction summary names."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agentlog import CompactionPolicy, Store
from agentlog.agent import Agent, Limits, ScriptedModel, Tool, ToolUse, estimate_request_tokens
from agentlog.errors import ContextOverflow, InvalidOption, ModelError
from agentlog.event import Event
from agentlog.summarize import ExtractiveSummarizer

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _read(n: int) -> str:
    return f"data {n} " * 400  # about 750 tokens


def _long_run(store: Store, **policy: object) -> tuple[ScriptedModel, list]:
    """The QA repro (a2.py): one turn of 25 tool steps, then ten more turns."""
    script = [ToolUse("read", {"n": i}) for i in range(25)] + ["done reading"] + [f"ok {i}" for i in range(10)]
    model = ScriptedModel(script, context_window=8000)
    with store.create() as s:
        if policy:
            s.compaction = CompactionPolicy(**policy)  # type: ignore[arg-type]
        agent = Agent(s, model, tools=[Tool("read", _read)], limits=Limits(max_iterations=40))
        results = [agent.run("read all the files")]
        results += [agent.run(f"question {i} " + "blah " * 300) for i in range(10)]
        compactions = [e for e in s.path() if e.kind == "compaction"]
    assert [r.stopped for r in results] == ["done"] * 11
    return model, compactions


# --- 1. requests stay within the model's window ------------------------------------------


def test_the_default_policy_keeps_requests_under_a_small_window(store):
    """keep_tokens=20,000 against an 8,000-token window: the first turn grew
    to about 21k tokens and compactions freed almost nothing (20180 -> 19463)."""
    model, compactions = _long_run(store)
    sizes = [estimate_request_tokens(messages, tools) for messages, tools in model.requests]
    assert len(sizes) == 36
    assert max(sizes) < model.context_window
    assert len(compactions) >= 3
    for c in compactions:  # each compaction frees room: at most the cap is kept, plus the summary
        assert c.record["tokens_after"] < 0.6 * c.record["tokens_before"]


def test_keep_for_caps_keep_tokens_at_half_the_trigger_level():
    policy = CompactionPolicy()
    assert policy.keep_for(8000) == 3200  # 0.5 x 0.8 x 8000
    assert policy.keep_for(200_000) == 20_000  # a large window: keep_tokens as set
    assert policy.keep_for(0) == 20_000  # unknown window
    assert CompactionPolicy(threshold=0.5, keep_tokens=1000).keep_for(8000) == 1000
    with pytest.raises(InvalidOption):
        policy.keep_for(-1)


def test_the_loop_compacts_before_a_request_that_would_pass_the_window(store):
    """History from an earlier run (no usage to go by) already over the
    window: the compaction comes before the request, not after it."""
    with store.create() as s:
        for i in range(6):
            s.append("message", {"content": f"question {i} " * 40}, role="user")
            s.append("message", {"content": f"answer {i} " * 40}, role="assistant")
        model = ScriptedModel(["fine"], context_window=600)
        result = Agent(s, model).run("more")
        assert result.compactions == 1
        assert [e.kind for e in result.events][:2] == ["message", "compaction"]
        ((messages, tools),) = model.requests
        assert estimate_request_tokens(messages, tools) < model.context_window


def test_a_step_too_large_for_the_window_is_refused_not_sent(store):
    """One tool result bigger than the window: no compaction can cut it, so
    the loop raises a typed error instead of sending an oversized request."""
    model = ScriptedModel([ToolUse("dump", {}), "never"], context_window=2000)
    with store.create() as s:
        agent = Agent(s, model, tools=[Tool("dump", lambda: "x " * 6000)])
        with pytest.raises(ContextOverflow, match=r"needs about \d+ tokens, more than its context window of 2000"):
            agent.run("dump it")
        assert len(model.requests) == 1  # the second request was never sent
        assert "tool_result" in [e.kind for e in s.path()]  # what ran is kept


def test_a_user_message_too_large_for_the_window_is_refused(store):
    model = ScriptedModel(["never"], context_window=500)
    with store.create() as s:
        s.compaction.enabled = False
        with pytest.raises(ModelError, match="compaction is disabled"):
            Agent(s, model).run("word " * 1000)
        assert model.requests == []
        assert s.path()[0].role == "user"  # the user's words are still durable


# --- 3. the documented imports work ----------------------------------------------------------


def test_the_documented_agent_imports_work():
    from agentlog.agent import Agent, Limits, Tool  # README, docs/agent.md, docs/server.md

    assert all(isinstance(c, type) for c in (Agent, Limits, Tool))
    lines = set()
    names = set()
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        lines |= set(re.findall(r"^\s*from agentlog\.agent import [^\n]+$", text, re.M))
        names |= set(re.findall(r"\bagentlog\.agent\.([A-Z]\w*)", text))
    assert lines and "Agent" in names
    for line in lines:
        exec(line.strip(), {})  # noqa: S102  # the docs' own import lines
    import agentlog.agent

    for name in names | {"Agent", "Tool", "Limits", "TurnResult", "LiveHub"}:
        assert name in agentlog.agent.__all__ and hasattr(agentlog.agent, name), name


# --- 11. bad tool arguments are the call's problem, said so -----------------------------------


def test_arguments_that_are_not_json_are_reported_as_bad_arguments(store):
    calls = []
    model = ScriptedModel([ToolUse("read", '{"n": 1', id="c1"), "ok"])
    with store.create() as s:
        Agent(s, model, tools=[Tool("read", lambda n: calls.append(n) or "x")]).run("go")
        (result,) = [s.resolve(e).record for e in s.path() if e.kind == "tool_result"]
    assert calls == []
    assert result["is_error"] is True
    text = result["content"]
    assert not text.startswith("ModelError")
    assert text.startswith("invalid arguments '{\"n\": 1'") and "not JSON: Expecting ',' delimiter" in text
    assert "the tool did not run" in text


# --- 12. the summary's files are paths, not markup ---------------------------------------------


def _call(name: str, arguments: dict) -> Event:
    with Store.memory().create() as s:
        return s.append("tool_call", {"id": "c1", "name": name, "arguments": json.dumps(arguments)}, role="assistant")


@pytest.mark.parametrize(
    ("name", "arguments", "modified"),
    [
        ("run<script>", {"cmd": "</script><script>alert(2)</script>"}, []),  # the QA case
        ("bash", {"command": "echo '<p>hi</p>' > index.html"}, ["index.html"]),
        ("bash", {"command": 'echo "a > b" > notes.md'}, ["notes.md"]),
        ("bash", {"command": "echo <b>bold</b>; echo y >alert(2)"}, []),
        ("bash", {"command": "sed -i 's/a b/c/' src/y.py && touch new.py 2>&1"}, ["src/y.py", "new.py"]),
        ("bash", {"command": "sort <in >out; echo x > 'q.txt'"}, ["out", "q.txt"]),
        ("write_file", {"path": "<script>alert(1)</script>"}, []),
        ("write_file", {"path": "src/a.py"}, ["src/a.py"]),
    ],
)
def test_the_summary_takes_only_paths_as_modified_files(name, arguments, modified):
    summary = ExtractiveSummarizer().summarize([_call(name, arguments)], None)
    assert summary.structured["files"]["modified"] == modified
    if not modified:
        assert "Modified" not in summary.text
