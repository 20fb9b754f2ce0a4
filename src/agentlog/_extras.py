"""What a module of an optional extra says when its packages are missing.

Without it, ``import agentlog.integrations.adk`` ended in "No module named
'google'", which points at an unrelated package on PyPI; the CLI already
named the extra to install (``agentlog serve``, a ``postgresql://`` store,
``--redact``)."""

from __future__ import annotations

__all__ = ["extra_missing"]


def extra_missing(exc: ModuleNotFoundError, *, extra: str, module: str) -> ModuleNotFoundError:
    """The error to raise from ``exc`` (a framework's import that failed) in
    ``module``, which needs the extra ``extra``. Still a ModuleNotFoundError,
    naming the same missing module, so code that catches one still does."""
    return ModuleNotFoundError(
        f"{module} needs the '{extra}' extra (missing: {exc.name}): pip install 'agentlog[{extra}]'",
        name=exc.name,
    )
