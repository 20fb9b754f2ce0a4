"""Where a Claude Code line's events attach: under its source parent,
and past the parallel calls of a reply whose results it belongs with."""

from __future__ import annotations

from typing import Any

from ...event import NIL_ID
from ..builder import SessionBuilder

__all__ = ["after_parallel_calls", "source_parent"]

#: How far behind the chain's end a parallel call's result may find its
#: call (a reply's calls and results, and the side lines between them).
_PARALLEL_REACH = 256
#: A bound on the side lines walked past as well (a hook's or a long
#: command's progress lines), so that no walk is unbounded.
_SIDE_REACH = 1 << 16


def source_parent(b: SessionBuilder, obj: dict[str, Any], field: str = "parentUuid") -> tuple[str, bool, str | None]:
    """(parent event, literal?, unresolved source parent)."""
    wanted = obj.get(field)
    if isinstance(wanted, str) and wanted:
        found = b.lookup(wanted)
        if found is not None:
            return found, False, None
    unresolved = wanted if isinstance(wanted, str) and wanted else None
    if not b.has_chain:
        return NIL_ID, False, unresolved  # after any side events kept before it
    return NIL_ID, True, unresolved  # a new root: the source starts over here


def after_parallel_calls(b: SessionBuilder, parent: str) -> str:
    """Where a tool result goes. Claude Code writes each parallel call
    of a reply as a line, then each result as a child of its own call's
    line: the second call and the first result are both children of the
    first call. In agentlog a reply's calls are one chain, so the results
    follow it, in the file's order: a result whose call lies behind the
    chain's end, with only that reply's calls and results (and kept side
    lines, such as hook progress) in between, goes at the end instead of
    starting a branch. A result under an earlier message (a rewind)
    still branches."""
    if b.kind_of.get(parent) != "tool_call":
        return parent
    # The call, and the side lines threaded after it (a hook's progress
    # under the call's line), which the result would otherwise follow.
    spots = {parent}
    at = parent
    while at in b.alias and len(spots) <= _SIDE_REACH:
        at = b.alias[at]
        spots.add(at)
    if b.cursor in spots:
        return parent
    current, steps = b.cursor, 0
    for _ in range(_SIDE_REACH):
        kind = b.kind_of.get(current)
        if kind not in ("tool_call", "tool_result", "custom"):
            return parent
        if kind != "custom":  # side lines do not count: long commands write many
            steps += 1
            if steps > _PARALLEL_REACH:
                return parent
        current = b.parent_of.get(current, NIL_ID)
        if current in spots:
            return b.cursor
    return parent
