"""Small named files kept with a session (sidecars): the unsent draft is
one; and the directory for the session's own files."""

from __future__ import annotations

from ..errors import CorruptionError, InvalidEvent, InvalidName
from ..event import check_sidecar_name
from .base import SessionBase

__all__ = ["SessionSidecars"]


class SessionSidecars(SessionBase):
    """Sidecars, the draft among them, and the artifacts directory."""

    def read_sidecar(self, name: str) -> bytes | None:
        """A small named file kept with the session, or None."""
        self._check_open()
        return self.storage.read_sidecar(check_sidecar_name(name))

    def write_sidecar(self, name: str, data: bytes | None) -> None:
        """Replace (atomically) or with None remove a small named file."""
        self._check_writable()
        name = check_sidecar_name(name)
        if data is not None and not isinstance(data, bytes | bytearray | memoryview):
            # Checked here, once for every backend (one took a str, one made
            # bytes(5) of an int).
            raise InvalidName(f"sidecar {name!r}: its data must be bytes or None, not {type(data).__name__}")
        with self._timeline.meta_lock:  # one write at a time, whichever handle of the session
            self.storage.write_sidecar(name, None if data is None else bytes(data))

    def draft(self) -> str | None:
        """Unsent user text saved with ``set_draft``, if any."""
        data = self.read_sidecar("draft.txt")
        if data is None:
            return None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CorruptionError(f"session {self.id} draft.txt", exc.start, f"not UTF-8: {exc.reason}") from None

    def set_draft(self, text: str | None) -> None:
        """Save (atomically) or with None clear the unsent user text."""
        if text is None:
            self.write_sidecar("draft.txt", None)
            return
        if not isinstance(text, str):
            raise InvalidEvent(f"a draft is text, not {type(text).__name__}")
        try:
            data = text.encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate: not text any reader could show
            raise InvalidEvent(f"draft is not valid Unicode text at character {exc.start}: {exc.reason}") from None
        self.write_sidecar("draft.txt", data)

    @property
    def artifacts_dir(self) -> str | None:
        """The directory for this session's own files (file backend)."""
        self._check_open()
        return self.storage.artifacts_dir()
