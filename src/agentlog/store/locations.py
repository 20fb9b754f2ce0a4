"""Where a store is when none is named: ``$AGENTLOG_STORE``, else the
file store at ``default_home()``."""

from __future__ import annotations

import os

__all__ = ["default_home", "default_location"]


def default_location() -> str:
    """``$AGENTLOG_STORE`` (a store URL), else ``default_home()``."""
    return os.environ.get("AGENTLOG_STORE") or default_home()


def default_home() -> str:
    """``$AGENTLOG_HOME``, else ``$XDG_DATA_HOME/agentlog`` (an absolute path
    only, as the XDG spec says), else ~/.local/share/agentlog."""
    env = os.environ.get("AGENTLOG_HOME")
    if env:
        return env
    xdg = os.environ.get("XDG_DATA_HOME", "")
    if not os.path.isabs(xdg):
        # The XDG spec: a relative path there is invalid and is ignored (it
        # made the default store move with the current directory).
        xdg = os.path.join(os.path.expanduser("~"), ".local", "share")
    return os.path.join(xdg, "agentlog")
