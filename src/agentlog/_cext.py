"""The optional C extension, ``agentlog._speedups``, loaded once.

It holds the whole-path read's inner loop (``backends/files/pathread.py``),
the index slot packer (``backends/files/index.py``) and the log line
framer (``backends/files/lines.py``). Each has a Python
twin that stays the reference and runs where the extension is None: not
built (an install without a C compiler), built from another version of
agentlog, or turned off with ``AGENTLOG_PURE_PYTHON=1``.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

__all__ = ["speedups"]

#: The interface this version calls (``ABI`` in _speedups.c).
ABI = 3


def _load() -> Any:
    if os.environ.get("AGENTLOG_PURE_PYTHON"):
        return None
    try:
        from . import _speedups  # type: ignore[attr-defined]
    except ImportError:
        return None
    if getattr(_speedups, "ABI", None) != ABI:
        # an in-place build older or newer than this file (a `git pull`
        # that did not rebuild it): called wrongly it would fail, or worse
        warnings.warn(
            "agentlog._speedups was built from another version of agentlog; the Python code runs "
            "(reinstall agentlog to rebuild it)",
            RuntimeWarning,
            stacklevel=2,
        )
        return None
    return _speedups


speedups: Any = _load()
