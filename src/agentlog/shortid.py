"""Short ids a person can type: the unique random tail of a UUIDv7.

UUIDv7 ids begin with a timestamp, so ids made a second apart share their
first 10 hex digits, while the last 8 are random. ``short_ids`` gives
each id its last 8 hex digits, lengthened towards the front until no
other id in the scope ends with them or begins with them, so the short
form can be typed back and matched either way (see ``agentlog.cli.refs``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

__all__ = ["SHORT_LEN", "hex_digits", "is_uuid", "short_ids"]

SHORT_LEN = 8
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")


def is_uuid(value: str) -> bool:
    """Whether ``value`` is a canonical lowercase UUID (an event id's form)."""
    return _UUID.match(value) is not None


def hex_digits(value: str) -> str:
    return value.replace("-", "")


def short_ids(ids: Iterable[str], min_len: int = SHORT_LEN) -> dict[str, str]:
    """Each UUID's shortest unique tail (at least ``min_len`` hex digits).

    Ids that are not UUIDs (a session made with ``--id demo``) are their
    own short form. The tail is unique both as a tail and as a prefix of
    any other id, because a ref is matched either way. It is also never
    a prefix of an id that is not a UUID (``--id 1f2e3d4c`` typed as
    another session's short id): such an id is its own short form, and
    what is printed for the UUID must still name it alone."""
    ids = list(ids)
    uuids = sorted({i for i in ids if _UUID.match(i)}, key=lambda i: hex_digits(i)[::-1])
    others = [hex_digits(i) for i in ids if not _UUID.match(i)]
    out: dict[str, str] = {i: i for i in ids if not _UUID.match(i)}
    reversed_hex = [hex_digits(i)[::-1] for i in uuids]
    need = [min_len] * len(uuids)
    for n in range(1, len(uuids)):  # neighbours in reversed order share the longest tails
        a, b = reversed_hex[n - 1], reversed_hex[n]
        common = 0
        while common < len(a) and a[common] == b[common]:
            common += 1
        need[n - 1] = max(need[n - 1], common + 1)
        need[n] = max(need[n], common + 1)
    prefixes: dict[int, set[str]] = {}
    for uid, length in zip(uuids, need, strict=True):
        digits = hex_digits(uid)
        while length < len(digits):
            starts = prefixes.get(length)
            if starts is None:
                starts = prefixes[length] = {hex_digits(u)[:length] for u in uuids}
            tail = digits[-length:]
            unique = tail not in starts or digits.startswith(tail) and _only_start(uuids, tail, uid)
            if unique and not any(o.startswith(tail) for o in others):
                break
            length += 1
        out[uid] = digits[-length:]
    return out


def _only_start(uuids: list[str], text: str, uid: str) -> bool:
    return all(u == uid or not hex_digits(u).startswith(text) for u in uuids)
