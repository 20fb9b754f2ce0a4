"""Which files an import reads: the paths given, or the tool's own place."""

from __future__ import annotations

import os

from .base import Importer
from .model import NoSourceFiles, SourceNotFound

__all__ = ["expand_paths"]


def expand_paths(importer: Importer, paths: list[str] | tuple[str, ...], *, allow_empty: bool = False) -> list[str]:
    """Files to read: each file given, each directory's files of the format,
    or, with no paths, the tool's default locations. A directory given that
    holds none is an error, unless ``allow_empty`` (``--follow``, which
    waits for the files to appear)."""
    roots = [os.path.expanduser(p) for p in paths] or [r for r in importer.default_roots() if os.path.isdir(r)]
    if not paths and not roots:
        missing = " or ".join(importer.default_roots())
        raise SourceNotFound(f"{missing} (the default location of {importer.name} sessions)")
    files: list[str] = []
    for root in roots:
        if os.path.isdir(root):
            found = importer.discover(root)
            if paths and not found and not allow_empty:
                raise NoSourceFiles(root, importer.name, importer.pattern)
            files.extend(found)
        elif os.path.isfile(root):
            files.append(root)
        elif os.path.exists(root):  # a device, a FIFO: not read as a session file
            raise SourceNotFound(root, "not a regular file or a directory")
        else:
            raise SourceNotFound(root)
    seen: set[str] = set()
    unique = []
    for f in files:
        real = os.path.realpath(f)
        if real not in seen:
            seen.add(real)
            unique.append(os.path.abspath(f))
    return unique
