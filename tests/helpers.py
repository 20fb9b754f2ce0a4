"""Small tools the storage tests share: byte surgery, paths, child processes.

Run as a script it is the child process of the crash and lock tests:

    python tests/helpers.py writer HOME SESSION SEED THREADS
    python tests/helpers.py holder HOME SESSION
    python tests/helpers.py racer  HOME SESSION
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

from agentlog import RecoveryWarning, Store
from agentlog._fs import OsFs
from agentlog.backends.files.index import ENTRY_SIZE, HEADER_SIZE, pack_slot, unpack_slot

TESTS_DIR = Path(__file__).resolve().parent

# Big enough to be stored as a blob under the small threshold the tests use.
BLOB_THRESHOLD = 1024


# --- where things are ----------------------------------------------------------
def session_dir(store: Store, session_id: str) -> Path:
    return Path(store.home) / "sessions" / session_id


def chunk_path(store: Store, session_id: str, number: int = 0) -> Path:
    return session_dir(store, session_id) / "chunks" / f"{number:06d}.jsonl"


def chunk_paths(store: Store, session_id: str) -> list[Path]:
    return sorted((session_dir(store, session_id) / "chunks").glob("[0-9]*.jsonl"))


def index_path(store: Store, session_id: str) -> Path:
    return session_dir(store, session_id) / "index.bin"


def index_at(i: int) -> int:
    """The byte offset of index entry ``i`` (after the header)."""
    return HEADER_SIZE + i * ENTRY_SIZE


_SLOT_FIELDS = ("id", "parent", "ns", "offset", "length", "chunk", "kind", "role", "flags")


def rewrite_index_entry(path: Path, i: int, **changes: object) -> None:
    """Rewrite fields of index entry ``i`` with a valid checksum (a wrong but
    intact entry, as a bug or a stale file would leave it)."""
    data = bytearray(path.read_bytes())
    fields = unpack_slot(bytes(data[index_at(i) : index_at(i + 1)]))
    assert fields is not None, "the entry is already damaged"
    raw = dict(zip(_SLOT_FIELDS, fields, strict=True)) | changes
    data[index_at(i) : index_at(i + 1)] = pack_slot(tuple(raw[k] for k in _SLOT_FIELDS))
    path.write_bytes(bytes(data))


def head_path(store: Store, session_id: str) -> Path:
    return session_dir(store, session_id) / "HEAD"


def blob_path(store: Store, session_id: str, digest: str) -> Path:
    return session_dir(store, session_id) / "blobs" / digest.removeprefix("sha256:")


def lock_path(store: Store, session_id: str) -> Path:
    return Path(store.home) / "locks" / f"{session_id}.lock"


def reopen_store(store: Store) -> Store:
    """The same sessions through a new Store, as a restarted process sees them
    (a memory store lives in its one object: it is its own reopening)."""
    if store.url.startswith("memory:"):
        return store
    return Store(store.url, durability=store.durability, blob_threshold=store.blob_threshold)


# --- byte surgery --------------------------------------------------------------
def line_spans(path: Path) -> list[tuple[int, int]]:
    """(offset, length) of every line, newline included; a torn last line too."""
    data = path.read_bytes()
    spans, pos = [], 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        end = len(data) if nl < 0 else nl + 1
        spans.append((pos, end - pos))
        pos = end
    return spans


def flip_byte(path: Path, offset: int, mask: int = 0x01) -> None:
    """Flip bits of one byte in place, the way a bad sector or bus does."""
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)
        assert byte, f"{path} has no byte {offset}"
        f.seek(offset)
        f.write(bytes([byte[0] ^ mask]))


def truncate(path: Path, size: int) -> None:
    with open(path, "r+b") as f:
        f.truncate(size)


def cut_tail(path: Path, nbytes: int) -> None:
    """Drop the last ``nbytes`` of a file, as a crash mid-write leaves it."""
    truncate(path, path.stat().st_size - nbytes)


def tree(root: Path) -> dict[str, int]:
    """Every path under ``root`` with its size (-1 for directories)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames:
            out[os.path.relpath(os.path.join(dirpath, name), root)] = -1
        for name in filenames:
            full = os.path.join(dirpath, name)
            out[os.path.relpath(full, root)] = os.path.getsize(full)
    return out


def open_quietly(store: Store, session_id: str, readonly: bool = False):
    """Open a session, returning it with the RecoveryWarnings it raised."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RecoveryWarning)
        session = store.open(session_id, readonly=readonly)
    return session, [w for w in caught if issubclass(w.category, RecoveryWarning)]


def errors_of(problems) -> list:
    return [p for p in problems if p.severity == "error"]


class RecordingFs(OsFs):
    """The real file system, noting which bytes of which files were read."""

    def __init__(self) -> None:
        self.opened: list[str] = []
        self.preads: list[tuple[str, int, int]] = []

    def open(self, path: str, flags: int, mode: int = 0o600) -> int:
        self.opened.append(path)
        return super().open(path, flags, mode)

    def pread(self, fd: int, size: int, offset: int, path: str = "?") -> bytes:
        self.preads.append((path, offset, size))
        return super().pread(fd, size, offset, path)

    def reads_of(self, path: Path) -> list[tuple[int, int]]:
        return [(off, size) for p, off, size in self.preads if p == str(path)]

    def clear(self) -> None:
        self.opened.clear()
        self.preads.clear()


# --- child processes -----------------------------------------------------------
def spawn(role: str, *args: Any) -> subprocess.Popen:
    """Start this file as a child in ``role``; talk to it by lines."""
    return subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), role, *map(str, args)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
    )


def expect_line(proc: subprocess.Popen, prefix: str) -> str:
    """The child's next line, which must start with ``prefix``."""
    line = proc.stdout.readline()
    if not line.startswith(prefix):
        proc.kill()
        _, err = proc.communicate()
        raise AssertionError(f"expected {prefix!r} from child, got {line!r}; stderr:\n{err}")
    return line[len(prefix) :].strip()


def _writer(home: str, session_id: str, seed: str, threads: str) -> None:
    """Append forever; print each id once append() has returned (acknowledged)."""
    import random
    import threading

    rng = random.Random(int(seed))
    # Started ahead of its turn: wait until the previous writer is gone.
    print("loaded", flush=True)
    sys.stdin.readline()
    store = Store(home, blob_threshold=BLOB_THRESHOLD, chunk_size=64 * 1024)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RecoveryWarning)
        session = store.open(session_id) if store.exists(session_id) else store.create(session_id=session_id)
    out = threading.Lock()
    print("ready", flush=True)

    def loop(worker: int) -> None:
        r = random.Random(rng.random())
        n = 0
        while True:
            n += 1
            choice = r.random()
            if choice < 0.5:
                events = [session.append("message", {"w": worker, "n": n}, role="user")]
            elif choice < 0.7:
                events = [
                    session.append(
                        "tool_result", {"w": worker, "n": n, "out": "b" * r.randint(1100, 9000)}, role="tool"
                    )
                ]
            else:
                # The role spells the member's place, so a checker can see a
                # half batch from the index alone.
                size = r.randint(2, 5)
                events = session.append_many(
                    ("message", {"w": worker, "n": n, "big": "x" * (3000 if i == 1 else 1)}, f"batch.{size}.{i}")
                    for i in range(size)
                )
            with out:
                sys.stdout.write("".join(f"ack {e.id}\n" for e in events))
                sys.stdout.flush()

    workers = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(int(threads))]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


def _holder(home: str, session_id: str) -> None:
    """Hold the writer's lease; append on request; exit when told or on EOF."""
    store = Store(home)
    session = store.open(session_id)
    print(f"ready {os.getpid()}", flush=True)
    for line in sys.stdin:
        words = line.split()
        if words and words[0] == "append":
            ids = [session.append("message", {"i": i}, role="user").id for i in range(int(words[1]))]
            print("ids " + " ".join(ids), flush=True)
        elif words and words[0] == "exit":
            break
    session.close()
    print("closed", flush=True)


def _racer(home: str, session_id: str) -> None:
    """Wait for 'go', then try to take the writer; report, and hold if won."""
    from agentlog import SessionLocked

    store = Store(home)
    print("ready", flush=True)
    sys.stdin.readline()
    try:
        session = store.open(session_id)
    except SessionLocked as exc:
        print(f"locked {exc.holder}", flush=True)
        return
    print("won", flush=True)
    sys.stdin.readline()
    session.close()


if __name__ == "__main__":
    role, *rest = sys.argv[1:]
    {"writer": _writer, "holder": _holder, "racer": _racer}[role](*rest)


def retry_stair(store: Store, session_id: str, steps: int) -> None:
    """A session whose chain goes on through the *older* child at every
    step, the newer one a one-event retry, with HEAD on the first retry:
    the shape that drew a tree a level deeper per step."""
    with store.create(session_id=session_id) as s:
        node = s.append("message", {"content": "n0"}, role="user")
        first_leaf = None
        for i in range(steps):
            following = s.append("message", {"content": f"n{i + 1}"}, role="user")
            s.select(node.id)
            leaf = s.append("message", {"content": f"leaf{i}"}, role="assistant")
            first_leaf = first_leaf or leaf.id
            s.select(following.id)
            node = following
        s.append("message", {"content": "end"}, role="assistant")
        assert first_leaf is not None
        s.checkout(first_leaf)
