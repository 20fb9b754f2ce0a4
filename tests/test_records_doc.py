"""docs/records.md and agentlog.records say the same thing, and the records
agentlog writes have those shapes.

The page has one section per shape; each names its TypedDict on a
``Type: `Name``` line and lists the fields in a table of field, type,
required, meaning. ``doc_problems`` compares that with the TypedDicts
field by field; the tests run it on the real page and on damaged copies
(so a checker that finds nothing cannot pass).
"""

from __future__ import annotations

import re
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints, is_typeddict

import pytest

import agentlog.records as records
from agentlog import KINDS, Store
from agentlog.agent.loop import Agent, Tool
from agentlog.agent.scripted import ScriptedModel, ToolUse, Turn
from agentlog.records import RECORD_TYPES

DOC = Path(__file__).resolve().parent.parent / "docs" / "records.md"
TYPE_WORDS = ("str", "int", "float", "bool", "null", "list", "object")
TYPED_DICTS = {name: getattr(records, name) for name in records.__all__ if is_typeddict(getattr(records, name))}


# --- reading the page ------------------------------------------------------------------


def _cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def parse_sections(text: str) -> dict[str, dict[str, Any]]:
    """``## heading`` sections that have a ``Type: `Name``` line: their type
    name, anchor and field rows ``{field: (type cell, required cell)}``."""
    sections: dict[str, dict[str, Any]] = {}
    for block in re.split(r"^## ", text, flags=re.M)[1:]:
        heading, _, body = block.partition("\n")
        named = re.search(r"^Type: `(\w+)`", body, re.M)
        if not named:
            continue
        rows: dict[str, tuple[str, str]] = {}
        for line in body.splitlines():
            cells = _cells(line) if line.startswith("|") else []
            if len(cells) == 4 and re.fullmatch(r"`\w+`", cells[0]):
                rows[cells[0].strip("`")] = (cells[1], cells[2])
        sections[named.group(1)] = {"anchor": _slug(heading), "rows": rows, "heading": heading.strip()}
    return sections


def parse_kind_table(text: str) -> dict[str, str]:
    """The overview table: kind -> the record cell."""
    kinds: dict[str, str] = {}
    for line in text.splitlines():
        cells = _cells(line) if line.startswith("|") else []
        if len(cells) == 4 and re.fullmatch(r"`\w+`", cells[0]):
            kinds[cells[0].strip("`")] = cells[2]
        elif kinds and not line.startswith("|"):
            break  # the first table is the overview
    return kinds


# --- what the types say ----------------------------------------------------------------


def type_words(annotation: Any) -> set[str]:
    """The doc's words for an annotation: str, int, ..., and TypedDict names."""
    if annotation is type(None):
        return {"null"}
    if annotation is Any:
        return set()
    if is_typeddict(annotation):
        return {annotation.__name__}
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        return set().union(*(type_words(arm) for arm in get_args(annotation)))
    if origin is list:
        return {"list"} | type_words(get_args(annotation)[0])
    if origin is dict or annotation is dict:
        return {"object"}
    if origin is Literal:
        return {type(v).__name__ for v in get_args(annotation)}
    return {annotation.__name__}


def doc_words(cell: str) -> set[str]:
    plain = re.sub(r"\]\(#[\w-]+\)", "]", cell)  # the anchor of a link is not a type
    words = re.findall(rf"\b(?:{'|'.join(TYPE_WORDS)})\b", re.sub(r"`\w+`", "", plain))
    return set(words) | set(re.findall(r"`(\w+)`", plain))


def doc_problems(text: str) -> list[str]:
    problems: list[str] = []
    sections = parse_sections(text)
    anchors = {s["anchor"]: name for name, s in sections.items()}
    for name in sorted(set(TYPED_DICTS) - set(sections)):
        problems.append(f"{name} has no section")
    for name in sorted(set(sections) - set(TYPED_DICTS)):
        problems.append(f"section {sections[name]['heading']!r} names unknown type {name}")
    for name in sorted(set(sections) & set(TYPED_DICTS)):
        cls, rows = TYPED_DICTS[name], sections[name]["rows"]
        hints = get_type_hints(cls)
        for key in sorted(set(hints) - set(rows)):
            problems.append(f"{name}.{key} is not in the doc")
        for key in sorted(set(rows) - set(hints)):
            problems.append(f"the doc lists {name}.{key}, which the type does not have")
        for key in sorted(set(hints) & set(rows)):
            type_cell, required_cell = rows[key]
            required = "yes" if key in cls.__required_keys__ else "no"
            if required_cell != required:
                problems.append(f"{name}.{key}: doc says required {required_cell!r}, type says {required}")
            want, have = type_words(hints[key]), doc_words(type_cell)
            if want != have:
                problems.append(f"{name}.{key}: doc type {type_cell!r} names {sorted(have)}, type says {sorted(want)}")
    for target, anchor in re.findall(r"\[`(\w+)`\]\(#([\w-]+)\)", text):
        if anchors.get(anchor) != target:
            problems.append(f"link to {target} goes to #{anchor}, the section of {anchors.get(anchor)}")
    table = parse_kind_table(text)
    if set(table) != set(KINDS):
        problems.append(f"kind table lists {sorted(table)}, agentlog knows {sorted(KINDS)}")
    for kind, cls in RECORD_TYPES.items():
        if f"`{cls.__name__}`" not in table.get(kind, ""):
            problems.append(f"kind table: {kind} should name {cls.__name__}")
        if sections.get(cls.__name__, {}).get("heading") != f"`{kind}`":
            problems.append(f"{cls.__name__} should be documented under the heading `{kind}`")
    return problems


def test_records_doc_matches_the_typed_dicts():
    assert doc_problems(DOC.read_text()) == []


@pytest.mark.parametrize(
    "damage, expected",
    [
        (
            ("| `tokens_after` | int or null | yes |", "| `tokens_later` | int or null | yes |"),
            [
                "CompactionRecord.tokens_after is not in the doc",
                "the doc lists CompactionRecord.tokens_later, which the type does not have",
            ],
        ),
        (
            ("| `cost_usd` | float | no |", "| `cost_usd` | float | yes |"),
            ["UsageRecord.cost_usd: doc says required 'yes', type says no"],
        ),
        (
            ("| `first_kept_event_id` | str or null |", "| `first_kept_event_id` | str |"),
            ["CompactionRecord.first_kept_event_id: doc type 'str' names ['str'], type says ['null', 'str']"],
        ),
        (
            ("| `todos` | list of [`TodoRecord`](#todo) |", "| `todos` | list of [`TodoRecord`](#files) |"),
            ["link to TodoRecord goes to #files, the section of FilesSummary"],
        ),
        (
            ("Type: `LabelRecord`.", "Type: `LabelRecords`."),
            [
                "LabelRecord has no section",
                "section '`label`' names unknown type LabelRecords",
                "link to LabelRecord goes to #label, the section of LabelRecords",
                "LabelRecord should be documented under the heading `label`",
            ],
        ),
        (
            ("| `custom` | any | anything | no |\n", ""),
            [f"kind table lists {sorted(set(KINDS) - {'custom'})}, agentlog knows {sorted(KINDS)}"],
        ),
    ],
)
def test_the_check_finds_a_damaged_doc(damage, expected):
    old, new = damage
    text = DOC.read_text()
    assert text.count(old) == 1
    assert doc_problems(text.replace(old, new)) == expected


# --- the records agentlog writes have these shapes ---------------------------------------


def shape_problems(value: Any, annotation: Any, where: str) -> list[str]:
    """Where ``value`` does not have the type ``annotation``; TypedDicts are
    closed here, because these records are the ones agentlog writes."""
    if annotation is Any:
        return []
    if is_typeddict(annotation):
        if not isinstance(value, dict):
            return [f"{where}: {type(value).__name__}, not an object"]
        hints = get_type_hints(annotation)
        out = [f"{where}.{k}: missing" for k in sorted(annotation.__required_keys__ - set(value))]
        out += [f"{where}.{k}: not in {annotation.__name__}" for k in sorted(set(value) - set(hints))]
        for key in sorted(set(value) & set(hints)):
            out += shape_problems(value[key], hints[key], f"{where}.{key}")
        return out
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        arms = [shape_problems(value, arm, where) for arm in get_args(annotation)]
        return [] if any(not p for p in arms) else [f"{where}: {value!r} is not {annotation}"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{where}: {type(value).__name__}, not a list"]
        return [
            p for i, item in enumerate(value) for p in shape_problems(item, get_args(annotation)[0], f"{where}[{i}]")
        ]
    if origin is dict or annotation is dict:
        return [] if isinstance(value, Mapping) else [f"{where}: {type(value).__name__}, not an object"]
    if annotation is type(None):
        return [] if value is None else [f"{where}: {value!r} is not null"]
    if annotation is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif annotation is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    else:
        ok = isinstance(value, annotation)
    return [] if ok else [f"{where}: {value!r} is not {annotation.__name__}"]


def test_shape_check_finds_a_bad_record():
    bad = {
        "summary": "s",
        "structured": {"goal": 1},
        "first_kept_event_id": None,
        "tokens_before": True,
        "tokens_after": 2,
        "previous_compaction_id": None,
        "extra": 0,
    }
    problems = shape_problems(bad, records.CompactionRecord, "compaction")
    assert "compaction.extra: not in CompactionRecord" in problems
    assert "compaction.tokens_before: True is not int | None" in problems
    assert "compaction.structured.goal: 1 is not str" in problems
    assert "compaction.structured.constraints: missing" in problems


def test_records_agentlog_writes_have_the_documented_shapes():
    """A real session on the memory store: an agent turn with a tool call
    (message, tool_call, tool_result, state), a compaction, a branch
    summary, and a label; every record is checked against its TypedDict."""
    store = Store.memory()
    with store.create(name="shapes") as session:
        model = ScriptedModel(
            [
                Turn(text="Looking.", tool_calls=[ToolUse("read_file", {"path": "a.py"})], reasoning="hm"),
                "It must stay small. Done: read a.py.",
                "Next I will edit b.py.",
            ],
            price_per_token=(1e-6, 2e-6),
        )
        agent = Agent(session, model, tools=[Tool("read_file", lambda path: f"contents of {path}")])
        agent.run("Please read a.py. Never touch c.py.")
        first_reply = session.head
        agent.run("And then?")
        assert session.compact(keep_tokens=1) is not None
        session.select(first_reply)
        assert session.summarize_branch() is not None
        session.append("label", {"name": "v1", "target": first_reply})
        seen: dict[str, int] = {}
        for entry in session.entries():
            event = session.resolve(session.event(entry.id))
            seen[event.kind] = seen.get(event.kind, 0) + 1
            where = f"{event.kind} {event.id}"
            assert shape_problems(event.record, RECORD_TYPES[event.kind], where) == []
    assert set(seen) == set(RECORD_TYPES)
