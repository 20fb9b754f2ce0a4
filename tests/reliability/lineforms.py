"""An event line in version 2's form (docs/format.md, "Versions"), for the
tests and the fuzzer that check that both forms read alike: format 3 leaves
a null ``branch_from`` and ``digest`` out, format 2 wrote both, null or not.
Standard library only: the fuzzer imports it before instrumenting agentlog."""

from __future__ import annotations

from typing import Any

__all__ = ["as_format_2"]

_FORMAT_2_ORDER = ("id", "parent_id", "branch_from", "kind", "role", "timestamp", "record", "digest", "txn")


def as_format_2(rec: dict[str, Any]) -> dict[str, Any]:
    """The members of an event record (a decoded line, its ``crc`` gone, or
    a writer's object) in the order and with the nulls format 2 wrote."""
    full = {"branch_from": None, "digest": None, **rec}
    return {k: full[k] for k in _FORMAT_2_ORDER if k in full}
