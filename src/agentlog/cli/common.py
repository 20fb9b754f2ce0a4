"""What every command shares: the app object, bundled options, id resolution.

Command modules import from here (never from ``cli/__init__``, which
imports them) so that adding a command group is one new module.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import click
import orjson

from ..errors import EventNotFound, SessionNotFound
from ..event import NIL_ID, check_session_id
from ..session import Session
from ..store import Store

__all__ = [
    "App",
    "CliError",
    "emit_json",
    "json_option",
    "pass_app",
    "resolve_event",
    "resolve_session",
    "session_command",
]

MIN_EVENT_PREFIX = 4
_FULL_EVENT_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\Z")
_HEX = re.compile(r"[0-9a-f]+\Z")
_SHOWN_MATCHES = 4


class CliError(click.ClickException):
    """A user's mistake the library has no type for (an ambiguous prefix)."""

    exit_code = 1


class App:
    """The global options, and the Store they describe (made on first use)."""

    def __init__(self, home: str | None, durability: str) -> None:
        self.home = home
        self.durability = durability
        self._store: Store | None = None

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = Store(self.home, durability=self.durability)
        return self._store

    def open(self, session: str, *, write: bool = False) -> Session:
        """Open a session named by id or unique prefix; read-only unless ``write``."""
        sid = resolve_session(self.store, session)
        return self.store.open(sid, readonly=not write)


pass_app = click.make_pass_decorator(App)


def resolve_session(store: Store, text: str) -> str:
    """A full session id, or the one session whose id starts with ``text``."""
    check_session_id(text)  # before any path is built from it (invariant 8)
    if store.exists(text):
        return text
    matches = sorted(sid for sid in store.backend.session_ids() if sid.startswith(text))
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise SessionNotFound(text)
    raise CliError(f"session prefix {text!r} is ambiguous: {_some(matches)}")


def resolve_event(session: Session, text: str, *, allow_root: bool = False) -> str:
    """``HEAD``, a full event id, or a unique prefix of at least 4 hex digits.

    Hyphens in a prefix are ignored, so a short id copied from ``log``
    works as well as the same digits typed without them."""
    if text.upper() == "HEAD":
        if session.head == NIL_ID:
            raise CliError(f"session {session.id!r} is empty: HEAD names no event")
        return session.head
    if allow_root and text.lower() == "root":
        return NIL_ID
    value = text.strip().lower()
    if _FULL_EVENT_ID.match(value):
        if value not in session:
            raise EventNotFound(value, session.id)
        return value
    digits = value.replace("-", "")
    if not (MIN_EVENT_PREFIX <= len(digits) <= 32 and _HEX.match(digits)):
        raise click.BadParameter(
            f"{text!r} is not an event id, HEAD, or a prefix of at least "
            f"{MIN_EVENT_PREFIX} hex digits", param_hint="'EVENT'")
    matches = [e.id for e in session.entries() if e.id.replace("-", "").startswith(digits)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        raise EventNotFound(text, session.id)
    raise CliError(f"event prefix {text!r} is ambiguous in session {session.id!r}: {_some(matches)}")


def _some(ids: list[str]) -> str:
    shown = ", ".join(ids[:_SHOWN_MATCHES])
    more = len(ids) - _SHOWN_MATCHES
    return f"{shown} and {more} more" if more > 0 else shown


def emit_json(document: Any) -> None:
    """Print one JSON document on stdout (the machine output of --json)."""
    click.echo(orjson.dumps(document, option=orjson.OPT_INDENT_2).decode())


def json_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--json", "as_json", is_flag=True,
                        help="Print one JSON document on stdout instead of text.")(f)


def session_command(*, write: bool = False) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Add the SESSION argument and call ``f(app, session, ...)`` with it open.

    Read commands open read-only, so they work while a writer runs; the
    session is closed (and a writer's lease released) however ``f`` ends."""

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        def run(app: App, /, session: str, **kwargs: Any) -> Any:
            with app.open(session, write=write) as opened:
                return f(app, opened, **kwargs)

        # As functools.wraps, but run keeps its own type (wraps' result
        # type hides the signature pass_app needs to see).
        functools.update_wrapper(run, f)
        return click.argument("session", metavar="SESSION")(pass_app(run))

    return decorate
