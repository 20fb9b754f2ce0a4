"""Session ids for names that frameworks choose freely.

Frameworks name sessions and threads with any string; agentlog session ids
are ``[A-Za-z0-9_-]{1,128}`` (they become paths, invariant 8). One rule,
used by every adapter:

- a name that is a valid id and contains no ``--`` is kept, after
  ``prefix--`` when there is a prefix, so the session is easy to find in
  ``agentlog ls``;
- any other name (or a name made of several parts) becomes
  ``prefix--h--<sha256 of its UTF-8 bytes, 40 hex>`` (``h--<digest>`` without
  a prefix). A kept name never contains ``--``, so the two forms never collide.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["session_key"]

_PLAIN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_-]{0,127}\Z")


def session_key(prefix: str, *parts: str) -> str:
    """The agentlog session id for a framework's name made of ``parts``."""
    if len(parts) == 1 and "--" not in parts[0] and _PLAIN.match(parts[0]):
        candidate = f"{prefix}--{parts[0]}" if prefix else parts[0]
        if len(candidate) <= 128:
            return candidate
    # The unit separator keeps ("a", "b c") and ("a b", "c") apart.
    joined = "\x1f".join(parts)
    digest = hashlib.sha256(joined.encode("utf-8")).hexdigest()[:40]
    return f"{prefix}--h--{digest}" if prefix else f"h--{digest}"
