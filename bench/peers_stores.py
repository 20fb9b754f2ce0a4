"""The stores compared by ``make bench-peers``, in the order the tables show them."""

from __future__ import annotations

from .peers_agentlog import AgentlogPeer
from .peers_files import JsonlPeer, WholeJsonPeer
from .peers_langgraph import LangGraphPeer
from .peers_peer import Peer
from .peers_sdk import SdkPeer


def all_peers() -> list[Peer]:
    return [
        AgentlogPeer("file"),
        AgentlogPeer("sqlite"),
        AgentlogPeer("postgresql"),
        AgentlogPeer("memory"),
        SdkPeer(),
        SdkPeer(advanced=True),
        LangGraphPeer(),
        JsonlPeer(fsync=False),
        JsonlPeer(fsync=True),
        WholeJsonPeer(),
    ]


def rss_only() -> list[Peer]:
    """Browse variants measured only for peak RSS."""
    return [SdkPeer(browse_limit=True)]


def append_only() -> list[Peer]:
    """Layouts measured only by the 8-writer figure."""
    return [AgentlogPeer("file", session_each=True)]


def by_key(key: str) -> Peer:
    for peer in all_peers() + rss_only() + append_only():
        if peer.key == key:
            return peer
    raise KeyError(f"no peer {key!r}")
