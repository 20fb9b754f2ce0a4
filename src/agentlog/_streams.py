"""Writing whole outputs to streams that may close under us (a pipe)."""

from __future__ import annotations

import errno
import sys
from typing import Protocol

__all__ = ["write_all", "write_stdout"]


class _BinaryOut(Protocol):
    def write(self, data: memoryview, /) -> int | None: ...


def write_all(out: _BinaryOut, data: bytes) -> int:
    """Write every byte of ``data`` to ``out``, or raise.

    CPython's buffered writer, handed one large buffer, may write part of
    it and return that count without raising when the pipe then closes
    (EPIPE): a caller that ignores the count takes a reader that went
    away (``agentlog log S | head``) for success, and exits 0. Writing
    the rest raises the error."""
    view = memoryview(data)
    while view:
        n = out.write(view)
        if not n:  # nothing taken: the stream cannot go on
            raise BrokenPipeError(errno.EPIPE, "the output stopped taking bytes")
        view = view[n:]
    return len(data)


def write_stdout(text: str) -> None:
    """``text`` on stdout, every byte of it or an error (see ``write_all``)."""
    out = sys.stdout
    binary = getattr(out, "buffer", None)
    if binary is None:  # a text-only stand-in (a test's capture): it takes str whole
        out.write(text)
        return
    out.flush()
    write_all(binary, text.encode("utf-8"))
    binary.flush()
