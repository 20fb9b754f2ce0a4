"""``agentlog serve``: the HTTP API, live SSE streams and the web viewer.

Needs the ``server`` extra (``pip install 'agentlog[server]'``); the core
package never imports this one. See docs/server.md.
"""

try:
    from .app import create_app
    from .publisher import RemoteHub
except ModuleNotFoundError as exc:
    if exc.name is None or exc.name.partition(".")[0] == "agentlog":
        raise  # ours, not the extra's: as it is
    from .._extras import extra_missing

    raise extra_missing(exc, extra="server", module=__name__) from exc

__all__ = ["RemoteHub", "create_app"]
