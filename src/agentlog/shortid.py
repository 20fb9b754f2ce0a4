"""Short ids a person can type: the unique random tail of a UUIDv7.

UUIDv7 ids begin with a timestamp, so ids made a second apart share their
first 10 hex digits, while the last 8 are random. ``short_ids`` gives
each id its last 8 hex digits, lengthened towards the front until no
other id in the scope ends with them or begins with them, so the short
form can be typed back and matched either way (see ``agentlog.cli.refs``).
"""

from __future__ import annotations

import itertools
import re
from bisect import bisect_left
from collections.abc import Iterable

__all__ = ["SHORT_LEN", "hex_digits", "is_uuid", "short_ids"]

SHORT_LEN = 8
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")


def is_uuid(value: str) -> bool:
    """Whether ``value`` is a canonical lowercase UUID (an event id's form)."""
    return _UUID.match(value) is not None


def hex_digits(value: str) -> str:
    return value.replace("-", "")


def short_ids(ids: Iterable[str], min_len: int = SHORT_LEN, *, only: Iterable[str] | None = None) -> dict[str, str]:
    """Each UUID's shortest unique tail (at least ``min_len`` hex digits).

    Ids that are not UUIDs (a session made with ``--id demo``) are their
    own short form. The tail is unique both as a tail and as a prefix of
    any other id, because a ref is matched either way. It is also never
    a prefix of an id that is not a UUID (``--id 1f2e3d4c`` typed as
    another session's short id): such an id is its own short form, and
    what is printed for the UUID must still name it alone.

    ``only``: the ids to shorten (default: all of ``ids``, which stay the
    scope they must be unique in). ``agentlog log -n 20`` of a session of
    100,000 events shortens 20 ids, not 100,000."""
    ids = list(ids)
    uuids = {i for i in ids if _UUID.match(i)}
    others = [hex_digits(i) for i in ids if i not in uuids]
    # Sorted by reversed digits, an id's neighbours share its longest tails;
    # sorted as they are, the ids a tail begins are one run.
    tails = sorted(hex_digits(u)[::-1] for u in uuids)
    starts = sorted(hex_digits(u) for u in uuids)
    if only is None:
        shared = _shared_tails(tails)
        wanted: Iterable[str] = ids
    else:
        shared = {t: _shared_tail(tails, t) for t in (hex_digits(u)[::-1] for u in only if u in uuids)}
        wanted = only
    out: dict[str, str] = {}
    for uid in wanted:
        if uid not in uuids:
            out[uid] = uid
            continue
        digits = hex_digits(uid)
        length = max(min_len, shared[digits[::-1]] + 1)
        while length < len(digits) and not _names_alone(digits, digits[-length:], starts, others):
            length += 1
        out[uid] = digits[-length:]
    return out


def _shared_tails(tails: list[str]) -> dict[str, int]:
    """For every id (as reversed digits, sorted), the longest tail it shares
    with another: one pass over neighbours."""
    shared = dict.fromkeys(tails, 0)
    for a, b in itertools.pairwise(tails):
        common = _common(a, b)
        shared[a] = max(shared[a], common)
        shared[b] = max(shared[b], common)
    return shared


def _shared_tail(tails: list[str], backwards: str) -> int:
    """The same for one id, by bisection: its two neighbours."""
    at = bisect_left(tails, backwards)
    return max((_common(tails[n], backwards) for n in (at - 1, at + 1) if 0 <= n < len(tails)), default=0)


def _names_alone(digits: str, tail: str, starts: list[str], others: list[str]) -> bool:
    """Whether ``tail``, typed back, names only the id ``digits``: no other
    UUID begins with it, and no id that is not a UUID does."""
    at = bisect_left(starts, tail)  # the first id that may begin with it
    if at < len(starts) and starts[at].startswith(tail):
        if starts[at] != digits or at + 1 < len(starts) and starts[at + 1].startswith(tail):
            return False
    return not others or not any(o.startswith(tail) for o in others)


def _common(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n
