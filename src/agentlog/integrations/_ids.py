"""Session ids for names that frameworks choose freely.

Frameworks name sessions and threads with any string; agentlog session ids
are ``[A-Za-z0-9_-]{1,128}`` (they become paths, invariant 8). One rule,
used by every adapter:

- a name that is a valid id and contains no ``--`` is kept, after
  ``prefix--`` when there is a prefix, so the session is easy to find in
  ``agentlog ls``;
- any other name (or a name made of several parts) becomes
  ``prefix--h--<the first 40 hex digits of the sha256 of its UTF-8 bytes>``
  (``h--<digest>`` without a prefix; several parts are joined by U+001F
  first): 160 bits, far beyond any collision, and existing stores depend
  on this exact form. A kept name never contains ``--``, so the two forms
  never collide;
- a name with no UTF-8 form (a lone surrogate) is refused with
  ``InvalidSessionId``.
"""

from __future__ import annotations

import hashlib
import re

from ..errors import InvalidSessionId

__all__ = ["session_key"]

_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,127}\Z")


def session_key(prefix: str, *parts: str) -> str:
    """The agentlog session id for a framework's name made of ``parts``."""
    for part in parts:
        if not isinstance(part, str):
            # A framework names sessions with text; an int or None here was
            # a TypeError from deep inside (``"--" in 123``).
            raise InvalidSessionId(part, f"a session name must be a string, not {type(part).__name__}")
    if len(parts) == 1 and "--" not in parts[0] and _PLAIN.match(parts[0]):
        candidate = f"{prefix}--{parts[0]}" if prefix else parts[0]
        if len(candidate) <= 128:
            return candidate
    # The unit separator keeps ("a", "b c") and ("a b", "c") apart.
    joined = "\x1f".join(parts)
    try:
        data = joined.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate has no UTF-8 form, so no digest names it: refused
        # before anything is written, naming the part that holds it.
        bad = next(p for p in parts if not _encodes(p))
        raise InvalidSessionId(bad, "a name holding a lone surrogate has no UTF-8 form") from None
    digest = hashlib.sha256(data).hexdigest()[:40]
    return f"{prefix}--h--{digest}" if prefix else f"h--{digest}"


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
