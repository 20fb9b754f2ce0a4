"""What names a store is checked before anything is opened or created.

A NUL in a location leaked a bare ``ValueError`` from the OS call; the
relative URL forms (``sqlite:x.db?mode=ro``) took a query into the file's
name, creating a writable ``x.db?mode=ro``, where the absolute form refuses
it; a location that is not text leaked a ``TypeError``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentlog import InvalidOption, Store, UnknownBackend


@pytest.mark.parametrize(
    "location", ["file:///{d}/a%00b", "{d}/a\x00b", "sqlite:///{d}/a%00b.db", "sqlite:{d}/a\x00.db"]
)
def test_a_nul_in_a_location_is_refused(tmp_path: Path, location: str) -> None:
    with pytest.raises(UnknownBackend, match="NUL"):
        Store(location.format(d=tmp_path))
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("location", ["sqlite:x.db?mode=ro", "file:d?a=1", "file:d#top", "sqlite:x.db?"])
def test_the_relative_forms_refuse_options_as_the_absolute_ones_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, location: str
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UnknownBackend, match="takes no options"):
        Store(location)
    assert os.listdir(tmp_path) == []


def test_an_escaped_question_mark_is_still_part_of_a_relative_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Store("sqlite:odd%3Fname.db").create().close()
    assert (tmp_path / "odd?name.db").exists()


@pytest.mark.parametrize("location", [5, b"/tmp/x", ["/tmp"]])
def test_a_location_that_is_not_text_is_refused(location: object) -> None:
    with pytest.raises(InvalidOption, match="URL or a path"):
        Store(location)  # type: ignore[arg-type]


@pytest.mark.parametrize(("scheme", "made"), [("SQLITE", "x.db"), ("Sqlite", "x.db"), ("FILE", "fh"), ("File", "fh")])
def test_a_scheme_in_capitals_names_the_same_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, scheme: str, made: str
) -> None:
    """``SQLITE:///tmp/x.db`` chose the SQLite backend, which then read the
    URL as a relative path: ./SQLITE:/tmp/x.db, its host and query unchecked."""
    monkeypatch.chdir(tmp_path)
    store = Store(f"{scheme}://{tmp_path}/{made}")
    store.create().close()
    store.close()
    assert sorted(p for p in os.listdir(tmp_path) if not p.endswith(".locks")) == [made]
    with pytest.raises(UnknownBackend, match="takes no host"):
        Store(f"{scheme}://host/{made}")
    with pytest.raises(UnknownBackend, match="takes no options"):
        Store(f"{scheme}://{tmp_path}/{made}?mode=ro")
