"""Times a person types: ``90d``, ``12h``, ``2w``, or an ISO date."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime

import click

from ..event import format_timestamp

__all__ = ["Age", "Since", "ago", "parse_age"]

_AGE = re.compile(r"\A(\d+(?:\.\d+)?)\s*(s|m|h|d|w|y)\Z")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400, "y": 365 * 86400}


def parse_age(text: str) -> float:
    """Seconds in ``90d`` (s, m, h, d, w, y); ValueError otherwise."""
    found = _AGE.match(text.strip().lower())
    if not found:
        raise ValueError(f"{text!r} is not an age such as 90d, 12h or 2w")
    return float(found[1]) * _UNIT_S[found[2]]


def _at(ns: int) -> str:
    """The stored timestamp form of ``ns``, no earlier than the epoch: no
    event is older, and a time before it (``1000y`` ago, year 1) is not
    one ``format_timestamp`` can write, so "since then" is "since ever"."""
    return format_timestamp(max(0, ns))


def ago(age_s: float) -> str:
    """The canonical UTC timestamp ``age_s`` seconds before now."""
    return _at(int((time.time() - age_s) * 1e9))


class Age(click.ParamType[float]):
    """An age (``90d``) as seconds."""

    name = "AGE"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        try:
            return parse_age(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


class Since(click.ParamType[str]):
    """An age (``7d``: that long ago) or an ISO date/time, as a canonical
    UTC timestamp (the stored form, so it compares as a string)."""

    name = "WHEN"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value).strip()
        try:
            age = parse_age(text)
        except ValueError:
            pass  # not an age: try a date
        else:
            return ago(age)
        try:
            parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            self.fail(f"{text!r} is neither an age (7d, 12h) nor a date (2026-01-31)", param, ctx)
        if parsed.tzinfo is None:
            try:
                parsed = parsed.astimezone()  # a bare date means local time, as people mean it
            except (ValueError, OverflowError):
                # Out of the platform's local-time range (year 1): long
                # before any event, where the zone changes nothing.
                parsed = parsed.replace(tzinfo=UTC)
        try:
            return _at(int(parsed.astimezone(UTC).timestamp() * 1e9))
        except (ValueError, OverflowError):
            return _at(0)  # year 1 in a zone east of UTC falls before year 1 in UTC
