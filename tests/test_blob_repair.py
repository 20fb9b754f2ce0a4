"""A damaged blob: repair sets it aside once, and fsck then says, as a
warning that no repair clears, that the payload is lost; a repaired
session checks clean (QA finding: every run after the repair failed with
"blob ... is missing", still marked repairable)."""

from __future__ import annotations

import pytest

from agentlog import Store
from helpers import BLOB_THRESHOLD, blob_path, flip_byte

pytestmark = pytest.mark.filterwarnings("ignore::agentlog.RecoveryWarning")


def test_repair_of_a_damaged_blob_converges(tmp_path) -> None:
    store = Store(tmp_path / "home", blob_threshold=BLOB_THRESHOLD)
    with store.create(session_id="s") as s:
        s.append("message", {"role": "user", "content": "before"}, role="user")
        big = s.append("message", {"role": "assistant", "content": "x" * (BLOB_THRESHOLD * 4)}, role="assistant")
        s.append("message", {"role": "user", "content": "after"}, role="user")
    path = blob_path(store, "s", big.digest)
    flip_byte(path, 100)
    errors = [p for p in store.backend.verify("s") if p.severity == "error"]
    assert errors and all(p.repairable for p in errors)
    actions = store.backend.repair("s")
    assert any("does not match its digest" in a for a in actions)
    for _ in range(2):  # stable: every later check says the same, and nothing is left to repair
        problems = store.backend.verify("s")
        assert [p.severity for p in problems] == ["warning"]
        assert not problems[0].repairable
        assert f"the payload of event {big.id} is lost" in problems[0].message
        assert all("index.bin" in a for a in store.backend.repair("s"))  # (it always rebuilds the index)
    assert path.with_name(path.name + ".quarantine").exists()
    with store.open("s") as s:
        assert [e.id for e in s.path()][1] == big.id  # the event stays on the path; its payload is gone


def test_repair_of_a_missing_blob_converges(tmp_path) -> None:
    # A blob deleted by hand or lost by a disk: fsck called it repairable and
    # repair did nothing, so every `fsck --repair` failed the same way, and a
    # bundle kept sending the user back to it.
    store = Store(tmp_path / "home", blob_threshold=BLOB_THRESHOLD)
    with store.create(session_id="s") as s:
        s.append("message", {"role": "user", "content": "before"}, role="user")
        big = s.append("message", {"role": "assistant", "content": "y" * (BLOB_THRESHOLD * 4)}, role="assistant")
    path = blob_path(store, "s", big.digest)
    path.unlink()
    (error,) = store.backend.verify("s")
    assert error.severity == "error" and error.repairable and "missing" in error.message
    actions = store.backend.repair("s")
    assert any(f"recorded {path} as lost" in a and big.id in a for a in actions)
    for _ in range(2):
        (problem,) = store.backend.verify("s")
        assert problem.severity == "warning" and not problem.repairable
        assert f"the payload of event {big.id} is lost" in problem.message
        assert all("index.bin" in a for a in store.backend.repair("s"))
    note = path.with_name(path.name + ".lost")
    assert note.exists() and big.id in note.read_text()
    with store.open("s") as s:
        assert [e.id for e in s.path()] == [s.path()[0].id, big.id]


def test_the_documented_clean_up_keeps_a_repaired_session_clean(tmp_path) -> None:
    # fsck --repair set a damaged blob aside; gc --quarantine then removed
    # the aside bytes, and fsck found a plain missing blob again: an error.
    from agentlog.backends.files.gc import collect

    store = Store(tmp_path / "home", blob_threshold=BLOB_THRESHOLD)
    with store.create(session_id="s") as s:
        big = s.append("message", {"role": "assistant", "content": "z" * (BLOB_THRESHOLD * 4)}, role="assistant")
    path = blob_path(store, "s", big.digest)
    flip_byte(path, 10)
    store.backend.repair("s")
    collect(str(tmp_path / "home"), quarantine=True)
    assert not path.with_name(path.name + ".quarantine").exists()
    (problem,) = store.backend.verify("s")
    assert problem.severity == "warning" and not problem.repairable
    assert f"the payload of event {big.id} is lost" in problem.message
