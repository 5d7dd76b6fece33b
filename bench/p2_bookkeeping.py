"""P2 — bookkeeping per URL at 1 and 4 threads (a benchmark, not a test).

    python bench/p2_bookkeeping.py [--threads 1 4] [--urls 400] [--latency-ms 50] [--locks redis sqlite]

Bookkeeping is what recording a URL costs beside the provider's own answer time: the time spent in
`record_url` minus the time the (stub) provider call slept — the token and URL locks, their
renewal, the element and URL-state reads, the gate, and the one write transaction. T threads record
tokens of 2 unique URLs (no URL is shared, so no lock is ever waited for) one URL at a time each, so
exactly T URLs are in flight; the store is a SQLite file and the locks are Redis (production) or the
store's own SQLite file (the embedded default).

Beside it, in the same run, the floor: the same workload with the dedupe gate and every lock switched
off (a benchmark-only switch), i.e. the write transaction and the engine's Python alone.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

from _common import Table, build_engine, mean, median, percentile, sleeping_registry  # noqa: I001

from social_recording.domain.urls import Platform
from social_recording.locks import open_lock_manager
from social_recording.recording.concurrency import CallSlots
from social_recording.recording.run_state import RunState
from social_recording.store.sqlite import SqliteStore


def measure(threads: int, n_urls: int, latency: float, lock_url: str | None, *, floor: bool) -> list[float]:
    """Per-URL bookkeeping in ms (time in record_url minus the provider call's own sleep)."""
    with tempfile.TemporaryDirectory(prefix="bench-p2-") as tmp:
        store = SqliteStore(Path(tmp) / "store.db")
        locks = open_lock_manager(lock_url or f"sqlite:///{Path(tmp) / 'store.db'}")
        if lock_url is not None and lock_url.startswith("redis"):
            import redis

            redis.Redis.from_url(lock_url).flushdb()
        registry, (gen,) = sleeping_registry(latency, [Platform.WEB])
        tokens = {f"P2TOKEN{i:06d}": [f"https://p2site{2 * i}.example/a", f"https://p2site{2 * i + 1}.example/b"]
                  for i in range(max(1, n_urls // 2))}
        engine = build_engine(store, locks, registry, tokens, unsafe=floor)
        run = RunState(calls=CallSlots(per_token=1))  # T threads = T URLs in flight
        with ThreadPoolExecutor(max_workers=threads) as pool:
            outcomes = list(pool.map(lambda a: engine.processor.record(a, None, run), list(tokens)))
        locks.close()
        store.close()
    rows = [u for o in outcomes for u in o.urls]
    if not all(str(u.status) == "ok" for u in rows):
        raise SystemExit(f"P2: not every URL was recorded ok: {run.status_counts()}")
    return [u.took_ms - gen.slept_ms.get((u.token, u.url), 0.0) for u in rows]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--urls", type=int, default=400)
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--locks", nargs="+", choices=("redis", "sqlite"), default=["redis", "sqlite"])
    args = parser.parse_args(argv)
    if min(args.threads) < 1 or args.urls < 2 or args.latency_ms < 0:
        parser.error("--threads >= 1, --urls >= 2, --latency-ms >= 0")
    table = Table("P2", f"bookkeeping per URL in ms (time in record_url minus the provider's {args.latency_ms:g} ms; "
                        f"{args.urls} URLs, SQLite store)",
                  ["locks", "threads", "p50 ms", "mean ms", "p90 ms", "floor p50", "floor mean"])
    with ExitStack() as stack:
        for kind in args.locks:
            lock_url: str | None = None
            if kind == "redis":
                from social_recording_tests.redis_server import running_redis

                lock_url = stack.enter_context(running_redis())
            for t in args.threads:
                measure(t, min(40, args.urls), args.latency_ms / 1000.0, lock_url, floor=False)  # warm up
                ms = measure(t, args.urls, args.latency_ms / 1000.0, lock_url, floor=False)
                fl = measure(t, args.urls, args.latency_ms / 1000.0, lock_url, floor=True)
                table.add(kind, t, median(ms), mean(ms), percentile(ms, 0.9), median(fl), mean(fl))
    table.notes.append("floor: the same workload with the dedupe gate and every lock switched off "
                       "(the write transaction and the engine's Python alone)")
    table.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
