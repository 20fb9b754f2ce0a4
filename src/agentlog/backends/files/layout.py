"""Where each file of the embedded store lives (see docs/format.md)."""

from __future__ import annotations

import os

from ...event import check_session_id

__all__ = ["Layout"]


class Layout:
    """Paths under a store's home. Session ids are validated before use."""

    def __init__(self, home: str) -> None:
        self.home = os.path.abspath(home)
        self.sessions = os.path.join(self.home, "sessions")
        self.locks = os.path.join(self.home, "locks")
        self.breadcrumbs = os.path.join(self.home, "breadcrumbs")

    def session_dir(self, session_id: str) -> str:
        return os.path.join(self.sessions, check_session_id(session_id))

    def chunks(self, session_id: str) -> str:
        return os.path.join(self.session_dir(session_id), "chunks")

    def blobs(self, session_id: str) -> str:
        return os.path.join(self.session_dir(session_id), "blobs")

    def index(self, session_id: str) -> str:
        return os.path.join(self.session_dir(session_id), "index.bin")

    def legacy_index(self, session_id: str) -> str:
        """Format version 1's index (512-byte JSON lines), replaced by ``index``."""
        return os.path.join(self.session_dir(session_id), "index.jsonl")

    def meta(self, session_id: str) -> str:
        return os.path.join(self.session_dir(session_id), "session.json")

    def head(self, session_id: str) -> str:
        return os.path.join(self.session_dir(session_id), "HEAD")

    def artifacts(self, session_id: str) -> str:
        return os.path.join(self.session_dir(session_id), "artifacts")


def chunk_name(number: int) -> str:
    return f"{number:06d}.jsonl"


def parse_chunk_name(name: str) -> int | None:
    stem, dot, ext = name.partition(".")
    if ext != "jsonl" or len(stem) != 6 or not stem.isdigit():
        return None
    return int(stem)
