"""Which store the global options name: --store or --home (or their
environment variables). Shared by the commands and by shell completion,
so that completing a ref offers the sessions of the store the command
will use.

Opening a file or SQLite store creates it, which only the commands that
write a new session may do: ``missing_store`` tells the others that a
store is not there (a typo in --home must not leave a new empty store
behind, and must not read as "no sessions")."""

from __future__ import annotations

import os

import click

from ..backends.registry import canonical_url, check_local_url, local_path, missing_at, scheme_of
from ..store import default_location

__all__ = ["NoStore", "missing_store", "shown", "store_location"]


class NoStore(click.ClickException):
    """A command that only reads (or changes a session that must exist)
    named a store that does not exist: nothing was created."""

    exit_code = 1

    def __init__(self, where: str) -> None:
        super().__init__(
            f"no store at {shown(where)}: nothing is stored there (check --home or --store; "
            "'agentlog new' or 'agentlog import' creates a store)"
        )
        self.where = where


def shown(text: str) -> str:
    """``text`` (a path) as every message shows it: bytes that are not
    UTF-8 (which arrive as lone surrogates) as ``\\xe9``, as Python shows
    bytes, rather than as the surrogate's own escape."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def store_location(ctx: click.Context, home: str | None, store_url: str | None) -> str | None:
    """--store or --home: one typed on the command line wins over one from
    the environment; both typed is a mistake, and so is an empty one (an
    unset variable in a script) rather than the default store."""
    for name, value in (("--store", store_url), ("--home", home)):
        if value is not None and not value.strip():
            raise click.UsageError(f"{name} is empty: give a store, or leave {name} out for the default one")
    if home is None and store_url is None:
        # click reads a variable set to "" as unset, which would mean the
        # default store: `AGENTLOG_HOME=$SCRATCH agentlog rm --yes ...` with
        # SCRATCH unset must not reach it, any more than `--home ""` does.
        for variable in ("AGENTLOG_STORE", "AGENTLOG_HOME"):
            if variable in os.environ and not os.environ[variable].strip():
                raise click.UsageError(f"${variable} is set but empty: give a store, or unset it for the default one")
    if home is None or store_url is None:
        return store_url or home
    typed = {
        name
        for name in ("home", "store_url")
        if ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE
    }
    if typed == {"home", "store_url"}:
        raise click.UsageError("give --store or --home, not both")
    return home if typed == {"home"} else store_url


def missing_store(location: str | None) -> str | None:
    """The path a file or SQLite store would have, or the URL of a server's
    store (its backend's ``missing_at``), when nothing is there yet; None
    when it is there, when only opening can tell (memory:), or when opening
    would fail anyway (a file in the way), which then says why. Parsed as
    the backends parse their URLs."""
    url = canonical_url(location or default_location())
    scheme = scheme_of(url)
    # A host, query or fragment a local URL would drop is refused, store or
    # no store (``file:///tmp?x=1`` is not "no store at /tmp").
    check_local_url(scheme, url)
    if scheme == "file":
        path = local_path("file", url)
        # A home is a directory holding sessions/ (every store has one):
        # an existing directory without it is not a store either.
        if not path or os.path.isdir(os.path.join(path, "sessions")):
            return None
        return _creatable(path)
    if scheme == "sqlite":
        path = local_path("sqlite", url)
        return None if not path or os.path.exists(path) else _creatable(path)
    # A server's store (PostgreSQL): its backend looks without creating one.
    return missing_at(url)


def _creatable(path: str) -> str | None:
    """``path`` made absolute, unless something that is not a directory
    stands where it or a parent would be (opening then fails, as it should)."""
    path = os.path.abspath(path)
    at = path
    while not os.path.lexists(at):
        at = os.path.dirname(at)
    return path if os.path.isdir(at) else None
