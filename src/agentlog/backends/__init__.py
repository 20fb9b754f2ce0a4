"""Storage backends behind one narrow interface (see base.py)."""

from .base import Backend, Draft, IndexEntry, Problem, SessionStats, SessionStorage
from .files import FileBackend
from .memory import MemoryBackend

__all__ = [
    "Backend",
    "Draft",
    "FileBackend",
    "IndexEntry",
    "MemoryBackend",
    "Problem",
    "SessionStats",
    "SessionStorage",
]
