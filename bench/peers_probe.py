"""Browse one session in a fresh interpreter and report its peak RSS.

    python -m bench.peers_probe build <peer key> <bench dir> <events> <target bytes>
    python -m bench.peers_probe browse <peer key> <location> <session id> <context length> <pages> <page size>

``build`` makes (or finds cached) the peer's copy of the big session and
prints its location: building a 1 GB session takes gigabytes in some
peers (a whole-file JSON is one document), which must not become the
parent's peak.

Everything the browse needs is imported first; then the peak is reset
(``/proc/self/clear_refs``) and the browse runs: open, what resuming
loads, the newest events shown, ``pages`` page-backs of ``page`` events.
Reported: ``ru_maxrss`` (the process's peak, imports included), the
address space's own peak ``VmHWM`` and its growth over the RSS just
before the browse. ``bench.peers_rss`` starts this probe from a small
shell, so that ``ru_maxrss`` is this process's own and not the peak of
the large process it would otherwise be exec'd from.
"""

from __future__ import annotations

import json
import resource
import sys
import time

from ._probe import _reset_peak, _status


def main(argv: list[str]) -> None:
    from .peers_stores import by_key

    if argv[0] == "build":
        from .peers_datasets import big_set

        peer = by_key(argv[1])
        loc, info = big_set(argv[2], peer, int(argv[3]), int(argv[4]))
        print(json.dumps({"loc": loc, "sid": info["sid"], "bytes": peer.disk_bytes(loc)}))
        return
    key, loc, sid = argv[1], argv[2], argv[3]
    context_len, pages, page = int(argv[4]), int(argv[5]), int(argv[6])
    peer = by_key(key)
    peer.preload()
    rss_before = _status("VmRSS")
    reset = _reset_peak()
    t0 = time.perf_counter()
    result = peer.browse(loc, sid, context_len, pages, page)
    elapsed = time.perf_counter() - t0
    hwm = _status("VmHWM")
    print(
        json.dumps(
            {
                "maxrss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                "vmhwm_bytes": hwm,
                "rss_before_bytes": rss_before,
                "peak_growth_bytes": hwm - rss_before if reset else None,
                "seconds": elapsed,
                **result,
            }
        )
    )


if __name__ == "__main__":
    main(sys.argv[1:])
