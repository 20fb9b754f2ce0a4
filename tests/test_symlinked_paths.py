"""Paths through symlinks: a project directory, and a store's home.

--continue finds a project's session however its directory is named.

A session made with ``--working-dir "$PWD"`` in a symlinked directory kept
the symlink's name, and `continue` run there looked up the physical name;
one made there with plain `new` kept the physical name, and `continue` given
the symlink missed it (macOS's /tmp is /private/tmp; symlinked homes and
projects are common)."""

from __future__ import annotations

import os
from pathlib import Path

from agentlog import Store


def test_a_session_is_found_by_its_directory_through_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "realproj"
    real.mkdir()
    link = tmp_path / "linkproj"
    link.symlink_to(real)
    store = Store(tmp_path / "home")
    with store.create(name="via link", working_dir=str(link)) as s:
        by_link = s.id
    assert store.latest_for(str(real)) == by_link
    assert store.latest_for(str(link)) == by_link
    with store.create(name="via real", working_dir=str(real)) as s:
        by_real = s.id
    assert store.latest_for(str(link)) == by_real
    for crumb in (tmp_path / "home" / "breadcrumbs").iterdir():  # without them: found by listing
        os.unlink(crumb)
    assert store.latest_for(str(link)) == by_real
    assert store.latest_for(str(real)) == by_real


def test_a_store_reached_through_a_symlink_is_the_same_store(tmp_path: Path) -> None:
    # One writer per session per process: the second handle, through the
    # link, was refused as "open for writing elsewhere" naming this process.
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    first = Store(real)
    with first.create(session_id="x") as writer:
        writer.append("message", {"content": "one"}, role="user")
        with Store(tmp_path / "link").open("x") as same:
            same.append("message", {"content": "two"}, role="user")
        assert [e.record["content"] for e in writer.path()] == ["one", "two"]
