"""The branch tree ``agentlog tree`` draws: linear runs kept flat, side
branches hung under their branch point, built as plain lines and spans
(``render.Styled``) so that a 100,000-event session draws in a second."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Mapping, Sequence

from ..backends.base import IndexEntry
from ..branching import event_counts, going_on
from ..event import NIL_ID
from .render import KIND_STYLES, Styled, abbreviate, event_line

__all__ = ["hide_kinds", "session_tree"]


class _Node:
    """One line of the tree and the lines drawn under it."""

    __slots__ = ("label", "children")

    def __init__(self, label: Styled) -> None:
        self.label = label
        self.children: list[_Node] = []

    def add(self, label: Styled) -> _Node:
        node = _Node(label)
        self.children.append(node)
        return node


def _draw(root: _Node) -> list[Styled]:
    """Box-drawing lines for ``root``, without recursion (a deep tree is fine)."""
    lines = [root.label]
    stack = [(child, "", i == len(root.children) - 1) for i, child in reversed(list(enumerate(root.children)))]
    while stack:
        node, prefix, last = stack.pop()
        # Only the connector is dim: a style spans all the text it is given.
        lines.append(Styled(prefix + ("└── " if last else "├── "), "dim").add_styled(node.label))
        if node.children:
            inner = prefix + ("    " if last else "│   ")
            count = len(node.children)
            stack.extend((child, inner, i == count - 1) for i, child in reversed(list(enumerate(node.children))))
    return lines


def hide_kinds(entries: Sequence[IndexEntry], head: str, hidden: frozenset[str]) -> tuple[list[IndexEntry], str]:
    """``entries`` without the ``hidden`` kinds, each shown event re-parented
    to its nearest shown ancestor; and HEAD moved the same way."""
    if not hidden:
        return list(entries), head
    by_id = {e.id: e for e in entries}

    def shown(event_id: str) -> str:
        seen = 0
        while event_id in by_id and by_id[event_id].kind in hidden and seen <= len(by_id):
            event_id = by_id[event_id].parent_id
            seen += 1
        return event_id

    kept = []
    for e in entries:
        if e.kind not in hidden:
            parent = shown(e.parent_id)
            kept.append(e if parent == e.parent_id else dataclasses.replace(e, parent_id=parent))
    return kept, shown(head)


_KIND_MARKS = {"compaction": "  ⇤ compaction: earlier history kept above", "branch_summary": "  ↩ branch summary"}


def session_tree(
    title: Styled,
    entries: Sequence[IndexEntry],
    head: str,
    texts: dict[str, str],
    *,
    labels: Mapping[str, Sequence[str]] | None = None,
) -> list[Styled]:
    """The whole event tree, with linear runs kept flat.

    A chain of single children is drawn as siblings at one depth. At a
    branch point (an event with several children) the branch toward HEAD
    (else the one heading the most events) goes on at the same depth, marked "↳ branch i/n",
    and every other branch hangs under the branch point as a labelled
    subtree. Depth therefore grows with how deeply branches nest inside
    side branches, never with the length of the session or the number of
    retries along it."""
    by_id = {e.id: e for e in entries}
    kids: dict[str, list[IndexEntry]] = defaultdict(list)
    for e in entries:
        kids[e.parent_id].append(e)
    counts = event_counts((e.id, e.parent_id) for e in entries)
    on_head_path = set()
    current = head
    while current in by_id and current not in on_head_path:
        on_head_path.add(current)
        current = by_id[current].parent_id
    shorts = abbreviate(by_id)
    widths = (
        max((len(e.kind) for e in entries), default=0),
        max((len(e.role or "-") for e in entries), default=0),
        max((len(v) for v in shorts.values()), default=0),
    )

    def label(e: IndexEntry, went_on: str | None) -> Styled:
        line = event_line(
            e, shorts[e.id], texts.get(e.id, ""), widths=widths, head=e.id == head, labels=(labels or {}).get(e.id, ())
        )
        if went_on:  # the first event of the branch that goes on at its branch point's depth
            line.add(f"  ↳ {went_on}", "bold green" if "active" in went_on else "magenta")
        if e.kind in _KIND_MARKS:
            line.add(_KIND_MARKS[e.kind], KIND_STYLES[e.kind])
        if len(kids[e.id]) > 1:
            line.add(f"  ⑂ {len(kids[e.id])} branches", "bold magenta")
        return line

    tree = _Node(title)
    todo: list[tuple[_Node, IndexEntry, str | None]] = []

    def branch_out(node: _Node, children: list[IndexEntry], what: str = "branch") -> tuple[IndexEntry, str]:
        """Hang the side branches of a branch point under ``node``, each a
        labelled subtree; return the child that goes on at the branch
        point's own depth (the one toward HEAD, else the one heading the
        most events, the newest of those) and its label. So a session
        rewound and retried a thousand times stays one column wide along
        its active path, rather than a level deeper at every retry; and
        off the active path the long chain goes on and the short retries
        hang (going on with the newest child, a leaf, put the chain a level
        deeper at every retry: 8,000 events drew 240 MB)."""
        going = going_on([c.id for c in children], on_head_path, counts)
        went_on = next(c for c in children if c.id == going)
        mark = ""
        for n, child in enumerate(children, 1):
            tag = f"{what} {n}/{len(children)}" + ("  (active)" if child.id in on_head_path else "")
            if child is went_on:
                mark = tag
            else:
                todo.append((node.add(Styled(tag, "magenta")), child, None))
        return went_on, mark

    drawn: set[str] = set()

    def grow() -> None:
        while todo:
            container, event, went_on = todo.pop()
            while event.id not in drawn:  # ids increase along parents, but stay safe
                drawn.add(event.id)
                node = container.add(label(event, went_on))
                children = kids.get(event.id, [])
                if not children:
                    break
                went_on = None
                if len(children) > 1:
                    event, went_on = branch_out(node, children)
                else:
                    event = children[0]

    roots = kids.get(NIL_ID, [])
    if len(roots) == 1:
        todo.append((tree, roots[0], None))
    elif roots:
        first, mark = branch_out(tree, roots, "root")
        todo.append((tree, first, mark))
    grow()
    # Events whose parent is gone (quarantined by a repair) still show.
    for e in entries:
        if e.parent_id != NIL_ID and e.parent_id not in by_id:
            orphan = tree.add(Styled(f"orphaned: parent {e.parent_id} is missing", "red"))
            todo.append((orphan, e, None))
    grow()
    if not entries:
        tree.add(Styled("(no events)", "dim"))
    return _draw(tree)
