"""How a LangGraph checkpoint record refers to a list channel's value.

A list (a message history, say) is stored element by element: each element
is one content-addressed ``lg.value`` event. The checkpoint record refers
to the list in one of two forms:

- full: ``{"items": [event id, ...]}``;
- delta: ``{"base": [ns, checkpoint id, channel], "keep": n, "items": [...],
  "depth": d}``: the first ``n`` items of that channel's list at that
  checkpoint (the parent, when it was written), then ``items``.

A list that grows by one message is then one new id in the record, not the
whole list again, so records grow with what changes. A delta's base may be
a delta itself; ``depth`` counts the chain, and past ``MAX_DEPTH`` a full
list is written again, so reading a list follows at most ``MAX_DEPTH``
records, all of them already in memory (the saver's index).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["MAX_DEPTH", "Lookup", "check_ref", "delta_or_full", "list_items"]

MAX_DEPTH = 32

#: (ns, checkpoint id) -> that checkpoint's record, or None if it is not stored.
Lookup = Callable[[str, str], dict[str, Any] | None]


def check_ref(ref: Any) -> bool:
    """Whether ``ref`` has the shape of a channel value reference."""
    if ref is None:
        return True
    if isinstance(ref, list):
        return bool(ref) and isinstance(ref[0], str)
    if not isinstance(ref, dict) or not isinstance(ref.get("items"), list):
        return False
    if "base" not in ref:
        return True
    base = ref["base"]
    return (
        isinstance(base, list)
        and len(base) == 3
        and all(isinstance(b, str) for b in base)
        and isinstance(ref.get("keep"), int)
        and isinstance(ref.get("depth"), int)
    )


def list_items(ref: dict[str, Any], lookup: Lookup) -> list[str]:
    """The value event ids of a list reference, oldest first.

    Raises KeyError when a delta's base is not stored (a damaged thread)."""
    chain: list[dict[str, Any]] = []
    while "base" in ref:
        if len(chain) > MAX_DEPTH:
            raise KeyError(f"list reference chain longer than {MAX_DEPTH}")
        chain.append(ref)
        ns, checkpoint_id, channel = ref["base"]
        record = lookup(ns, checkpoint_id)
        base = record["values"].get(channel) if record is not None else None
        if not isinstance(base, dict):
            raise KeyError(f"the list at checkpoint {checkpoint_id!r}, channel {channel!r}, is not stored")
        ref = base
    items = list(ref["items"])
    for delta in reversed(chain):
        items = items[: delta["keep"]] + list(delta["items"])
    return items


def delta_or_full(new_ids: list[str], base: tuple[str, str, str], base_ref: Any, lookup: Lookup) -> dict[str, Any]:
    """The reference to store for a list whose element ids are ``new_ids``,
    given the base list's reference (the parent checkpoint's, if any)."""
    if not isinstance(base_ref, dict):
        return {"items": new_ids}
    depth = int(base_ref.get("depth", 0)) + 1
    if depth > MAX_DEPTH:
        return {"items": new_ids}
    try:
        old = list_items(base_ref, lookup)
    except KeyError:
        return {"items": new_ids}  # an unreadable base: start afresh rather than refer to it
    keep = 0
    for a, b in zip(old, new_ids, strict=False):
        if a != b:
            break
        keep += 1
    if keep == 0:
        return {"items": new_ids}
    return {"base": list(base), "keep": keep, "items": new_ids[keep:], "depth": depth}
