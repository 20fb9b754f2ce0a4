"""A file session's sidecars: named files in its ``artifacts/`` directory,
each replaced atomically, beside the log and outside it."""

from __future__ import annotations

import os
import stat

from ...errors import InvalidName
from ...event import check_sidecar_name
from .session_base import FileSessionBase

__all__ = ["FileSidecars"]


class FileSidecars(FileSessionBase):
    """Sidecars and the artifacts directory that holds them."""

    # --- sidecars ----------------------------------------------------------
    def write_sidecar(self, name: str, data: bytes | None) -> None:
        """Replace (or with None remove) ``artifacts/<name>`` atomically."""
        self._check_writable()
        directory = self.layout.artifacts(self.session_id)
        path = os.path.join(directory, check_sidecar_name(name))
        if data is None:
            if self.fs.exists(path):
                self.fs.unlink(path)
                if self.durable:
                    self.fs.fsync_dir(directory)
            return
        if not self.fs.exists(directory):
            self.fs.mkdir(directory)
            if self.durable:
                self.fs.fsync_dir(self.dir)
        self.fs.write_atomic(path, data, durable=self.durable)

    def read_sidecar(self, name: str) -> bytes | None:
        path = os.path.join(self.layout.artifacts(self.session_id), check_sidecar_name(name))
        if not self.fs.exists(path):
            return None
        return self.fs.read_file(path)

    def sidecar_names(self) -> list[str]:
        directory = self.layout.artifacts(self.session_id)
        if not self.fs.exists(directory):
            return []
        names = []
        for name in sorted(self.fs.listdir(directory)):
            # artifacts_dir is also the session's directory for its own files:
            # a subdirectory, or a name read_sidecar refuses ("my notes.md"),
            # is not a sidecar (copy would fail on it, reading it as one).
            try:
                check_sidecar_name(name)
            except InvalidName:
                continue  # not a sidecar's name (the comment above): left where it is
            if stat.S_ISREG(self.fs.stat(os.path.join(directory, name)).st_mode):
                names.append(name)
        return names

    def artifacts_dir(self) -> str | None:
        return self.layout.artifacts(self.session_id)
