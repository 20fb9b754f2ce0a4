"""The writer's lease across real processes (invariant 7).

A second writer fails at once with SessionLocked naming the holder; readers
take no lock; the kernel drops the lease when the holder dies however it
dies; lock files are never deleted; within a process the lease nests.
"""

from __future__ import annotations

import os
import signal

import pytest

from agentlog import SessionLocked
from helpers import errors_of, expect_line, lock_path, spawn

pytestmark = pytest.mark.timeout(60)  # a lock that blocks instead of failing hangs here

SID = "locked"


@pytest.fixture
def holder(file_store):
    """A child process holding SID open for writing."""
    with file_store.create(session_id=SID) as s:
        s.append("message", {"content": "before the holder"})
    proc = spawn("holder", file_store.home, SID)
    pid = int(expect_line(proc, "ready "))
    assert pid == proc.pid
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.communicate()


def _ask(proc, command: str, reply: str) -> str:
    proc.stdin.write(command + "\n")
    proc.stdin.flush()
    return expect_line(proc, reply)


def test_second_writer_fails_at_once_naming_the_holder(file_store, holder):
    with pytest.raises(SessionLocked) as info:
        file_store.open(SID)
    assert info.value.session_id == SID
    assert f"pid {holder.pid}" in info.value.holder
    assert f"pid {holder.pid}" in str(info.value)


def test_management_writes_are_refused_while_another_process_writes(file_store, holder):
    with pytest.raises(SessionLocked):
        file_store.delete(SID)
    with pytest.raises(SessionLocked):
        file_store.update_meta(SID, title="refused")
    assert file_store.exists(SID)


def test_readers_need_no_lock_and_follow_the_writer(file_store, holder):
    with file_store.open(SID, readonly=True) as reader:
        assert len(reader) == 1
        ids = _ask(holder, "append 5", "ids ").split()
        reader.refresh()
        assert [e.id for e in reader.path()][-5:] == ids
        assert reader.head == ids[-1]
        more = _ask(holder, "append 3", "ids ").split()
        reader.refresh()
        assert reader.head == more[-1] and len(reader) == 9


def test_readers_never_see_a_torn_record(file_store, holder):
    """Reading while the writer appends: every refresh sees a whole prefix."""
    holder.stdin.write("append 300\n")
    holder.stdin.flush()
    seen = 0
    with file_store.open(SID, readonly=True) as reader:
        while True:
            reader.refresh()
            path = reader.path()
            assert len(path) == len(reader) >= seen  # a chain: nothing half there
            assert all(e.record is not None for e in path)
            seen = len(path)
            if seen == 301:
                break
    expect_line(holder, "ids ")


def test_the_lease_dies_with_a_sigkilled_holder(file_store, holder):
    ids = _ask(holder, "append 2", "ids ").split()
    holder.send_signal(signal.SIGKILL)
    holder.wait()
    with file_store.open(SID) as s:  # no stale lock to clean up by hand
        assert s.head == ids[-1]
        s.append("message", {"content": "new writer"})
    assert errors_of(file_store.fsck(SID)) == []


def test_the_lease_is_released_on_close(file_store, holder):
    assert _ask(holder, "exit", "closed") == ""
    with file_store.open(SID) as s:
        s.append("message", {"content": "next writer"})


def test_lock_file_is_never_deleted(file_store, holder):
    lock = lock_path(file_store, SID)
    inode = os.stat(lock).st_ino
    _ask(holder, "exit", "closed")
    holder.wait()
    assert os.stat(lock).st_ino == inode
    file_store.delete(SID)
    assert os.stat(lock).st_ino == inode
    # A new session of the same id locks the very same file.
    with file_store.create(session_id=SID):
        assert os.stat(lock).st_ino == inode
        proc = spawn("racer", file_store.home, SID)
        expect_line(proc, "ready")
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert expect_line(proc, "locked ").startswith(f"pid {os.getpid()}")
        proc.communicate()


def test_nested_acquisition_in_one_process_reuses_the_lease(file_store):
    with file_store.create(session_id=SID) as s:
        s.append("message", {"content": "x"})
        # A management write opens the session again: in this process it
        # joins the open writer rather than failing on its own lease.
        file_store.update_meta(SID, title="nested")
        assert file_store.meta(SID)["title"] == "nested"
        # ...and releasing the nested hold must not release the writer's.
        proc = spawn("racer", file_store.home, SID)
        expect_line(proc, "ready")
        proc.stdin.write("go\n")
        proc.stdin.flush()
        assert expect_line(proc, "locked ").startswith(f"pid {os.getpid()}")
        proc.communicate()
        s.append("message", {"content": "still the writer"})
    proc = spawn("racer", file_store.home, SID)
    expect_line(proc, "ready")
    proc.stdin.write("go\n")
    proc.stdin.flush()
    assert expect_line(proc, "won") == ""
    proc.stdin.write("done\n")
    proc.stdin.flush()
    proc.communicate()


@pytest.mark.parametrize("round_no", range(3))
def test_two_processes_racing_for_the_writer_exactly_one_wins(file_store, round_no):
    with file_store.create(session_id=SID):
        pass
    racers = [spawn("racer", file_store.home, SID) for _ in range(2)]
    try:
        for proc in racers:
            expect_line(proc, "ready")
        for proc in racers:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        results = [proc.stdout.readline().split() for proc in racers]
        outcomes = sorted(r[0] for r in results)
        assert outcomes == ["locked", "won"], results
        winner = racers[[r[0] for r in results].index("won")]
        loser_said = next(" ".join(r[1:]) for r in results if r[0] == "locked")
        # The winner writes its note just after taking the flock (after
        # emptying the file), so a loser that looks in between finds no name
        # (see the report: _lease._holder could re-read an empty note). It
        # must never name anyone else.
        assert loser_said == "None" or loser_said.startswith(f"pid {winner.pid} ")
    finally:
        for proc in racers:
            # "done" lets the winner close its session. The loser returns on
            # its own: a write after poll() found it alive could meet its
            # closed pipe (BrokenPipeError, seen in CI), which communicate()
            # takes as the end it is.
            proc.communicate("done\n")
    with file_store.open(SID):  # both gone: the lease is free again
        pass
