"""ADK session state as the ADK adapter stores it: its JSON form, and its
split into the app, user and session scopes (``temp:`` keys dropped).
"""

from __future__ import annotations

import logging
from typing import Any

import orjson
from google.adk.sessions.state import State
from pydantic_core import PydanticSerializationError, to_jsonable_python

from .. import InvalidEvent

__all__ = ["json_state", "split_scopes", "state_delta_of"]

# The adapter logs under its public module's name, wherever the code that
# logs lives: that is the logger a user configures.
_log = logging.getLogger("agentlog.integrations.adk")


def json_state(state: dict[str, Any]) -> dict[str, Any]:
    """State in its JSON form, as ADK's persistent services store it.

    Datetimes, models and so on become their JSON form. A value with none (a
    callable) is stored as its ``repr``, with a warning, as ADK's own services
    do (``make_json_safe_state``), rather than failing the whole session.

    State the store cannot hold (bytes that are not UTF-8, a lone surrogate,
    an integer beyond 64 bits) is ``InvalidEvent``. It is checked here, before
    anything is written: a session and its scopes are separate writes, so a
    value refused by the last of them would leave the first ones behind."""
    try:
        try:
            result: dict[str, Any] = to_jsonable_python(state)
        except PydanticSerializationError:
            _log.warning(
                "session state holds values that are not JSON-serializable (e.g. callables);"
                " they are stored as their repr, as ADK's persistent services store them",
                exc_info=True,
            )
            result = to_jsonable_python(state, serialize_unknown=True)
        # The store writes records and metadata with orjson: what it refuses,
        # every write of this state would refuse.
        orjson.dumps(result)
    except (UnicodeError, orjson.JSONEncodeError) as exc:
        raise InvalidEvent(f"ADK state cannot be stored: {exc}") from None
    return result


def split_scopes(delta: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(app, user, session) parts of a state delta; ``temp:`` keys dropped."""
    app: dict[str, Any] = {}
    user: dict[str, Any] = {}
    own: dict[str, Any] = {}
    for key, value in delta.items():
        if key.startswith(State.APP_PREFIX):
            app[key.removeprefix(State.APP_PREFIX)] = value
        elif key.startswith(State.USER_PREFIX):
            user[key.removeprefix(State.USER_PREFIX)] = value
        elif not key.startswith(State.TEMP_PREFIX):
            own[key] = value
    return app, user, own


def state_delta_of(record: Any) -> dict[str, Any]:
    """The state delta a stored event's record holds ({} for none)."""
    actions = record.get("actions") if isinstance(record, dict) else None
    delta = actions.get("state_delta") if isinstance(actions, dict) else None
    return delta if isinstance(delta, dict) else {}
