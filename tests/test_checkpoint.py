"""Checkpoint state: saved with the messages it describes, restored exactly.

The seed saved messages and state in two writes, so a crash between them
paired new messages with an old checkpoint. Here each ``state`` event is
in the same all-or-nothing batch as the turn's messages. The tests kill a
real agent process with SIGKILL between every pair of its file-system
writes and at random moments, then check every ``state`` on the path
against the messages before it.

Run as a script this file is the child of the resume test:

    python tests/test_checkpoint.py dump HOME SESSION
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

from agentlog import FileBackend, RecoveryWarning, Store
from agentlog._fs import OsFs
from agentlog.agent.loop import Agent, Tool
from agentlog.agent.scripted import ScriptedModel, ToolUse, Turn
from agentlog.state import Checkpoint, Todo, UsageTotals

SELF = Path(__file__).resolve()


def test_checkpoint_record_round_trip():
    cp = Checkpoint(
        scratchpad="notes", todos=[Todo("a", "done", 2), Todo("b")], tool_calls=7, usage=UsageTotals(100, 20, 0.25, 3)
    )
    record = cp.to_record()
    assert record == {
        "scratchpad": "notes",
        "todos": [{"text": "a", "status": "done", "retries": 2}, {"text": "b", "status": "pending", "retries": 0}],
        "tool_calls": 7,
        "usage": {"input_tokens": 100, "output_tokens": 20, "cost_usd": 0.25, "calls": 3},
    }
    assert Checkpoint.from_record(json.loads(json.dumps(record))) == cp
    assert Checkpoint.from_record(None) == Checkpoint()
    assert Checkpoint.from_record({"usage": {"calls": "2"}}).usage.calls == 2


def test_a_checkpoint_read_back_can_always_be_stored_again(file_store):
    # Another writer's numbers: a float count beyond 64 bits, a cost kept as
    # "NaN" (as docs/records.md says to keep one). Read back as they were,
    # the next turn's checkpoint could not be stored (its reply lost with it),
    # or NaN + every later cost hid the spend a budget checks.
    record = {"tool_calls": 1e20, "todos": [{"text": "t", "retries": 1e25}],
              "usage": {"cost_usd": "NaN", "calls": -1e19, "input_tokens": "Infinity"}}  # fmt: skip
    cp = Checkpoint.from_record(record)
    assert cp.tool_calls == 0 and cp.todos[0].retries == 0
    assert cp.usage == UsageTotals(0, 0, 0.0, 0)
    assert Checkpoint.from_record({"usage": {"cost_usd": "Infinity"}}).usage.cost_usd == 0.0
    assert Checkpoint.from_record({"tool_calls": 2**63 - 1}).tool_calls == 2**63 - 1
    with file_store.create() as s:
        s.append("state", record)
        result = Agent(s, ScriptedModel(["Hello."])).run("hi")
        assert result.text == "Hello." and s.state().usage.calls == 1


def test_save_turn_is_one_batch_with_the_state(file_store):
    with file_store.create() as s:
        assert s.state() == Checkpoint()
        cp = Checkpoint(scratchpad="plan", tool_calls=1)
        events = s.save_turn(
            [
                ("message", {"content": "hi"}, "assistant"),
                ("tool_call", {"id": "c", "name": "t", "arguments": "{}"}, "assistant"),
            ],
            cp,
        )
        assert [e.kind for e in events] == ["message", "tool_call", "state"]
        assert s.state() == cp
        cp.tool_calls = 2
        s.save_turn(
            [("tool_result", {"tool_call_id": "c", "name": "t", "content": "ok", "is_error": False}, "tool")],
            cp.to_record(),
        )
        assert s.state().tool_calls == 2
    lines = (Path(file_store.home) / "sessions" / s.id / "chunks" / "000000.jsonl").read_bytes()
    first_batch = [json.loads(line) for line in lines.splitlines()[:3]]
    assert [rec["txn"] for rec in first_batch] == [[0, 3], [1, 3], [2, 3]]


def test_state_follows_the_active_path(file_store):
    with file_store.create() as s:
        a = s.save_turn([("message", {"content": "a"}, "user")], Checkpoint(scratchpad="A"))
        s.save_turn([("message", {"content": "b"}, "user")], Checkpoint(scratchpad="B"))
        assert s.state().scratchpad == "B"
        s.checkout(a[-1].id)
        assert s.state().scratchpad == "A"


# --- resume in a new process -------------------------------------------------------------


def _dump(home: str, session_id: str) -> None:
    """Child: open the session and print what a resumed agent would start from."""
    store = Store(home)
    with store.open(session_id) as session:
        agent = Agent(session, ScriptedModel([]))
        print(
            json.dumps(
                {
                    "messages": session.to_chat_messages(system="sys"),
                    "state": session.state().to_record(),
                    "agent_state": agent.state.to_record(),
                    "head": session.head,
                }
            )
        )


def test_a_resumed_session_restores_messages_and_state_in_a_new_process(tmp_path):
    store = Store(tmp_path / "home", blob_threshold=1024)
    files = {"a.txt": "alpha " * 400}
    with store.create() as s:
        model = ScriptedModel(
            [
                ToolUse("read", {"path": "a.txt"}),
                Turn(
                    text="Two reads.", tool_calls=[ToolUse("read", {"path": "a.txt"}), ToolUse("read", {"path": "b"})]
                ),
                "Done: a.txt holds alpha.",
            ],
            price_per_token=(1e-6, 2e-6),
        )
        agent = Agent(s, model, tools=[Tool("read", lambda path: files[path])])

        def plan(text: str) -> str:
            agent.state.todos.append(Todo(text, "in_progress", 1))
            agent.state.scratchpad += f"[{text}]"
            return "planned"

        agent.tools["plan"] = Tool("plan", plan)
        agent.run("Read a.txt.")
        agent.model = ScriptedModel([ToolUse("plan", {"text": "write tests"}), "Planned."])
        agent.run("Plan the work.")
        expected = {"messages": s.to_chat_messages(system="sys"), "state": agent.state.to_record(), "head": s.head}
        expected["agent_state"] = expected["state"]
    assert expected["state"]["tool_calls"] == 4
    assert expected["state"]["todos"] == [{"text": "write tests", "status": "in_progress", "retries": 1}]
    assert expected["state"]["usage"]["calls"] == 5 and expected["state"]["usage"]["cost_usd"] > 0
    assert any(
        m["role"] == "tool" and "unknown" not in str(m["content"]) and len(m["content"]) > 1024
        for m in expected["messages"]
    )  # a blob came back

    out = subprocess.run(
        [sys.executable, str(SELF), "dump", str(store.home), s.id], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == json.loads(json.dumps(expected))


# --- crashes between any two writes of a turn ------------------------------------------------

_EFFECTS = ("truncate", "fsync", "fdatasync", "rename", "mkdir", "unlink", "rmtree", "link", "fsync_dir", "write")


class KillAt(OsFs):
    """SIGKILLs its own process just before its Nth file-system effect."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.count = 0

    def _effect(self) -> None:
        self.count += 1
        if self.count == self.n:
            os.kill(os.getpid(), signal.SIGKILL)

    def open(self, path, flags, mode=0o600):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT):
            self._effect()
        return super().open(path, flags, mode)


for _name in _EFFECTS:

    def _wrap(self, *args, _name=_name, **kwargs):
        self._effect()
        return getattr(OsFs, _name)(self, *args, **kwargs)

    setattr(KillAt, _name, _wrap)


def _agent_turns(home: str, session_id: str, fs: OsFs, turns: int, ready_fd: int | None) -> None:
    """The child's work: resume the session and run agent turns with tools."""
    warnings.simplefilter("ignore", RecoveryWarning)
    store = Store(backend=FileBackend(home, fs=fs), blob_threshold=1024)
    session = store.open(session_id)
    script = []
    for k in range(turns):
        script += [
            ToolUse("note", {"text": f"n{k}"}),
            Turn(text="two at once", tool_calls=[ToolUse("note", {"text": "x"}), ToolUse("add", {"a": k, "b": 1})]),
            f"Turn {k} finished. " + "words " * 50,
        ]
    model = ScriptedModel(script, context_window=6000, price_per_token=(1e-6, 1e-6))
    agent = Agent(session, model, tools=[Tool("add", lambda a, b: str(a + b))])

    def note(text: str) -> str:
        agent.state.scratchpad += "+"
        agent.state.todos.append(Todo(text, "done"))
        return "noted " + "o" * 1500  # big enough for a blob

    agent.tools["note"] = Tool("note", note)
    session.compaction.keep_tokens = 800
    if ready_fd is not None:
        os.write(ready_fd, b"r")
        os.close(ready_fd)
    for k in range(turns):
        agent.run(f"Task {k}")
    session.close()


def _run_child(home: str, session_id: str, *, kill_at: int | None, turns: int, kill_after: float | None = None) -> int:
    """Fork a real child process running agent turns; it is SIGKILLed at its
    ``kill_at``-th write, or by us ``kill_after`` seconds after it is ready."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        code = 0
        try:
            os.close(read_fd)
            fs = KillAt(kill_at) if kill_at is not None else OsFs()
            _agent_turns(home, session_id, fs, turns, write_fd if kill_after is not None else None)
        except BaseException:
            import traceback

            traceback.print_exc()
            code = 1
        finally:
            os._exit(code)
    os.close(write_fd)
    if kill_after is not None:
        os.read(read_fd, 1)  # ready (or, if it died first, EOF)
        time.sleep(kill_after)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    os.close(read_fd)
    deadline = time.monotonic() + 60  # a bound on a hung child, not a timing check
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return status
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise AssertionError(f"agent child {pid} hung (kill_at={kill_at})")
        time.sleep(0.005)


def _check_path(store: Store, session_id: str) -> dict[str, int]:
    """Every state on the path agrees with the messages before it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RecoveryWarning)
        session = store.open(session_id)  # as a writer: recovery runs
    with session:
        results = assistants = notes = states = calls = 0
        for event in session.path():
            record = session.resolve(event).record
            if event.kind == "message" and event.role == "assistant":
                assistants += 1
            elif event.kind == "tool_call":
                calls += 1
            elif event.kind == "tool_result":
                results += 1
                notes += record["name"] == "note"
            elif event.kind == "state":
                states += 1
                cp = Checkpoint.from_record(record)
                assert cp.tool_calls == results, (cp.tool_calls, results)
                assert cp.usage.calls == assistants, (cp.usage.calls, assistants)
                assert len(cp.scratchpad) == notes and len(cp.todos) == notes
        last = session.state()
        if states:
            assert last.usage.calls == assistants
            assert last.tool_calls == results
        # A crash can leave calls unanswered, and the next turn's view repairs them.
        from agentlog.agent.models import check_messages

        if len(session):
            check_messages(session.to_chat_messages(system="s"))
        compactions = sum(e.kind == "compaction" for e in session.path())
    return {"assistants": assistants, "results": results, "states": states, "calls": calls, "compactions": compactions}


def test_a_crash_between_any_two_writes_never_splits_messages_from_state(tmp_path):
    home = str(tmp_path / "home")
    store = Store(home, blob_threshold=1024)
    with store.create() as s:
        sid = s.id
    rng = random.Random(20240611)
    killed = 0
    # Opening and one whole turn take about 40 writes: kill before each of
    # them in turn, then at a spread of later ones (turns 2 and 3).
    points = list(range(1, 41)) + [rng.randint(41, 100) for _ in range(8)]
    for kill_at in points:
        status = _run_child(home, sid, kill_at=kill_at, turns=3)
        if os.WIFSIGNALED(status):
            assert os.WTERMSIG(status) == signal.SIGKILL
            killed += 1
        else:
            assert os.WEXITSTATUS(status) == 0
        _check_path(store, sid)
    for _ in range(4):  # and at moments nobody chose
        _run_child(home, sid, kill_at=None, turns=50, kill_after=rng.uniform(0.0, 0.15))
        _check_path(store, sid)
    assert killed >= 40  # every one of the first 40 writes comes before the child could finish
    final = _check_path(store, sid)
    assert final["states"] > 5 and final["results"] > 5 and final["compactions"] > 0
    problems = [p for p in store.fsck(sid) if p.severity == "error"]
    assert problems == []


def test_a_torn_turn_batch_is_dropped_whole(file_store):
    """The same, by byte surgery: cut the last batch anywhere; the state and
    the messages go together or not at all."""
    with file_store.create() as s:
        s.save_turn([("message", {"content": "q"}, "user")], Checkpoint(tool_calls=0))
        s.save_turn(
            [
                ("message", {"content": "a"}, "assistant"),
                ("tool_call", {"id": "c", "name": "t", "arguments": "{}"}, "assistant"),
            ],
            Checkpoint(tool_calls=0, usage=UsageTotals(calls=1)),
        )
        sid = s.id
    chunk = Path(file_store.home) / "sessions" / sid / "chunks" / "000000.jsonl"
    data = chunk.read_bytes()
    lines = data.splitlines(keepends=True)
    batch_start = len(b"".join(lines[:2]))
    # Every line boundary of the batch and a spread of cuts inside lines.
    ends = {len(b"".join(lines[:k])) for k in range(3, len(lines))}
    cuts = sorted(ends | set(range(batch_start + 1, len(data), 23)))
    # A crash inside the batch's write leaves no index entry of it (entries
    # follow the sync): the index as the first turn left it.
    index = chunk.parent.parent / "index.bin"
    first_turn = index.read_bytes()[: 4096 + 64 * 2]
    for cut in cuts:
        chunk.write_bytes(data[:cut])
        index.write_bytes(first_turn)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RecoveryWarning)
            with file_store.open(sid) as s:
                assert [e.kind for e in s.path()] == ["message", "state"]
                assert s.state().usage.calls == 0
        chunk.write_bytes(data)


if __name__ == "__main__":
    role, *rest = sys.argv[1:]
    {"dump": _dump}[role](*rest)
