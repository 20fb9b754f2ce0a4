"""Shell completion of session refs and event refs (bash, zsh, fish).

click generates the shell side (``_AGENTLOG_COMPLETE=bash_source
agentlog``, see docs/cli.md); these functions supply the values: session
short ids and names, and for an event HEAD, the session's labels and
event short ids. Completion must never fail loudly, so any error yields
no suggestions.
"""

from __future__ import annotations

import os
import shlex

import click
from click.shell_completion import CompletionItem

from ..errors import AgentlogError
from ..shortid import short_ids
from ..store import Store
from .location import NoStore, missing_store, store_location
from .refs import labels_of, resolve_session

__all__ = ["complete_event", "complete_session"]

_MAX = 200


def _store(ctx: click.Context) -> Store:
    """The store the command being completed will use: --store or --home
    from its line, else their environment variables (click has read them
    into the root's params)."""
    root = ctx.find_root()
    location = store_location(root, root.params.get("home"), root.params.get("store_url"))
    where = missing_store(location)
    if where is not None:
        raise NoStore(where)  # completing a word never creates a store
    return Store(location)


def complete_session(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    try:
        infos = _store(ctx).list(archived=True)
    except (AgentlogError, OSError, click.ClickException):
        # No store, an unreadable one, or both --store and --home typed:
        # nothing to offer, and no noise in the middle of a command line.
        return []
    shorts = short_ids([i.id for i in infos])
    items = []
    for info in infos[:_MAX]:
        # zsh and fish print the help beside each value as it comes: a
        # title holding ESC sequences would retitle or clear the terminal.
        title = info.title or ""
        help_text = title if title.isprintable() else ""
        for value in (shorts[info.id], info.meta.get("name")):
            if isinstance(value, str) and value.startswith(incomplete) and value.isprintable():
                # A name with a control character is left out: the shell
                # would list it raw, and a newline splits click's reply.
                items.append(CompletionItem(_as_typed(value), help=help_text))
    return items


def _as_typed(value: str) -> str:
    """``value`` as the shell must insert it. bash inserts what it is given
    as it is (click's script adds no quoting), so a name with a space or a
    parenthesis ("fix calc (fork)", as the demo names one) broke the
    command; it gets shell quotes. zsh and fish quote what they insert."""
    if os.environ.get("_AGENTLOG_COMPLETE", "").startswith("bash"):
        return shlex.quote(value)
    return value


def complete_event(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    ref = ctx.params.get("session")
    values = ["HEAD"]
    if isinstance(ref, str):
        try:
            store = _store(ctx)
            with store.open(resolve_session(store, ref), readonly=True) as session:
                labels = labels_of(session.meta)
                values += sorted(labels)
                entries = session.entries()
                newest = [e.id for e in reversed(entries[-_MAX:])]
                shorts = short_ids([e.id for e in entries], only=newest)
                values += [shorts[i] for i in newest]
        except (AgentlogError, OSError, click.ClickException):
            pass  # an unknown session (or store): HEAD is still a fair suggestion
    return [CompletionItem(v) for v in values if v.startswith(incomplete)]
