"""Query and path parameters, checked before anything is opened (invariant 8)."""

from __future__ import annotations

import os
import re

from starlette.requests import Request

from ..event import check_event_id, check_session_id
from .errors import ApiError

__all__ = ["absolute_path", "event_id", "flag", "integer", "optional_event_id", "session_id", "text"]

_TRUE = {"1", "true", "yes"}
_FALSE = {"0", "false", "no", ""}


def session_id(request: Request) -> str:
    return check_session_id(request.path_params["session_id"])


def event_id(request: Request) -> str:
    return check_event_id(request.path_params["event_id"])


def optional_event_id(request: Request, name: str) -> str | None:
    value = request.query_params.get(name)
    return None if value is None or value == "" else check_event_id(value)


def flag(request: Request, name: str) -> bool:
    value = request.query_params.get(name, "").lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ApiError(400, "invalid_parameter", f"{name} must be true or false, not {value!r}")


_INTEGER = re.compile(r"-?[0-9]{1,19}")


def integer(request: Request, name: str, default: int, low: int, high: int) -> int:
    value = request.query_params.get(name)
    if value is None or value == "":
        return default
    # Plain ASCII digits only: int() would also take "+5", " 5" and other scripts' digits.
    if _INTEGER.fullmatch(value) is None:
        raise ApiError(400, "invalid_parameter", f"{name} must be an integer")
    number = int(value)
    if not low <= number <= high:
        raise ApiError(400, "invalid_parameter", f"{name} must be between {low} and {high}")
    return number


def text(request: Request, name: str, limit: int = 4096) -> str | None:
    value = request.query_params.get(name)
    if value is not None and len(value) > limit:
        raise ApiError(400, "invalid_parameter", f"{name} is longer than {limit} characters")
    return value or None


def absolute_path(request: Request, name: str) -> str | None:
    """A directory to filter by: absolute, since the server cannot know the
    client's current directory (a relative one would match nothing, silently)."""
    value = text(request, name)
    if value is not None and not os.path.isabs(value):
        raise ApiError(400, "invalid_parameter", f"{name}: give an absolute path (the server cannot know yours)")
    return value
