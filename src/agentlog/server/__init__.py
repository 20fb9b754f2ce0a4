"""``agentlog serve``: the HTTP API, live SSE streams and the web viewer.

Needs the ``server`` extra (``pip install 'agentlog[server]'``); the core
package never imports this one. See docs/server.md.
"""

from .app import create_app
from .publisher import RemoteHub

__all__ = ["RemoteHub", "create_app"]
