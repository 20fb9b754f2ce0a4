"""--continue: the latest session of a working directory, and moved projects.

A breadcrumb per working directory names its latest session, so finding
it costs one small read instead of a scan; without one (or when it names
a deleted session) the listing answers. A project directory that was
moved is found by name and re-rooted on request.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentlog import CorruptionError, NothingToContinue, RecoveryWarning, Store


@pytest.fixture
def dirs(tmp_path):
    a, b = tmp_path / "work" / "alpha", tmp_path / "work" / "beta"
    a.mkdir(parents=True)
    b.mkdir(parents=True)
    return a, b


def test_continue_opens_the_latest_session_of_each_directory(file_store, dirs):
    a, b = dirs
    file_store.create(working_dir=str(a)).close()
    a2 = file_store.create(working_dir=str(a))
    a2.append("message", {"content": "in alpha"}, role="user")
    a2.close()
    b1 = file_store.create(working_dir=str(b))
    b1.close()
    with file_store.continue_session(str(a)) as s:
        assert s.id == a2.id
        assert s.path()[0].record == {"content": "in alpha"}
    with file_store.continue_session(str(b)) as s:
        assert s.id == b1.id


def test_opening_a_session_for_writing_makes_it_the_latest(file_store, dirs):
    a, _ = dirs
    first = file_store.create(working_dir=str(a))
    first.close()
    second = file_store.create(working_dir=str(a))
    second.close()
    file_store.open(first.id, readonly=True).close()  # a reader leaves no crumb
    assert file_store.latest_for(str(a)) == second.id
    file_store.open(first.id).close()
    assert file_store.latest_for(str(a)) == first.id


def test_continue_defaults_to_the_current_directory(file_store, dirs, monkeypatch):
    a, _ = dirs
    with file_store.create(working_dir=str(a)) as s:
        pass
    monkeypatch.chdir(a)
    with file_store.continue_session() as again:
        assert again.id == s.id


def test_relative_and_absolute_paths_name_the_same_directory(file_store, dirs, monkeypatch):
    a, _ = dirs
    monkeypatch.chdir(a.parent)
    with file_store.create(working_dir="alpha") as s:
        assert s.meta["working_dir"] == str(a)
    assert file_store.latest_for(str(a)) == s.id
    assert file_store.latest_for("./alpha/../alpha") == s.id


def test_nothing_to_continue(file_store, dirs):
    a, b = dirs
    file_store.create(working_dir=str(a)).close()
    with pytest.raises(NothingToContinue) as info:
        file_store.continue_session(str(b))
    assert info.value.working_dir == str(b) and info.value.moved == []
    with pytest.raises(NothingToContinue):
        Store.memory().continue_session(str(b))


def test_without_breadcrumbs_the_listing_answers(file_store, dirs):
    a, _ = dirs
    with file_store.create(working_dir=str(a)) as s:
        s.append("message", {"content": "x"}, role="user")
    shutil.rmtree(Path(file_store.home) / "breadcrumbs")
    with file_store.continue_session(str(a)) as again:
        assert again.id == s.id


def test_a_breadcrumb_naming_a_deleted_session_is_passed_over(file_store, dirs):
    a, _ = dirs
    older = file_store.create(working_dir=str(a))
    older.close()
    newer = file_store.create(working_dir=str(a))
    newer.close()
    file_store.delete(newer.id)
    with file_store.continue_session(str(a)) as s:
        assert s.id == older.id
    file_store.delete(older.id)
    with pytest.raises(NothingToContinue):
        file_store.continue_session(str(a))


def test_a_damaged_breadcrumb_is_reported_and_listing_finds_the_session(file_store, dirs):
    """A breadcrumb is derived: its damage is reported, never followed (the
    hostile id is not used as a path), and the session is found by listing."""
    a, _ = dirs
    s = file_store.create(working_dir=str(a))
    s.close()
    (crumb,) = (Path(file_store.home) / "breadcrumbs").iterdir()
    crumb.write_bytes(b'{"session_id": "../../etc"}')
    with pytest.raises(CorruptionError):
        file_store.backend.get_breadcrumb(str(a))
    with pytest.warns(RecoveryWarning, match="breadcrumb"):
        assert file_store.latest_for(str(a)) == s.id


def test_lazy_sessions_leave_a_breadcrumb_only_once_persisted(file_store, dirs):
    a, _ = dirs
    s = file_store.create(working_dir=str(a), lazy=True)
    s.append("message", {"content": "q"}, role="user")
    with pytest.raises(NothingToContinue):
        file_store.continue_session(str(a))
    s.append("message", {"content": "a"}, role="assistant")
    s.close()
    with file_store.continue_session(str(a)) as again:
        assert len(again) == 2


def test_breadcrumbs_are_shared_between_processes(file_store, dirs):
    a, _ = dirs
    code = (
        "import sys; from agentlog import Store\n"
        "s = Store(sys.argv[1]).create(working_dir=sys.argv[2]); print(s.id); s.close()\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, file_store.home, str(a)], capture_output=True, text=True, check=True
    )
    with file_store.continue_session(str(a)) as s:
        assert s.id == out.stdout.strip()


# --- a moved project --------------------------------------------------------------


def test_a_moved_project_is_found_and_rerooted(file_store, tmp_path):
    old = tmp_path / "old" / "project"
    old.mkdir(parents=True)
    with file_store.create(working_dir=str(old)) as s:
        s.append("message", {"content": "work"}, role="user")
    new = tmp_path / "new" / "project"
    new.parent.mkdir()
    os.rename(old, new)

    with pytest.raises(NothingToContinue) as info:
        file_store.continue_session(str(new))
    assert info.value.moved == [s.id]
    assert s.id in str(info.value)
    assert [r.id for r in file_store.find_moved(str(new))] == [s.id]

    with file_store.continue_session(str(new), reroot=True) as again:
        assert again.id == s.id
        assert again.meta["working_dir"] == str(new)
    # Re-rooted for good: no reroot needed now, and nothing left to adopt.
    with file_store.continue_session(str(new)) as again:
        assert again.id == s.id
    assert file_store.find_moved(str(new)) == []


def test_find_moved_ignores_directories_that_still_exist(file_store, tmp_path):
    here = tmp_path / "a" / "project"
    here.mkdir(parents=True)
    file_store.create(working_dir=str(here)).close()
    elsewhere = tmp_path / "b" / "project"
    elsewhere.mkdir(parents=True)
    assert file_store.find_moved(str(elsewhere)) == []
    with pytest.raises(NothingToContinue) as info:
        file_store.continue_session(str(elsewhere), reroot=True)
    assert info.value.moved == []


def test_find_moved_matches_the_last_path_component_only(file_store, tmp_path):
    gone = tmp_path / "x" / "project"
    gone.mkdir(parents=True)
    file_store.create(working_dir=str(gone)).close()
    shutil.rmtree(gone)
    other = tmp_path / "y" / "another"
    other.mkdir(parents=True)
    assert file_store.find_moved(str(other)) == []
