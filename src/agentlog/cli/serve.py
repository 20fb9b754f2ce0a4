"""``agentlog serve``: the HTTP API and web viewer (the ``server`` extra)."""

from __future__ import annotations

import importlib.util

import click

from .common import App, CliError, emit_json, json_option, pass_app

__all__ = ["COMMANDS"]

_NEEDED = ("starlette", "uvicorn", "sse_starlette", "watchfiles")


def missing_extra() -> str | None:
    """The server's packages that are not installed, or None."""
    missing = [name for name in _NEEDED if importlib.util.find_spec(name) is None]
    return ", ".join(missing) if missing else None


@click.command("serve")
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="Address to bind. Anything but loopback needs a token.",
)
@click.option(
    "--port",
    default=8765,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port to bind (0: any free port).",
)
@click.option(
    "--token",
    envvar="AGENTLOG_TOKEN",
    show_envvar=True,
    default=None,
    help="Bearer token every client must present.",
)
@click.option(
    "--max-body",
    default=8 * 1024 * 1024,
    show_default=True,
    type=click.IntRange(1024, 1 << 30),
    help="Largest request body, in bytes.",
)
@json_option
@pass_app
def serve(app: App, host: str, port: int, token: str | None, max_body: int, as_json: bool) -> None:
    """Serve the store over HTTP: JSON API, live SSE streams, web viewer.

    Prints the viewer's URL (with the token, if any; with --json as one
    JSON document, {"url", "home"}), then serves until interrupted. Binds
    to 127.0.0.1 by default; any other address is refused unless a token
    is set (--token or AGENTLOG_TOKEN). See docs/server.md."""
    missing = missing_extra()
    if missing:
        raise CliError(
            f"agentlog serve needs the 'server' extra (missing: {missing}); "
            "install it with: pip install 'agentlog[server]'"
        )
    # Imported here, not at the top: the server's packages are an optional
    # extra and the rest of the CLI must work without them.
    from ..server.run import run_server
    from ..server.security import is_loopback

    if token is not None and not token.strip():
        raise click.BadParameter("the token is empty", param_hint="'--token'")
    if token is None and not is_loopback(host):
        raise CliError(f"refusing to bind {host} without a token: set --token or AGENTLOG_TOKEN, or bind 127.0.0.1")

    def announce(url: str) -> None:
        if as_json:
            emit_json({"url": url, "home": app.store.home})
        else:
            click.echo(f"agentlog: serving {app.store.home} at {url}")
        click.echo("agentlog: press Ctrl-C to stop", err=True)

    try:
        run_server(app.store, host=host, port=port, token=token, max_body=max_body, announce=announce)
    except KeyboardInterrupt:
        return
    except OSError as exc:
        raise CliError(f"cannot serve on {host}:{port}: {exc.strerror or exc}") from None


COMMANDS = [serve]
