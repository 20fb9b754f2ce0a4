"""Which store the global options name: --store or --home (or their
environment variables). Shared by the commands and by shell completion,
so that completing a ref offers the sessions of the store the command
will use."""

from __future__ import annotations

import click

__all__ = ["store_location"]


def store_location(ctx: click.Context, home: str | None, store_url: str | None) -> str | None:
    """--store or --home: one typed on the command line wins over one from
    the environment; both typed is a mistake."""
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
