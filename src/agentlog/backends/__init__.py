"""Storage backends behind one narrow seam (see base.py and docs/architecture.md)."""

from .base import (
    Backend,
    BlobCopy,
    Commit,
    IndexEntry,
    Problem,
    SessionStats,
    SessionStorage,
    StagedEvent,
    Ticket,
)
from .files import FileBackend
from .memory import MemoryBackend
from .registry import open_backend

__all__ = [
    "Backend",
    "BlobCopy",
    "Commit",
    "FileBackend",
    "IndexEntry",
    "MemoryBackend",
    "Problem",
    "SessionStats",
    "SessionStorage",
    "StagedEvent",
    "Ticket",
    "open_backend",
]
