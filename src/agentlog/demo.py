"""`make demo`: a scripted agent session, end to end, on the embedded store.

Several turns with tool calls; a writer killed with SIGKILL in the middle
of a turn and recovered; a branch from an earlier event with a branch
summary; a compaction; a fork; then the tree, the active context and a
clean fsck. Offline and deterministic (a scripted model), done in seconds.
The store is left in ./demo-home for browsing with the CLI.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

from rich.console import Console

from . import Store
from .agent.loop import Agent, Tool
from .agent.scripted import ScriptedModel, ToolUse
from .providers import INTERRUPTED

HOME = os.path.abspath(os.environ.get("AGENTLOG_DEMO_HOME", "demo-home"))
MARKER = ".agentlog-demo"
console = Console(highlight=False)

FILES = {
    "calc.py": "def add(a, b):\n    return a - b\n",
    "test_calc.py": "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n",
}


def workspace_tools(files: dict[str, str]) -> list[Tool]:
    def read_file(path: str) -> str:
        return files[path]

    def write_file(path: str, content: str) -> str:
        files[path] = content
        return f"wrote {len(content)} bytes to {path}"

    def run_tests() -> str:
        ok = "a + b" in files.get("calc.py", "")
        return "1 passed" if ok else "FAILED test_calc.py::test_add - assert -1 == 5"

    def slow_build() -> str:
        time.sleep(3600)  # the demo kills the process while this runs
        return "built"

    return [
        Tool(
            "read_file",
            read_file,
            "Read a file",
            {"type": "object", "properties": {"path": {"type": "string"}}},
        ),
        Tool(
            "write_file",
            write_file,
            "Write a file",
            {"type": "object", "properties": {"path": {"type": "string"}, "content": {"type": "string"}}},
        ),
        Tool("run_tests", run_tests, "Run the test suite"),
        Tool("slow_build", slow_build, "Build the release (slow)"),
    ]


def step(title: str) -> None:
    console.print(f"\n[bold cyan]== {title}[/]")


def crash_child(home: str, session_id: str) -> None:
    """Runs in a subprocess: starts a turn whose tool never finishes."""
    store = Store(home)
    with store.open(session_id) as session:
        model = ScriptedModel([ToolUse("slow_build", {})], name="scripted")
        agent = Agent(session, model, tools=workspace_tools(dict(FILES)))

        def announce(path: str = "") -> str:
            print("TOOL_STARTED", flush=True)
            time.sleep(3600)
            return ""

        agent.tools["slow_build"] = Tool("slow_build", announce)
        agent.run("Now build the release.")


def kill_mid_turn(session_id: str) -> None:
    child = subprocess.Popen(
        [sys.executable, "-m", "agentlog.demo", "--crash-child", HOME, session_id],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None  # stdout=PIPE above
    try:
        line = child.stdout.readline()
        if line.strip() != "TOOL_STARTED":
            raise SystemExit(f"demo: the writer did not reach its tool (got {line!r})")
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(timeout=30)
    console.print(f"writer pid {child.pid} killed with SIGKILL while its tool was running")


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "--crash-child":
        crash_child(sys.argv[2], sys.argv[3])
        return 0
    if os.path.exists(HOME):
        if not os.path.exists(os.path.join(HOME, MARKER)):
            raise SystemExit(f"demo: {HOME} exists and is not a demo store; set AGENTLOG_DEMO_HOME")
        shutil.rmtree(HOME)
    store = Store(HOME)
    open(os.path.join(HOME, MARKER), "w").close()
    started = time.perf_counter()

    step("1. A session with tool calls (scripted model, offline)")
    files = dict(FILES)
    session = store.create(name="fix calc", working_dir=os.getcwd(), model="scripted", lazy=True)
    model = ScriptedModel(
        [
            ToolUse("read_file", {"path": "calc.py"}),
            ToolUse("run_tests", {}),
            "add() subtracts instead of adding; the test fails with -1 == 5.",
            ToolUse("write_file", {"path": "calc.py", "content": "def add(a, b):\n    return a + b\n"}),
            ToolUse("run_tests", {}),
            "Fixed: add() now returns a + b and the test passes.",
        ],
        context_window=4_000,
    )
    agent = Agent(session, model, tools=workspace_tools(files), system="You fix bugs.")
    for prompt in ("Why does test_add fail? Don't change the test.", "Please fix it."):
        result = agent.run(prompt)
        console.print(f"[green]user:[/] {prompt}\n[magenta]agent:[/] {result.text}")
    first_reply = next(
        e for e in session.path() if e.kind == "message" and e.role == "assistant" and (e.record or {}).get("content")
    )
    sid = session.id
    session.close()
    console.print(f"session {sid}: {len(store.open(sid, readonly=True))} events on disk")

    step("2. SIGKILL in the middle of a turn, then recovery")
    kill_mid_turn(sid)
    session = store.open(sid)
    tail = session.path()[-3:]
    console.print("durable after the kill: " + ", ".join(f"{e.kind}/{e.role}" for e in tail))
    # The synthetic result sits right after the interrupted call, which is
    # not necessarily the last message (the turn's user prompt came first).
    answered = [m for m in session.to_chat_messages() if m.get("role") == "tool" and m.get("content") == INTERRUPTED]
    if not answered:
        raise SystemExit("demo: the interrupted call got no synthetic result in the context")
    # markup=False: rich would read "[interrupted: ...]" as a style tag and
    # print '' (the bug this line once had).
    console.print(
        f"the interrupted call {answered[-1].get('tool_call_id')} is answered in the "
        f"context: {answered[-1]['content']!r}",
        markup=False,
    )

    step("3. Branch from an earlier event, with a branch summary")
    session.select(first_reply.id)
    summary = session.summarize_branch()
    if summary is None:
        raise SystemExit("demo: the abandoned branch gave no branch summary")
    console.print(f"branch_summary {summary.id[:13]}: {summary.record['summary'][:100]!r}...")
    agent = Agent(
        session,
        ScriptedModel(["Approach B: keep add() and add a docstring instead."]),
        tools=workspace_tools(files),
    )
    console.print(f"[magenta]agent:[/] {agent.run('Try a different approach: explain only.').text}")

    step("4. Compaction (nothing is deleted)")
    before = len(session.context())
    compaction = session.compact(keep_tokens=40)
    if compaction is None:
        raise SystemExit("demo: the session was not long enough to compact")
    console.print(
        f"context: {before} events -> {len(session.context())}; "
        f"tokens {compaction.record['tokens_before']} -> {compaction.record['tokens_after']}; "
        f"transcript still has {len(session.transcript())} events"
    )

    step("5. Fork")
    fork = session.fork(name="fix calc (fork)")
    console.print(f"fork {fork.id} holds {len(fork)} events, forked_from {fork.meta['forked_from']['session'][:13]}")
    fork.close()
    session.close()

    step("6. The tree and the active context")
    from .cli import main as cli

    command = _command()
    for args in (["tree", sid], ["context", sid], ["fsck"]):
        console.print(f"[dim]$ {command} --home {os.path.relpath(HOME)} {' '.join(args)}[/]")
        try:
            cli.main(["--home", HOME, *args], prog_name="agentlog", standalone_mode=False)
        except SystemExit as exc:  # fsck's exit status: 0 when clean
            if exc.code:
                raise
    console.print(
        f"\n[bold]done in {time.perf_counter() - started:.1f} s.[/] Browse it: "
        f"{command} --home {os.path.relpath(HOME)} ls"
    )
    return 0


def _command() -> str:
    """How to run agentlog from here, as printed: ``agentlog`` when the
    shell finds this installation's, else its path (``make demo`` runs in a
    virtualenv that is not on PATH, so ``.venv/bin/agentlog``)."""
    beside = os.path.join(os.path.dirname(sys.executable), "agentlog")
    found = shutil.which("agentlog")
    if found and os.path.realpath(found) == os.path.realpath(beside):
        return "agentlog"
    return os.path.relpath(beside) if os.path.exists(beside) else "agentlog"


if __name__ == "__main__":
    sys.exit(main())
