"""Backends named by URL, found through the ``agentlog.backends`` entry points.

``file:///path`` (or a plain path), ``memory:``, ``sqlite:///path.db``, and
whatever a third-party package registers: an entry point in the group
``agentlog.backends`` whose name is the URL scheme and whose object is a
``Backend`` class with a ``from_url(url, *, durability, **options)``
classmethod. agentlog's own backends are registered the same way (see
pyproject.toml); the table below only serves a source tree that was never
installed, where no entry-point metadata exists.

``file://`` and ``sqlite://`` URLs take no host (``localhost`` aside), query
or fragment: each is refused with ``UnknownBackend`` here, before any
backend sees it, rather than dropped (``file://data/x`` would be /x).
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable
from importlib import import_module
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from ..errors import InvalidOption, UnknownBackend
from .base import Backend, check_durability

__all__ = ["BackendFactory", "canonical_url", "local_path", "missing_at", "open_backend", "scheme_of"]

GROUP = "agentlog.backends"

_BUILT_IN = {
    "file": "agentlog.backends.files:FileBackend",
    "memory": "agentlog.backends.memory:MemoryBackend",
    "sqlite": "agentlog.backends.sqlite:SqliteBackend",
    "postgresql": "agentlog.backends.postgres:PostgresBackend",
    "postgres": "agentlog.backends.postgres:PostgresBackend",
}


_EXTRAS = {"postgresql": "postgres", "postgres": "postgres"}


class BackendFactory(Protocol):
    def from_url(self, url: str, *, durability: str, **options: Any) -> Backend: ...


def scheme_of(location: str) -> str:
    """The URL scheme of ``location``; a plain path is ``file``."""
    scheme, sep, _ = location.partition(":")
    if not sep or len(scheme) < 2 or not scheme.replace("+", "").replace("-", "").isalnum():
        return "file"  # a path (a one-letter "scheme" is a Windows drive)
    return scheme.lower()


def _imported(load: Callable[[], Any], scheme: str) -> Any:
    """``load()``, with a third-party module missing turned into the extra to install."""
    try:
        return load()
    except ModuleNotFoundError as exc:
        if (exc.name or "").startswith("agentlog"):
            raise  # our own module missing is a bug to see, not an extra to install
        raise UnknownBackend(
            f"the {scheme}: backend needs a package that is not installed ({exc.name}); "
            f"pip install 'agentlog[{_EXTRAS.get(scheme, scheme)}]'"
        ) from None


#: Factories already found, by scheme. Scanning the installed packages'
#: entry points costs milliseconds (every distribution's metadata is read),
#: which every ``Store(...)`` would pay again; a backend installed while a
#: process runs is seen by the next process.
_FOUND: dict[str, BackendFactory] = {}


def _load(scheme: str) -> BackendFactory:
    factory = _FOUND.get(scheme)
    if factory is None:
        factory = _FOUND[scheme] = _find(scheme)
    return factory


def _find(scheme: str) -> BackendFactory:
    # Imported here: importlib.metadata costs tens of milliseconds, which
    # every command paid at start, and only a URL store needs it.
    from importlib.metadata import entry_points

    found = [ep for ep in entry_points(group=GROUP) if ep.name == scheme]
    if found:
        factory: BackendFactory = _imported(found[0].load, scheme)
        return factory
    target = _BUILT_IN.get(scheme)
    if target is None:
        known = sorted({ep.name for ep in entry_points(group=GROUP)} | set(_BUILT_IN))
        raise UnknownBackend(f"no backend serves {scheme}: URLs (installed: {', '.join(known)})")
    module, _, name = target.partition(":")
    built_in: BackendFactory = getattr(_imported(lambda: import_module(module), scheme), name)
    return built_in


#: The schemes that name a path on this machine, and what each names.
_LOCAL = {"file": "directory", "sqlite": "database file"}


def local_path(scheme: str, url: str) -> str:
    """The path a ``file:`` or ``sqlite:`` URL names (``scheme://`` with an
    absolute path, ``scheme:`` with one as written), percent-decoded; a
    plain path as it is; "" when it names none. The one reading of these
    URLs, for the backends that open them and the CLI that asks whether a
    store is there."""
    # Bytes that are not UTF-8 (a path Python holds as surrogate escapes,
    # which a backend's URL percent-encodes) come back as they were.
    if url.startswith(scheme + "://"):
        return unquote(urlsplit(url).path, errors="surrogateescape")
    if url.startswith(scheme + ":"):
        return _home_expanded(unquote(url[len(scheme) + 1 :], errors="surrogateescape"))
    return _home_expanded(url)


def canonical_url(location: str) -> str:
    """``location`` with its scheme written as the registry knows it, for
    everything that reads a location to go on from. A scheme is
    case-insensitive (RFC 3986), and the backend was chosen so; but the
    URL was then read with the scheme as typed, so ``SQLITE:///tmp/x.db``
    made a database at ./SQLITE:/tmp/x.db, its host and query unchecked."""
    scheme = scheme_of(location)
    if location[: len(scheme) + 1].lower() == scheme + ":":
        return scheme + location[len(scheme) :]
    return location


def _home_expanded(path: str) -> str:
    """A leading ``~`` or ``~user`` as the shell reads it. A location that
    no shell expanded (``AGENTLOG_HOME='~/agentlog'`` in an env file, a
    systemd unit, ``Store("~/x")``) used to make a directory named ``~``
    in the current one, the classic ``rm -rf ~`` trap; ``./~`` names one."""
    return os.path.expanduser(path) if path.startswith("~") else path


def check_local_url(scheme: str, url: str) -> None:
    """Refuse a ``file://`` or ``sqlite://`` URL with parts that would be
    dropped without a word: a host (``file://data/store`` is the directory
    /store on host "data", not ./data/store), a query or a fragment."""
    what = _LOCAL.get(scheme)
    if what is None:
        return
    if "\x00" in local_path(scheme, url):
        raise UnknownBackend(f"{url!r}: a path cannot hold a NUL byte")
    example = f"{scheme}:///absolute/path" + (".db" if scheme == "sqlite" else "")
    relative = f"{scheme}:relative/path" + (".db" if scheme == "sqlite" else "")
    if not url.startswith(scheme + ":"):
        return  # a plain path is a path as written
    if not url[len(scheme) + 1 :].startswith("//"):
        # "file:relative/path" is percent-decoded as the absolute form is,
        # so a "?" or "#" there is the same mistake, refused the same way.
        if "?" in url or "#" in url:
            raise UnknownBackend(
                f"{url!r}: a {scheme}: URL takes no options; write {relative} "
                "(a '?' or '#' in the name itself is written %3F or %23)"
            )
        return
    parts = urlsplit(url)
    if parts.netloc not in ("", "localhost"):
        raise UnknownBackend(
            f"{url!r}: a {scheme}: URL takes no host ({parts.netloc!r}), it names a {what} on this machine; "
            f"write {example}, or {relative} for a path relative to the current directory"
        )
    if parts.query or parts.fragment or url.endswith(("?", "#")):
        extra = "?" + parts.query if parts.query or url.endswith("?") else "#" + parts.fragment
        raise UnknownBackend(
            f"{url!r}: a {scheme}: URL takes no options ({extra!r} would be ignored); write {example} "
            "(a '?' or '#' in the name itself is written %3F or %23)"
        )


def open_backend(location: str | os.PathLike[str], *, durability: str = "full", **options: Any) -> Backend:
    """The backend a store URL (or a plain directory path) names."""
    if not isinstance(location, (str, os.PathLike)):
        raise InvalidOption(f"a store is named by a URL or a path, not a {type(location).__name__} ({location!r:.60})")
    url = os.fspath(location)
    if not isinstance(url, str):
        raise InvalidOption(f"a store is named by a URL or a path as text, not {type(url).__name__} ({url!r:.60})")
    url = canonical_url(url)
    scheme = scheme_of(url)
    check_local_url(scheme, url)
    check_durability(durability)
    factory = _load(scheme)
    if options:
        _check_options(scheme, factory, options)
    return factory.from_url(url, durability=durability, **options)


def missing_at(location: str) -> str | None:
    """Where the store ``location`` names would be, shown, when none is
    there yet (``Backend.missing_at``); None when it is there or only
    opening can tell (a factory that is no ``Backend`` cannot say)."""
    location = canonical_url(location)
    look = getattr(_load(scheme_of(location)), "missing_at", None)
    found = look(location) if callable(look) else None
    return found if isinstance(found, str) else None


def _check_options(scheme: str, factory: Any, options: dict[str, Any]) -> None:
    """Refuse a keyword the backend's constructor does not take, as an
    ``InvalidOption`` naming the ones it does (``Store(url, durabilty=...)``
    would otherwise be a bare TypeError from deep inside the backend)."""
    try:
        params = list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):
        return  # a constructor Python cannot describe: the backend checks its own keywords
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return
    named = [p for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    known = {p.name for p in named}
    unknown = sorted(name for name in options if name not in known)
    if unknown:
        # Positional parameters are the location the URL gives.
        offered = [p.name for p in named if p.kind is p.KEYWORD_ONLY]
        raise InvalidOption(
            f"the {scheme} backend takes no option {unknown[0]!r}"
            + (f"; it takes: {', '.join(offered)}" if offered else "")
        )
