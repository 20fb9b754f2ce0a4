"""Shared pieces: an I/O-counting fs layer, statistics, cache eviction, machine facts."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
import threading
from collections.abc import Iterable

from agentlog._fs import OsFs

__all__ = [
    "CountingFs",
    "OsCalls",
    "code_version",
    "describe_machine",
    "evict",
    "fmt_bytes",
    "fmt_s",
    "machine",
    "median",
    "pct",
    "tree_files",
]


class CountingFs(OsFs):
    """OsFs that counts what the backend does: opens, preads and their bytes, syncs.

    Counters are guarded by a lock because group commit runs appends from
    several threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.opens = 0
        self.preads = 0
        self.bytes_read = 0
        self.bytes_written = 0
        self.writes = 0
        self.fsyncs = 0
        self.fdatasyncs = 0
        self.dir_fsyncs = 0
        self.stats = 0
        self.listdirs = 0

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return {k: v for k, v in vars(self).items() if isinstance(v, int)}

    @property
    def syncs(self) -> int:
        return self.fsyncs + self.fdatasyncs + self.dir_fsyncs

    def _bump(self, name: str, n: int = 1) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + n)

    def open(self, path: str, flags: int, mode: int = 0o600) -> int:
        self._bump("opens")
        return super().open(path, flags, mode)

    def pread(self, fd: int, size: int, offset: int, path: str = "?") -> bytes:
        data = super().pread(fd, size, offset, path)
        with self._lock:
            self.preads += 1
            self.bytes_read += len(data)
        return data

    def write(self, fd: int, data: bytes, path: str = "?") -> None:
        super().write(fd, data, path)
        with self._lock:
            self.writes += 1
            self.bytes_written += len(data)

    def fsync(self, fd: int, path: str = "?") -> None:
        super().fsync(fd, path)
        self._bump("fsyncs")

    def fdatasync(self, fd: int, path: str = "?") -> None:
        super().fdatasync(fd, path)
        self._bump("fdatasyncs")

    def fsync_dir(self, path: str) -> None:
        super().fsync_dir(path)
        self._bump("dir_fsyncs")

    def stat(self, path: str) -> os.stat_result:
        self._bump("stats")
        return super().stat(path)

    def listdir(self, path: str) -> list[str]:
        self._bump("listdirs")
        return super().listdir(path)

    def scandir(self, path: str):
        self._bump("listdirs")
        return super().scandir(path)


class OsCalls:
    """Count opens and stat-family calls made through Python's os and open().

    Used around listings, where some existence checks bypass the fs layer;
    both sides are counted the same way."""

    def __init__(self) -> None:
        self.opens = 0
        self.stats = 0

    def __enter__(self) -> OsCalls:
        import builtins
        import io

        self._saved = (os.open, os.stat, os.lstat, builtins.open, io.open)
        real_open, real_stat, real_lstat, real_bopen, _ = self._saved

        def c_open(*a, **k):
            self.opens += 1
            return real_open(*a, **k)

        def c_bopen(*a, **k):
            self.opens += 1
            return real_bopen(*a, **k)

        def c_stat(*a, **k):
            self.stats += 1
            return real_stat(*a, **k)

        def c_lstat(*a, **k):
            self.stats += 1
            return real_lstat(*a, **k)

        os.open, os.stat, os.lstat = c_open, c_stat, c_lstat
        builtins.open = io.open = c_bopen
        return self

    def __exit__(self, *exc: object) -> None:
        import builtins
        import io

        os.open, os.stat, os.lstat, builtins.open, io.open = self._saved


# --- statistics ------------------------------------------------------------------
def pct(values: Iterable[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank on sorted values."""
    s = sorted(values)
    if not s:
        return float("nan")
    i = min(len(s) - 1, max(0, round(q * (len(s) - 1))))
    return s[i]


def median(values: Iterable[float]) -> float:
    return pct(values, 0.5)


# --- formatting -------------------------------------------------------------------
def fmt_s(seconds: float) -> str:
    if seconds != seconds:
        return "n/a"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} us"
    if seconds < 1:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def fmt_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(n) < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GB"


# --- page cache -------------------------------------------------------------------
def tree_files(root: str) -> list[str]:
    out = []
    for dirpath, _dirs, files in os.walk(root):
        out.extend(os.path.join(dirpath, f) for f in files)
    return out


def evict(paths: Iterable[str]) -> int:
    """Drop these files' pages from the page cache (a cold read follows).

    Per-file POSIX_FADV_DONTNEED, so other users of the machine keep their
    cache; dirty pages are written first, as DONTNEED skips them."""
    n = 0
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            continue
        try:
            os.fdatasync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            n += 1
        except OSError:
            pass
        finally:
            os.close(fd)
    return n


# --- the machine ------------------------------------------------------------------
def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _ram_bytes() -> int:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _filesystem(path: str) -> str:
    try:
        out = subprocess.run(["df", "-T", path], capture_output=True, text=True, check=True).stdout
        fields = out.strip().splitlines()[-1].split()
        fstype, device = fields[1], fields[0]
    except (OSError, subprocess.CalledProcessError, IndexError):
        fstype, device = "unknown", "?"
    opts = ""
    try:
        with open("/proc/mounts") as f:
            best = ""
            real = os.path.realpath(path)
            for line in f:
                parts = line.split()
                if len(parts) >= 4 and real.startswith(parts[1]) and len(parts[1]) > len(best):
                    if parts[0] == device or parts[2] == fstype:
                        best, opts = parts[1], parts[3]
    except OSError:
        pass
    return f"{fstype} on {device}" + (f" ({opts})" if opts else "")


def code_version(root: str) -> str:
    """The commit measured, marked dirty when src/ has uncommitted changes."""
    try:
        rev = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", "src"], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return rev + ("+dirty" if dirty else "")


def machine(bench_dir: str) -> dict[str, object]:
    return {
        "cpu": _cpu_model(),
        "cores": os.cpu_count(),
        "ram_bytes": _ram_bytes(),
        "filesystem": _filesystem(bench_dir),
        "python": sys.version.split()[0],
        "kernel": platform.release(),
        "load_avg": [round(x, 2) for x in os.getloadavg()],
    }


def describe_machine(m: dict[str, object]) -> str:
    ram = fmt_bytes(float(m["ram_bytes"]))  # type: ignore[arg-type]
    return (
        f"{m['cpu']}, {m['cores']} cores, {ram} RAM; {m['filesystem']}; "
        f"Python {m['python']}; Linux {m['kernel']}; load {m['load_avg']}"
    )
