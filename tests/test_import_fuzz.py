"""Lines of any shape: an import never fails on them, and accounts for each."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlog import Store
from agentlog.importers import FORMATS, run_import
from importers_support import load

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=6))
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=8,
)
IDS = st.sampled_from(["a", "b", "c", "d", None, 7])

CLAUDE = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["user", "assistant", "system", "summary", "progress", "x"]),
        "sessionId": st.sampled_from(["s1", "s1", "s2"]),
        "uuid": IDS,
        "parentUuid": IDS,
    },
    optional={
        "message": st.one_of(
            VALUES,
            st.fixed_dictionaries(
                {
                    "role": st.sampled_from(["user", "assistant"]),
                    "id": IDS,
                    "content": st.one_of(
                        st.text(max_size=5),
                        st.lists(
                            st.fixed_dictionaries(
                                {"type": st.sampled_from(["text", "tool_use", "tool_result", "thinking"])},
                                optional={"id": IDS, "tool_use_id": IDS, "input": VALUES, "content": VALUES},
                            ),
                            max_size=3,
                        ),
                    ),
                    "usage": VALUES,
                }
            ),
        ),
        "subtype": st.sampled_from(["compact_boundary", "other"]),
        "logicalParentUuid": IDS,
        "isCompactSummary": st.booleans(),
        "leafUuid": IDS,
        "summary": VALUES,
        "timestamp": st.one_of(st.text(max_size=4), st.just("2026-01-01T00:00:00Z")),
        "isSidechain": st.booleans(),
        "agentId": IDS,
    },
)
CODEX = st.fixed_dictionaries(
    {
        "type": st.sampled_from(["response_item", "event_msg", "compacted", "turn_context", "y"]),
        "payload": st.one_of(
            VALUES,
            st.fixed_dictionaries(
                {
                    "type": st.sampled_from(
                        [
                            "message",
                            "reasoning",
                            "function_call",
                            "function_call_output",
                            "thread_rolled_back",
                            "user_message",
                            "custom_tool_call",
                            "local_shell_call",
                        ]
                    )
                },
                optional={
                    "role": VALUES,
                    "content": VALUES,
                    "call_id": IDS,
                    "output": VALUES,
                    "num_turns": st.integers(-2, 4),
                    "arguments": VALUES,
                    "action": VALUES,
                    "message": VALUES,
                    "replacement_history": VALUES,
                },
            ),
        ),
    },
    optional={"timestamp": st.just("2026-01-01T00:00:00Z")},
)
PI = st.fixed_dictionaries(
    {
        "type": st.sampled_from(
            [
                "message",
                "compaction",
                "label",
                "model_change",
                "branch_summary",
                "session_info",
                "custom",
                "title",
            ]
        )
    },
    optional={
        "id": IDS,
        "parentId": IDS,
        "message": st.one_of(
            VALUES,
            st.fixed_dictionaries(
                {"role": st.sampled_from(["user", "assistant", "toolResult", "bashExecution"])},
                optional={"content": VALUES},
            ),
        ),
        "firstKeptEntryIndex": st.integers(-1, 9),
        "firstKeptEntryId": IDS,
        "targetId": IDS,
        "fromId": IDS,
        "model": VALUES,
        "label": VALUES,
        "name": VALUES,
        "title": VALUES,
    },
)

HEADERS = {
    "claude": [],
    "codex": [{"type": "session_meta", "payload": {"id": "0199aaaa-0000-7000-8000-000000000001"}}],
    "pi": [{"type": "session", "version": 3, "id": "p1", "cwd": "/w"}],
}


def _check(fmt: str, lines: list[dict], junk: list[str]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        name = "rollout-x-0199aaaa-0000-7000-8000-000000000001.jsonl" if fmt == "codex" else "f.jsonl"
        path = Path(tmp) / name
        text = [json.dumps(o) for o in HEADERS[fmt] + lines] + junk
        path.write_text("\n".join(text) + "\n")
        store = Store.memory()
        report = run_import(store, FORMATS[fmt], [str(path)])
        if report.errors:  # only a file naming no session at all
            assert report.events == 0 and "session id" in report.errors[0]
            return
        covered: set[int] = set()
        for s in report.sessions:
            covered |= load(store, s.session_id).lines()
        dups = sum(s.duplicates for s in report.sessions)
        assert len(covered) + dups == len([t for t in text if t.strip()])
        again = run_import(store, FORMATS[fmt], [str(path)])
        assert again.events == 0 and again.errors == []


FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.lists(CLAUDE, max_size=8), st.lists(st.sampled_from(["{", "[]", "1", '{"a":']), max_size=2))
def test_claude_lines_of_any_shape(lines, junk):
    _check("claude", lines, junk)


@FUZZ
@given(st.lists(CODEX, max_size=8), st.lists(st.sampled_from(["{", "[]", "1"]), max_size=2))
def test_codex_lines_of_any_shape(lines, junk):
    _check("codex", lines, junk)


@FUZZ
@given(st.lists(PI, max_size=8), st.lists(st.sampled_from(["{", "[]", "1"]), max_size=2))
def test_pi_lines_of_any_shape(lines, junk):
    _check("pi", lines, junk)


def test_a_compact_summary_after_a_copied_boundary_is_its_own_line():
    # Found by test_claude_lines_of_any_shape: the summary's parent is a
    # compaction copied from the sidechain session; merged into that copy,
    # the line was in no event of its own and counted nowhere.
    summary = {
        "type": "user",
        "sessionId": "s1",
        "uuid": "b",
        "parentUuid": "a",
        "message": {},
        "isSidechain": False,
        "timestamp": "2026-01-01T00:00:00Z",
        "isCompactSummary": True,
    }
    boundary = {"type": "system", "sessionId": "s1", "uuid": "a", "parentUuid": "a", "subtype": "compact_boundary"}
    _check("claude", [summary, {**boundary, "isSidechain": True}], [])


def test_a_message_with_a_role_the_store_cannot_name_is_kept_as_custom() -> None:
    """Found by the fuzz test in CI: a Codex message with an empty role made
    the core refuse the event, and the session's whole import with it."""
    lines = [
        {"type": "response_item", "payload": None},
        {"type": "response_item", "payload": {"type": "message", "role": ""}},
        {"type": "response_item", "payload": {"type": "message", "role": "user", "content": "after"}},
    ]
    _check("codex", lines, [])
