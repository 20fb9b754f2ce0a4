"""Ages a person types (``90d``, ``12h``, ``2w``), for every surface that
takes a "since" or an "older than": the command line, the library's
search, and the server's search route."""

from __future__ import annotations

import math
import re
import time

from .event import format_timestamp

__all__ = ["AmbiguousAge", "ago", "at", "parse_age"]


class AmbiguousAge(ValueError):
    """An age whose unit could be read two ways (``6M``)."""


_AGE = re.compile(r"\A(\d+(?:\.\d+)?)\s*(s|m|h|d|w|y)\Z")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}


def parse_age(text: str) -> float:
    """Seconds in ``90d`` (s, m, h, d, w, y; any case but ``M``); ValueError otherwise."""
    found = _AGE.match(text.strip().lower())
    if not found:
        raise ValueError(f"{text!r} is not an age such as 90d, 12h or 2w")
    if found[2] == "m" and "M" in text:
        # 'm' is minutes, but '6M' reads as six months (as in ISO 8601 and
        # pandas): `prune --older-than 6M` taken as minutes would offer to
        # delete nearly every session.
        raise AmbiguousAge(f"{text!r} is ambiguous: 'm' is minutes ({found[1]}m); write months in days (30d a month)")
    seconds = float(found[1]) * _UNIT_S[found[2]]
    if not math.isfinite(seconds):
        raise ValueError(f"{text!r} is too long an age to count")
    return seconds


def at(ns: int) -> str:
    """The stored timestamp form of ``ns``, no earlier than the epoch: no
    event is older, and a time before it (``1000y`` ago, year 1) is not
    one ``format_timestamp`` can write, so "since then" is "since ever"."""
    return format_timestamp(max(0, ns))


def ago(age_s: float) -> str:
    """The canonical UTC timestamp ``age_s`` seconds before now (the epoch
    for an age longer than time itself: no event is older)."""
    now = time.time()
    return at(0) if age_s >= now else at(int((now - age_s) * 1e9))
