"""What every command shares: the app object, bundled options, id resolution.

Command modules import from here (never from ``cli/__init__``, which
imports them) so that adding a command group is one new module.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click
import orjson

from .._streams import write_stdout
from ..session import Session
from ..store import Store
from .completion import complete_session
from .refs import resolve_event, resolve_session

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
        """Open the session a ref names (see refs.py); read-only unless ``write``."""
        sid = resolve_session(self.store, session)
        return self.store.open(sid, readonly=not write)


pass_app = click.make_pass_decorator(App)


def emit_json(document: Any) -> None:
    """Print one JSON document on stdout (the machine output of --json)."""
    write_stdout(orjson.dumps(document, option=orjson.OPT_INDENT_2).decode() + "\n")


def json_option(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout instead of text.")(f)


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
        return click.argument("session", metavar="SESSION", shell_complete=complete_session)(pass_app(run))

    return decorate
