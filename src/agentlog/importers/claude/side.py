"""Side lines, which are not the conversation: a ``summary`` line becomes
a ``label`` (or a ``custom`` event), and every other line (titles, hook
progress, snapshots, unknown types) is kept whole as a ``custom`` event."""

from __future__ import annotations

from typing import Any

from ..base import custom_record, split_fields
from ..builder import SessionBuilder
from ..model import SourceLine
from .lines import dedup_key, line_time_ns, uuid_keys
from .parents import after_parallel_calls

__all__ = ["convert_side_line", "convert_summary", "finish_summaries"]


def convert_summary(b: SessionBuilder, line: SourceLine, obj: dict[str, Any], *, waited: bool = False) -> None:
    """A ``label`` on the summary's ``leafUuid`` when that event is in the
    session, else a ``custom`` event. Claude Code writes a summary *before*
    the conversation it names when it resumes one (the new file starts with
    it, then the history copied); such a summary waits for its leaf, to the
    end of the run (``finish_summaries``), unless ``waited`` already."""
    leaf = obj.get("leafUuid")
    target = b.keys.get(leaf) if isinstance(leaf, str) else None
    if target is None and not waited and isinstance(leaf, str) and leaf in b.state.get("ahead", ()):
        b.put(b.state.setdefault("waiting_summaries", {}), (line.path, line.lineno), line)
        return
    key = dedup_key(obj)
    keys = (key,) if key else ()
    if target is None:
        b.emit("custom", None, custom_record(obj), line, keys=keys, side=True)
        return
    record = {
        "name": obj.get("summary"),
        "target": target,
        "source": {"fields": split_fields(obj, ("summary",))},
    }
    b.emit("label", None, record, line, keys=keys, side=True)
    if isinstance(obj.get("summary"), str):
        b.put(b.meta_changes, "name", obj["summary"])  # Claude Code shows it as the title


def finish_summaries(b: SessionBuilder) -> None:
    """The summaries that waited for a later line: each a label if its leaf
    came, else the ``custom`` event it would have been (a repeat of one
    already written, from another file of the session, adds nothing)."""
    waiting = b.state.pop("waiting_summaries", {})
    for line in waiting.values():
        assert line.obj is not None
        key = dedup_key(line.obj)
        if key is None or key not in b.keys:
            convert_summary(b, line, line.obj, waited=True)


def convert_side_line(b: SessionBuilder, line: SourceLine, obj: dict[str, Any]) -> None:
    """The line kept whole as a ``custom`` event; a title line also names the session."""
    kind = obj.get("type")
    # Kept where its source parent is, else where the chain is now. A
    # side line under one of a reply's parallel calls (a hook's
    # progress) goes where that call's result will: after the calls,
    # not on a branch off the call that the results would follow.
    wanted = obj.get("parentUuid")
    parent = b.lookup(wanted) if isinstance(wanted, str) else None
    if parent is not None:
        parent = after_parallel_calls(b, parent)
    b.emit(
        "custom",
        "system" if kind == "system" else None,
        custom_record(obj),
        line,
        ts_ns=line_time_ns(obj),
        parent=parent,
        keys=uuid_keys(obj),
        side=True,
    )
    title = obj.get("customTitle")
    if kind == "custom-title" and isinstance(title, str) and title.strip():
        # /rename: the user's own title, which Claude Code lists
        # before any summary (the last rename wins).
        b.put(b.meta_changes, "title", title)
    ai_title = obj.get("aiTitle")
    if kind == "ai-title" and isinstance(ai_title, str) and ai_title.strip():
        # Claude Code 2.1's generated title, which took the place of
        # the summary line: a name as the summary's is (the newest wins).
        b.put(b.meta_changes, "name", ai_title)
