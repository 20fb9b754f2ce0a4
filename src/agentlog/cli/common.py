"""What every command shares: the app object, bundled options, id resolution.

Command modules import from here (never from ``cli/__init__``, which
imports them) so that adding a command group is one new module.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

from .._json import dumps as dumps_json
from .._streams import write_stdout
from ..session import Session
from ..store import Store
from .completion import complete_session
from .location import missing_store
from .refs import resolve_event, resolve_session

__all__ = [
    "CREATING_COMMANDS",
    "App",
    "CliError",
    "emit_json",
    "json_option",
    "needs",
    "pass_app",
    "resolve_event",
    "resolve_session",
    "session_command",
]


class CliError(click.ClickException):
    """A user's mistake the library has no type for (an ambiguous prefix)."""

    exit_code = 1


#: Commands that may bring a store into being (the first session is
#: written there). Every other command needs one that exists already:
#: opening a file or SQLite store creates it, so they check first.
CREATING_COMMANDS = frozenset({"new", "import", "serve"})


class App:
    """The global options, and the Store they describe (made on first use).

    ``creates``: whether the command may create the store. A command that
    may not, given a file or SQLite store that is not there, works on an
    empty store kept in memory instead (so it answers as for an empty
    store: no sessions, "no session 'x'"), creates nothing, and names
    ``missing`` in its output (see ``cli/__init__``)."""

    def __init__(self, home: str | None, durability: str, *, creates: bool = True) -> None:
        self.home = home
        self.durability = durability
        self.creates = creates
        #: Where the store named would be, when it is not there (and not created).
        self.missing: str | None = None
        #: Whether the command's own output already said so.
        self.missing_said = False
        self._store: Store | None = None

    @property
    def opened(self) -> bool:
        """Whether the store was opened (an error after it is about what it holds)."""
        return self._store is not None

    @property
    def store(self) -> Store:
        if self._store is None:
            where = None if self.creates else missing_store(self.home)
            if where is not None:
                self.missing = where
                self._store = Store("memory:", durability=self.durability)
            else:
                self._store = Store(self.home, durability=self.durability)
        return self._store

    def open(self, session: str, *, write: bool = False) -> Session:
        """Open the session a ref names (see refs.py); read-only unless ``write``."""
        sid = resolve_session(self.store, session)
        return self.store.open(sid, readonly=not write)


pass_app = click.make_pass_decorator(App)


def needs(requires: str, *options: tuple[str, str]) -> None:
    """A usage error when one of ``options`` ((shown name, parameter name))
    was given without the flag ``requires``, which the caller found absent:
    an option that would be ignored is a mistake to say, not to swallow."""
    ctx = click.get_current_context()
    for shown_name, param in options:
        if ctx.get_parameter_source(param) not in (None, click.core.ParameterSource.DEFAULT):
            raise click.UsageError(f"{shown_name} needs {requires}")


def emit_json(document: Any) -> None:
    """Print one JSON document on stdout (the machine output of --json)."""
    write_stdout(dumps_json(document, indent=True).decode() + "\n")


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
