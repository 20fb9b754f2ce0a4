"""Which branch of a branch point a drawn tree goes on with, at the branch
point's own depth: the rule ``agentlog tree`` and the HTML export's
sidebar share (the viewer's ``buildRows`` is its JavaScript twin).

The branch toward HEAD goes on; else the one heading the most events, the
newest of those; every other branch hangs one level deeper. Going on with
the newest child put a chain a level deeper at every retry when the
retry was the newer child (8,000 events drew 240 MB of text tree)."""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence

__all__ = ["event_counts", "going_on"]


def event_counts(links: Iterable[tuple[str, str]]) -> dict[str, int]:
    """How many events each event heads (itself and every event below it),
    from the (event id, parent id) links in append order: a child comes
    after its parent, so one backward pass sums them."""
    counts: dict[str, int] = {}
    for event_id, parent_id in reversed(list(links)):
        mine = counts[event_id] = counts.get(event_id, 0) + 1
        counts[parent_id] = counts.get(parent_id, 0) + mine
    return counts


def going_on(children: Sequence[str], toward_head: Container[str], counts: Mapping[str, int]) -> str:
    """The child of a branch point that goes on at its depth (the module's rule)."""
    on_path = next((child for child in children if child in toward_head), None)
    return on_path if on_path is not None else max(reversed(children), key=lambda child: counts.get(child, 0))
