"""The embedded default backend (directories, chunk logs, blobs)."""

from .backend import FileBackend

__all__ = ["FileBackend"]
