"""Reading a big session holds one payload at a time, not the session:
exports (Markdown, HTML, through the server too) and the commands that
summarise a session. Measured with tracemalloc on a session whose
payloads (blobs) add up to far more than the bound."""

from __future__ import annotations

import io
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentlog import Store
from agentlog.export import export_session

#: 40 tool results of 200 KB each: 8 MB of payloads, every one a blob.
RESULTS, SIZE = 40, 200_000
#: What reading them may hold at once: the copies one payload goes through
#: (blob bytes, parsed record, its text, the fenced text, UTF-8) and the
#: write buffer; half of all the payloads. Holding them all took 32 MB.
BOUND = 4_000_000


class _Discard(io.RawIOBase):
    """A sink that keeps nothing (what is written is counted)."""

    def __init__(self) -> None:
        self.count = 0

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self.count += len(data)
        return len(data)


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    home = tmp_path_factory.mktemp("bounded") / "home"
    store = Store(home)
    with store.create(session_id="big") as session:
        session.append("message", {"content": "start"}, role="user")
        for i in range(RESULTS):
            text = f"line {i} " + ("x" * 79 + "\n") * (SIZE // 80)
            session.append("tool_call", {"name": "read", "arguments": "{}", "call_id": f"c{i}"}, role="assistant")
            session.append("tool_result", {"call_id": f"c{i}", "content": text}, role="tool")
        session.append("message", {"content": "done", "usage": {"input_tokens": 5, "output_tokens": 2}}, "assistant")
    store.close()
    return home, "big"


def _peak(fn: Callable[[], object]) -> int:
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("fmt", ["md", "html", "bundle"])
def test_an_export_holds_one_payload_at_a_time(big: tuple[Path, str], fmt: str) -> None:
    home, sid = big
    store = Store(home)
    with store.open(sid, readonly=True) as session:
        sink = _Discard()
        peak = _peak(lambda: export_session(session, fmt, sink, all_branches=True))
    store.close()
    assert sink.count > RESULTS * SIZE  # every payload was written
    assert peak < BOUND, f"{fmt} export held {peak:,} bytes at once"


@pytest.mark.parametrize("args", [["stats", "big"], ["log", "big", "--full"]])
def test_summaries_of_a_session_hold_one_payload_at_a_time(big: tuple[Path, str], args: list[str]) -> None:
    from cli_support import ok

    home, _ = big
    # The command line imports a command's module on its first run (cli/
    # __init__'s lazy table): run it once first, so that what is measured is
    # what a run holds of the session, not the code it loads.
    ok(home, *args)
    said: list[str] = []
    peak = _peak(lambda: said.append(ok(home, *args)))
    assert said[0]  # it answered
    assert peak < BOUND, f"{' '.join(args)} held {peak:,} bytes at once"


def test_a_bundle_imports_in_bounded_memory(big: tuple[Path, str], tmp_path: Path) -> None:
    from agentlog.export import import_bundle

    home, sid = big
    store = Store(home)
    bundle = tmp_path / "big.jsonl"
    with store.open(sid, readonly=True) as session, open(bundle, "wb") as out:
        export_session(session, "bundle", out)
    store.close()
    target = Store(tmp_path / "target")
    peak = _peak(lambda: import_bundle(target, bundle))
    with target.open(sid) as copied:
        assert len(copied.entries()) == 2 * RESULTS + 2
    target.close()
    assert peak < 3 * BOUND, f"importing the bundle held {peak:,} bytes at once"
