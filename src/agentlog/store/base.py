"""What every part of a ``Store`` stands on: its backend and blob policy,
what the store is (URL, home, durability), and the plain questions about
one session (does it exist, its metadata, is it open for writing here).

``Store`` is made of one class per concern (creating and opening
sessions, listing, ``--continue``, checking), each deriving from
``StoreBase`` and from the parts it calls, so that a type checker sees
every method a part uses."""

from __future__ import annotations

import os
from typing import Any

from .._writers import WRITERS
from ..backends.base import DEFAULT_BLOB_THRESHOLD, MAX_BLOB_THRESHOLD, Backend
from ..backends.registry import open_backend
from ..errors import InvalidOption, SessionLocked
from ..event import check_session_id
from .locations import default_location

__all__ = ["StoreBase"]


class StoreBase:
    """A store's backend and blob threshold, its identity, and the checks
    on one session that every part makes."""

    def __init__(
        self,
        home: str | os.PathLike[str] | None = None,
        durability: str = "full",
        *,
        backend: Backend | None = None,
        blob_threshold: int = DEFAULT_BLOB_THRESHOLD,
        **backend_options: Any,
    ) -> None:
        # Checked before a backend is opened, so a bad value changes nothing.
        if type(blob_threshold) is not int or not 0 <= blob_threshold <= MAX_BLOB_THRESHOLD:
            raise InvalidOption(
                f"blob_threshold must be a whole number of bytes from 0 to {MAX_BLOB_THRESHOLD:,}, "
                f"not {blob_threshold!r}"
            )
        if backend is None:
            location = home if home is not None else default_location()
            backend = open_backend(location, durability=durability, **backend_options)
        self.backend = backend
        self.blob_threshold = blob_threshold

    @property
    def url(self) -> str:
        return self.backend.url

    @property
    def home(self) -> str:
        """The store's directory where it has one (file backend), else its URL."""
        return self.backend.home or self.backend.url

    @property
    def durability(self) -> str:
        return self.backend.durability

    def exists(self, session_id: str) -> bool:
        return self.backend.exists(check_session_id(session_id))

    def meta(self, session_id: str) -> dict[str, Any]:
        return self.backend.read_meta(check_session_id(session_id))

    def _not_open_here(self, session_id: str) -> None:
        if WRITERS.is_open(self.url, check_session_id(session_id)):
            # Its writer would lose its next acknowledged append.
            raise SessionLocked(session_id, f"pid {os.getpid()} (this process)")
