"""Run one open+context in a fresh interpreter and report its peak RSS growth.

    python -m bench._probe agentlog <home> <session id> [reader|writer] [context|transcript]
    python -m bench._probe naive <session dir>
    python -m bench._probe inline <inline.jsonl>

Everything the op needs is imported first, so the growth is the op's own.

Two readings: ``ru_maxrss`` (getrusage) and the address space's own peak,
``VmHWM``, reset just before the op through /proc/self/clear_refs. They
differ when the parent was bigger: Linux carries ru_maxrss across fork and
exec, so a fresh child of a large parent starts with the parent's peak and
its ru_maxrss delta reads 0. VmHWM starts with the new address space.
"""

from __future__ import annotations

import json
import re
import resource
import sys
import time


def _status(field: str) -> int:
    with open("/proc/self/status") as f:
        match = re.search(field + r":\s+(\d+) kB", f.read())
    return int(match.group(1)) * 1024 if match else -1


def _reset_peak() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def main(argv: list[str]) -> None:
    import orjson  # noqa: F401  (imported before the baseline reading)

    from bench._measure import agentlog_op, inline_op, naive_op

    kind = argv[0]
    if kind == "agentlog":
        role = argv[3] if len(argv) > 3 else "reader"
        what = argv[4] if len(argv) > 4 else "context"
        op = agentlog_op(argv[1], argv[2], readonly=role == "reader", what=what)
    elif kind == "naive":
        op = naive_op(argv[1])
    elif kind == "inline":
        op = inline_op(argv[1])
    else:
        raise SystemExit(f"unknown probe {kind!r}")
    rss_before = _status("VmRSS")
    reset = _reset_peak()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    n = op()
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    hwm = _status("VmHWM")
    print(
        json.dumps(
            {
                "maxrss_before_kb": before,
                "maxrss_after_kb": after,
                "maxrss_delta_bytes": (after - before) * 1024,
                "rss_before_bytes": rss_before,
                "peak_rss_delta_bytes": hwm - rss_before if reset else None,
                "seconds": elapsed,
                "result_len": n,
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1:])
