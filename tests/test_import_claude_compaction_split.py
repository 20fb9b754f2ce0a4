"""A Claude Code compaction whose two lines reach two imports.

Claude Code writes a ``compact_boundary`` line, then the ``isCompactSummary``
message, as two writes; an import (or a ``--follow`` poll) may end between
them. The boundary is then stored awaiting its summary, and the summary's
compaction takes its place: the same summary, size and trigger as an import
of the whole file, and the boundary's predecessor, not the boundary."""

from __future__ import annotations

from pathlib import Path

from agentlog import Store
from importers_support import copy_fixture, do_import, load

pytest_plugins = ["importers_store"]

FIXTURE = "claude-code_synthetic_dag_compact_after_rewind.jsonl"
FIELDS = ("summary", "tokens_before", "trigger", "previous_compaction_id")


def test_a_summary_after_the_import_that_wrote_its_boundary(store: Store, tmp_path: Path) -> None:
    whole = copy_fixture(FIXTURE, tmp_path / "whole")
    one_shot = Store.memory()
    do_import(one_shot, "claude", whole)
    sid = one_shot.list()[0].id
    (expected,) = [e for e in load(one_shot, sid).events if e.kind == "compaction"]

    lines = whole.read_text().splitlines(keepends=True)
    boundary = next(i for i, text in enumerate(lines) if '"compact_boundary"' in text)
    split = tmp_path / "split" / FIXTURE
    split.parent.mkdir()
    split.write_text("".join(lines[: boundary + 1]))
    assert do_import(store, "claude", split).errors == []
    split.write_text("".join(lines))
    assert do_import(store, "claude", split).errors == []

    compactions = [e for e in load(store, sid).events if e.kind == "compaction"]
    assert len(compactions) == 2
    placeholder, compaction = compactions
    assert placeholder.record["source"]["awaiting_summary"] is True
    assert compaction.parent_id == placeholder.id and compaction.record["source"]["summary_of"] == placeholder.id
    assert {f: compaction.record[f] for f in FIELDS} == {f: expected.record[f] for f in FIELDS}
    assert compaction.record["tokens_before"] is not None and compaction.record["trigger"] is not None
    with store.open(sid, readonly=True) as s:
        in_context = [e.id for e in s.context()]
    assert compaction.id in in_context and placeholder.id not in in_context
