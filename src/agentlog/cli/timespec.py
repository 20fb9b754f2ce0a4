"""Times a person types: ``90d``, ``12h``, ``2w``, or an ISO date."""

from __future__ import annotations

from datetime import UTC, datetime

import click

from .._ages import AmbiguousAge, ago, at, parse_age

__all__ = ["Age", "Since", "ago", "parse_age"]


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
        except AmbiguousAge as exc:
            self.fail(str(exc), param, ctx)  # an age, but which: no date looks like it
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
            return at(int(parsed.astimezone(UTC).timestamp() * 1e9))
        except (ValueError, OverflowError):
            return at(0)  # year 1 in a zone east of UTC falls before year 1 in UTC
