"""Run one open+context in a fresh interpreter and report its ru_maxrss growth.

    python -m bench._probe agentlog <home> <session id> [reader|writer] [context|transcript]
    python -m bench._probe naive <session dir>
    python -m bench._probe inline <inline.jsonl>

Everything the op needs is imported first, so the growth is the op's own.
"""

from __future__ import annotations

import json
import resource
import sys
import time


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
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    n = op()
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"maxrss_before_kb": before, "maxrss_after_kb": after,
                      "maxrss_delta_bytes": (after - before) * 1024,
                      "seconds": elapsed, "result_len": n}))


if __name__ == "__main__":
    main(sys.argv[1:])
