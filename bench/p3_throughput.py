"""P3 — throughput against the latency bound (a benchmark, not a test).

    python bench/p3_throughput.py [--concurrency 4 16 32] [--urls 50 200 400] [--latency-ms 200]
                                  [--locks sqlite|redis]

N unique URLs of one provider (urlscan's platform, web), held by tokens of 2, 3 or 4 URLs each, are
recorded by the reconcile use case in-process: a SQLite store and, by default, SQLite locks on the
same file (the embedded default), or Redis locks. Every call takes the latency L, so with C calls
at once the best possible wall time is ceil(N / C) x L: the ratio printed is that bound over the
measured wall time (1.00 = every slot busy all the time, bookkeeping free).

Beside this pipeline (token workers = C, a token's URLs side by side, the provider bounded to C
calls) the same run measures the baseline: one pool of C token workers, each recording its token's
URLs one after another with no provider bound (the engine before per-provider concurrency).

A second table compares reconcile with its defaults (8 tokens in flight, the default provider bounds)
to the old defaults (4 token workers) on tokens as they come: an X post, a Telegram channel and a
website, GitHub repo or YouTube video each.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
import time
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from pathlib import Path

from _common import Table, build_engine, reconcile, sequential_unbounded, sleeping_registry  # noqa: I001  (bench/ on sys.path)

from social_recording.domain.urls import Platform, parse_canonical
from social_recording.locks import open_lock_manager
from social_recording.platforms.base import PROVIDER_OF
from social_recording.recording.concurrency import CallSlots
from social_recording.recording.job_pool import DEFAULT_MAX_WORKERS
from social_recording.recording.run_state import RunState
from social_recording.store.sqlite import SqliteStore

PROVIDER = "urlscan"  # the provider of Platform.WEB
WINDOW = (datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 2, tzinfo=UTC))
OLD_DEFAULT_WORKERS = 4
"""The reconcile job's token workers before per-provider concurrency (its URLs one after another)."""


def tokens_for(n_urls: int) -> dict[str, list[str]]:
    """Tokens of 2, 3, 4, 2, 3, 4, ... unique URLs (the last one takes what is left)."""
    urls = [f"https://site{i:05d}.example/p" for i in range(n_urls)]
    tokens: dict[str, list[str]] = {}
    i = 0
    while i < n_urls:
        size = 2 + len(tokens) % 3
        tokens[f"P3TOKEN{len(tokens):06d}"] = urls[i : i + size]
        i += size
    return tokens


def measure(n_urls: int, concurrency: int, latency: float, lock_url: str | None, *, baseline: bool) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="bench-p3-") as tmp:
        store = SqliteStore(Path(tmp) / "store.db")
        locks = open_lock_manager(lock_url or f"sqlite:///{Path(tmp) / 'store.db'}")
        registry, (gen,) = sleeping_registry(latency, [Platform.WEB])
        engine = build_engine(store, locks, registry, tokens_for(n_urls))
        calls = sequential_unbounded() if baseline else CallSlots({PROVIDER: concurrency})
        run = RunState(calls=calls)
        started = time.perf_counter()
        out = reconcile(engine, *WINDOW, max_workers=concurrency, run=run)
        wall = time.perf_counter() - started
        locks.close()
        store.close()
    ok = out.status_counts.get("ok", 0)
    if ok != n_urls or gen.calls != n_urls:
        raise SystemExit(f"P3: expected {n_urls} ok URLs and calls, got {out.status_counts} and {gen.calls} calls")
    bound = math.ceil(n_urls / concurrency) * latency
    return {"wall": wall, "bound": bound, "ratio": bound / wall, "peak": gen.peak}


MIXED = (Platform.X, Platform.TELEGRAM, Platform.WEB, Platform.GITHUB, Platform.YOUTUBE)


def mixed_tokens(n_urls: int) -> dict[str, list[str]]:
    """Tokens as they come: an X post, a Telegram channel and a website, GitHub repo or YouTube video."""
    third = {Platform.WEB: "https://mx{i}.example/p", Platform.GITHUB: "https://github.com/mx{i}/repo",
             Platform.YOUTUBE: "https://youtube.com/watch?v=mx{i:09d}"}
    tokens: dict[str, list[str]] = {}
    i = 0
    while 3 * len(tokens) < n_urls:
        i = len(tokens)
        kind = (Platform.WEB, Platform.GITHUB, Platform.YOUTUBE)[i % 3]
        tokens[f"P3MIX{i:06d}"] = [f"https://x.com/i/status/{990000 + i}", f"https://t.me/mixchan{i}",
                                   third[kind].format(i=i)]
    return tokens


def measure_defaults(n_urls: int, latency: float, lock_url: str | None, *, baseline: bool) -> dict[str, float]:
    """Reconcile with its defaults: 8 tokens in flight and the default provider bounds, or the old
    defaults (4 token workers, each token's URLs in sequence, no provider bound)."""
    tokens = mixed_tokens(n_urls)
    with tempfile.TemporaryDirectory(prefix="bench-p3-") as tmp:
        store = SqliteStore(Path(tmp) / "store.db")
        locks = open_lock_manager(lock_url or f"sqlite:///{Path(tmp) / 'store.db'}")
        registry, gens = sleeping_registry(latency, MIXED)
        engine = build_engine(store, locks, registry, tokens)
        calls = sequential_unbounded() if baseline else CallSlots()
        workers = OLD_DEFAULT_WORKERS if baseline else DEFAULT_MAX_WORKERS
        started = time.perf_counter()
        reconcile(engine, *WINDOW, max_workers=workers, run=RunState(calls=calls))
        wall = time.perf_counter() - started
        locks.close()
        store.close()
    urls = sum(len(u) for u in tokens.values())
    if sum(g.calls for g in gens) != urls:
        raise SystemExit(f"P3: expected {urls} calls, got {sum(g.calls for g in gens)}")
    if baseline:
        bound = math.ceil(urls / OLD_DEFAULT_WORKERS) * latency
    else:
        per_provider: dict[str, int] = {}
        for u in (u for us in tokens.values() for u in us):
            provider = PROVIDER_OF[parse_canonical(u).platform]
            per_provider[provider] = per_provider.get(provider, 0) + 1
        bound = max(math.ceil(n / calls.bound(p)) * latency for p, n in per_provider.items())
    return {"wall": wall, "bound": bound, "ratio": bound / wall, "urls": urls}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[4, 16, 32])
    parser.add_argument("--urls", type=int, nargs="+", default=[50, 200, 400])
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--locks", choices=("sqlite", "redis"), default="sqlite")
    parser.add_argument("--defaults-urls", type=int, nargs="*", default=[200],
                        help="URLs of the reconcile-with-its-defaults comparison (none: leave it out)")
    args = parser.parse_args(argv)
    if min(args.concurrency) < 1 or max(args.concurrency) > 32 or min(args.urls) < 1 or args.latency_ms <= 0:
        parser.error("--concurrency in 1..32, --urls >= 1, --latency-ms > 0")
    if any(n < 1 for n in args.defaults_urls):
        parser.error(f"--defaults-urls: each >= 1 (rounded up to whole tokens of 3 URLs), got {args.defaults_urls}")
    latency = args.latency_ms / 1000.0
    redis_cm: AbstractContextManager[str | None] = nullcontext(None)
    if args.locks == "redis":
        from test_support.redis_server import running_redis

        redis_cm = running_redis()
    table = Table("P3", f"ratio to the latency bound ceil(N/C) x {args.latency_ms:g} ms "
                        f"(SQLite store, {args.locks} locks; tokens of 2-4 URLs)",
                  ["calls at once C", "URLs N", "bound_s", "pipeline wall_s", "pipeline ratio", "peak",
                   "baseline wall_s", "baseline ratio", "peak "])
    with redis_cm as redis_url:
        for c in args.concurrency:
            for n in args.urls:
                new = measure(n, c, latency, redis_url, baseline=False)
                old = measure(n, c, latency, redis_url, baseline=True)
                table.add(c, n, new["bound"], new["wall"], new["ratio"], int(new["peak"]), old["wall"], old["ratio"],
                          int(old["peak"]))
        defaults = Table("P3", f"reconcile with its defaults, tokens of an X post, a t.me channel and a website / "
                               f"repo / video ({args.latency_ms:g} ms a call)",
                         ["URLs", "pipeline wall_s", "its bound_s", "ratio", "baseline wall_s", "its bound_s ",
                          "ratio ", "speed-up"])
        for n in args.defaults_urls:
            new = measure_defaults(n, latency, redis_url, baseline=False)
            old = measure_defaults(n, latency, redis_url, baseline=True)
            defaults.add(int(new["urls"]), new["wall"], new["bound"], new["ratio"], old["wall"], old["bound"],
                         old["ratio"], old["wall"] / new["wall"])
    table.notes.append("pipeline: C token workers, a token's URLs side by side, the provider bounded to C calls")
    table.notes.append("baseline: one pool of C token workers, each token's URLs one after another, no provider bound")
    table.print()
    if not args.defaults_urls:
        return 0
    defaults.notes.append(f"pipeline: {DEFAULT_MAX_WORKERS} tokens in flight, the default provider bounds (t.me 2 at "
                          "once is the slowest lane); its bound: the slowest provider's ceil(N_p / C_p) x latency")
    defaults.notes.append(f"baseline: the old defaults, {OLD_DEFAULT_WORKERS} token workers with their URLs in "
                          f"sequence; its bound: ceil(N / {OLD_DEFAULT_WORKERS}) x latency")
    defaults.print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
