"""The ``agentlog`` command line.

Each command group is one module exposing ``COMMANDS``; registering a new
command is adding it to its module's ``COMMANDS`` and to ``COMMAND_MODULES``
below, which tests/test_cli_lazy.py holds to them. Every failure a user can
cause (an AgentlogError, a usage error, an OS error) leaves as one line on
stderr, ``agentlog: error: ...``, with exit status 2 for usage errors and 1
otherwise. See docs/cli.md.
"""

from __future__ import annotations

import errno
import importlib
import logging
import os
import re
import sys
import warnings
from typing import Any

import click

from .. import __version__
from ..errors import AgentlogError, CorruptionError, RecoveryWarning
from .common import CREATING_COMMANDS, App
from .location import shown, store_location

__all__ = ["COMMAND_MODULES", "all_commands", "main"]

#: Every command, by the module of this package that defines it. A
#: command's module is imported only when that command runs, shows its
#: help or completes its arguments, so that `agentlog ls` (or a Tab press
#: after a command's name) does not load the importers, the exporters,
#: fsck and the progress bars: start-up time is paid on every command
#: (docs/performance.md, "CLI start-up"). Completing a command's name
#: loads the modules of the names that match, for their help lines.
COMMAND_MODULES: dict[str, str] = {
    **dict.fromkeys(["ls", "new"], "sessions"),
    **dict.fromkeys(["append", "log", "tree", "show", "checkout", "context"], "events"),
    **dict.fromkeys(["fork", "compact", "archive", "unarchive", "rename", "label", "continue", "rm"], "verbs"),
    "search": "search",
    "export": "transfer",
    "import": "imports",
    **dict.fromkeys(["gc", "prune", "du", "stats"], "housekeeping"),
    "fsck": "check",
    "copy": "copying",
    "serve": "serve",
}

#: Set to see the traceback of an unexpected failure (a bug in agentlog).
DEBUG_ENV = "AGENTLOG_DEBUG"


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


#: The App of the command running (one per invocation), so that what is
#: printed at the end can say that the store named does not exist.
_APPS: list[App] = []


def _missing_note() -> str:
    """ " (no store at X: ...)" when the command ran on a store that is not there."""
    where = _APPS[-1].missing if _APPS else None
    return f" (and there is no store at {shown(where)}; nothing was created)" if where else ""


#: A byte that was not UTF-8, as a message's repr() of an argument spelled
#: it (the surrogate escape Python decoded it to).
_ESCAPED_BYTE = re.compile(r"\\udc([89a-f][0-9a-f])")


def _fail(message: str, code: int) -> int:
    # A typed value that was not UTF-8 is shown as Python shows bytes
    # ('lat\xe9'), whether a message holds it raw or as its repr.
    text = _ESCAPED_BYTE.sub(r"\\x\1", shown(str(message)))
    click.echo(f"agentlog: error: {_one_line(text)}{_missing_note()}", err=True)
    return code


def _show_warning(
    message: Any, category: type, filename: str, lineno: int, file: Any = None, line: str | None = None
) -> None:
    click.echo(f"agentlog: warning: {_one_line(shown(str(message)))}", err=True)


class AgentlogGroup(click.Group):
    """A group whose ``main`` turns every expected failure into one line,
    and which loads a command's module when the command is first asked for."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(set(COMMAND_MODULES) | set(self.commands))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        module_name = COMMAND_MODULES.get(cmd_name)
        if module_name is not None and cmd_name not in self.commands:
            self._load(module_name)
        return super().get_command(ctx, cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        if args and args[0] not in COMMAND_MODULES:
            # Not a command: click's "No such command" suggests the nearest
            # names among the commands it holds, so it is given them all.
            for module_name in set(COMMAND_MODULES.values()):
                self._load(module_name)
        return super().resolve_command(ctx, args)

    def _load(self, module_name: str) -> None:
        module = importlib.import_module(f"{__name__}.{module_name}")
        for command in module.COMMANDS:
            self.add_command(command)

    def main(
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        # psycopg logs a pipeline it could not end (a connection lost in a
        # commit) through its logger; with no logging set up Python printed
        # it raw, lines before the one-line typed error that says the same.
        logging.getLogger("psycopg").addHandler(logging.NullHandler())
        with warnings.catch_warnings():
            # What opening a session repaired is news for the user, never an
            # error, whatever -W or PYTHONWARNINGS say.
            warnings.filterwarnings("always", category=RecoveryWarning)
            warnings.showwarning = _show_warning
            code = self._run(args, prog_name or "agentlog", complete_var, extra)
        sys.exit(code)

    def _run(self, args: Any, prog_name: str, complete_var: str | None, extra: dict[str, Any]) -> int:
        _APPS.clear()
        try:
            rv = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
            app = _APPS[-1] if _APPS else None
            if app is not None and app.missing and not app.missing_said:
                click.echo(
                    f"agentlog: warning: there is no store at {shown(app.missing)}: "
                    "nothing is stored there, and nothing was created (check --home or --store)",
                    err=True,
                )
            return rv if isinstance(rv, int) else 0
        except click.exceptions.NoArgsIsHelpError as exc:
            click.echo(exc.ctx.get_help())
            return 0
        except click.UsageError as exc:
            hint = ""
            if exc.ctx is not None:
                hint = f" (see '{exc.ctx.command_path} --help')"
            return _fail(exc.format_message() + hint, exc.exit_code)
        except click.ClickException as exc:
            return _fail(exc.format_message(), exc.exit_code)
        except click.Abort:
            return _fail("aborted", 1)
        except CorruptionError as exc:
            # Damage in a store that opened is news the user can act on:
            # fsck says what else is damaged, --repair keeps every intact
            # event. (A store that does not open, a file that is no
            # database, is nothing fsck can check.)
            said = str(exc)
            opened = bool(_APPS) and _APPS[-1].opened
            return _fail(f"{said}; see 'agentlog fsck'" if opened and "fsck" not in said else said, 1)
        except AgentlogError as exc:
            return _fail(str(exc), 1)
        except OSError as exc:
            if exc.errno == errno.EPIPE:
                return 1  # the reader went away (`agentlog log S | head`): say nothing
            where = f": {exc.filename}" if exc.filename else ""
            return _fail(f"{exc.strerror or exc}{where}", 1)
        except Exception as exc:
            if os.environ.get(DEBUG_ENV):
                raise
            return _fail(f"internal error: {type(exc).__name__}: {exc} (set {DEBUG_ENV}=1 to see the traceback)", 1)


@click.group(cls=AgentlogGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--home",
    type=click.Path(file_okay=False),
    envvar="AGENTLOG_HOME",
    show_envvar=True,
    metavar="DIR",
    help="The store's home directory. Default: $XDG_DATA_HOME/agentlog, else ~/.local/share/agentlog.",
)
@click.option(
    "--store",
    "store_url",
    envvar="AGENTLOG_STORE",
    show_envvar=True,
    metavar="URL",
    help="The store as a URL: file:///dir, sqlite:///file.db, memory:, or another "
    "installed backend's scheme. Typed with --home, an error; a typed one wins over the "
    "other's variable, and $AGENTLOG_STORE over $AGENTLOG_HOME.",
)
@click.option(
    "--durability",
    type=click.Choice(["full", "off"]),
    default="full",
    show_default=True,
    help="'full' syncs every append to disk before acknowledging it; "
    "'off' leaves that to the OS (faster, loses the tail on power loss).",
)
@click.version_option(__version__, prog_name="agentlog")
@click.pass_context
def main(ctx: click.Context, home: str | None, store_url: str | None, durability: str) -> None:
    """agentlog: a durable, navigable event timeline for AI agent sessions.

    Sessions and events can be named by the short id printed (or its
    start), a unique prefix of their id, or (sessions) their name. Every
    command takes --json for one JSON document on stdout."""
    creates = ctx.invoked_subcommand in CREATING_COMMANDS
    location = store_location(ctx, home, store_url)
    if location is not None and location.lower() == "memory:" and ctx.invoked_subcommand not in ("serve", None):
        # It acknowledged writes that were gone when the command ended. (A
        # named memory:NAME is one store for the life of the process, which
        # a program running commands in-process, its tests, may share.)
        click.echo(
            "agentlog: warning: a memory: store lives only as long as this command, and keeps nothing "
            "after it (it is for 'agentlog serve' and tests)",
            err=True,
        )
    ctx.obj = App(location, durability, creates=creates)
    _APPS.append(ctx.obj)


def all_commands() -> dict[str, click.Command]:
    """Every command by name, each module loaded (for the reference docs
    and the tests; the command line itself loads them one at a time)."""
    with click.Context(main) as ctx:
        commands = {name: main.get_command(ctx, name) for name in main.list_commands(ctx)}
    return {name: command for name, command in commands.items() if command is not None}
