"""Benchmark: generator calls and bookkeeping overhead of the recording engine (not a test).

    python bench/engine_calls.py --tokens N --urls K --procs P --latency-ms L [--per-token M]

N tokens share K canonical URLs (each token carries M of them, M = min(4, K) by default) and are
recorded by P OS processes at once, through the real engine (UrlRecorder + TokenProcessor) on a
temporary SQLite store and a redis-server this script starts itself. The generator is a counting
stub that sleeps a fixed latency, so the numbers measure the engine, not a provider.

Printed per mode:
- calls, unique URLs, calls/unique (the promise "never pay twice for one URL": goal exactly 1.00);
- median "total-sleep" per URL in ms = time in record_url minus the generator's own (measured) sleep
  (the issue's definition: lock waits included);
- median bookkeeping overhead per URL in ms = the same minus the time spent waiting for another
  holder's URL lock (the engine's own cost);
- median URL-lock wait and the wall time.

The same workload runs again with the dedupe gate and URL locks switched off
(`UrlRecorder(..., _unsafe_no_dedupe_no_lock=True)`, a benchmark-only switch) to show what they save.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import redis  # noqa: E402

from social_recording.domain.graph import GraphGroup, SocialGraph, SocialObject  # noqa: E402
from social_recording.domain.models import TokenProfile  # noqa: E402
from social_recording.domain.urls import Platform, parse_canonical  # noqa: E402
from social_recording.locks import open_lock_manager  # noqa: E402
from social_recording.platforms.base import GenerateContext, GenerateResult, GeneratorRegistry  # noqa: E402
from social_recording.recording.gate import DedupeGate  # noqa: E402
from social_recording.recording.processor import TokenProcessor  # noqa: E402
from social_recording.recording.url_recorder import RunState, UrlRecorder  # noqa: E402
from social_recording.recording.writer import GraphWriter  # noqa: E402
from social_recording.store.sqlite import SqliteStore  # noqa: E402

COUNT_KEY = "bench:calls"
URLS_KEY = "bench:called-urls"


class SleepingGenerator:
    """Counts calls in Redis (shared by all processes) and sleeps `latency` seconds per call."""

    def __init__(self, platform: Platform, redis_url: str, latency: float) -> None:
        self.platform = platform
        self._r = redis.Redis.from_url(redis_url)
        self._latency = latency
        self._lock = threading.Lock()
        self.slept: dict[tuple[str, str], float] = {}

    def generate(self, url: str, ctx: GenerateContext) -> GenerateResult:
        self._r.incr(COUNT_KEY)
        self._r.sadd(URLS_KEY, url)
        started = time.perf_counter()
        time.sleep(self._latency)
        with self._lock:
            self.slept[(ctx.token_address, url)] = (time.perf_counter() - started) * 1000.0
        host = parse_canonical(url).host
        author = SocialObject(platform=self.platform, platform_key=f"account:{host}", subtype="site")
        page = SocialObject(platform=self.platform, platform_key=url, subtype="page", metrics={"size": 1.0})
        return GenerateResult(SocialGraph(groups=[GraphGroup(ref="root", content=page, account=author)]),
                              attempted=True, requests=1)


class _Profiles:
    def __init__(self, profiles: dict[str, TokenProfile]) -> None:
        self._profiles = profiles

    def read(self, address: str) -> TokenProfile | None:
        return self._profiles.get(address)


def _worker(cfg: dict[str, Any], results: Any) -> None:
    store = SqliteStore(cfg["store_path"])
    locks = open_lock_manager(cfg["redis_url"])
    r = redis.Redis.from_url(cfg["redis_url"])
    generator = SleepingGenerator(Platform.WEB, cfg["redis_url"], cfg["latency"])
    registry = GeneratorRegistry.of({Platform.WEB: generator})
    recorder = UrlRecorder(store, locks, DedupeGate(store), GraphWriter(store), registry, enable_paid=True,
                           _unsafe_no_dedupe_no_lock=cfg["unsafe"])
    profiles = {a: TokenProfile(address=a, symbol=a, image="https://img.example/x.png", urls=urls)
                for a, urls in cfg["tokens"]}
    processor = TokenProcessor(store, locks, _Profiles(profiles), recorder)
    r.incr("bench:ready")
    while int(r.get("bench:ready") or 0) < cfg["procs"]:
        time.sleep(0.005)
    run = RunState()
    rows = []
    for address, _ in cfg["tokens"]:
        out = processor.record(address, None, run)
        for u in out.urls:
            slept = generator.slept.get((address, u.url), 0.0)
            rows.append((str(u.status), u.took_ms, u.waited_ms, slept))
    results.put(rows)
    locks.close()
    store.close()
    r.close()


@dataclass
class ModeResult:
    calls: int
    unique: int
    overhead_ms: float
    """Median of (time in record_url - generator sleep - URL-lock wait): the engine's own bookkeeping."""
    gross_ms: float
    """Median of (time in record_url - generator sleep): the issue's definition, lock waits included."""
    wait_ms: float
    wall_s: float
    statuses: dict[str, int]


def run_mode(redis_url: str, args: argparse.Namespace, *, unsafe: bool) -> ModeResult:
    r = redis.Redis.from_url(redis_url)
    r.flushdb()
    urls = [f"https://bench.example/shared/{k}" for k in range(args.urls)]
    per_token = args.per_token or min(4, args.urls)
    tokens = [(f"TOKEN{i:05d}", [urls[(i + j) % args.urls] for j in range(per_token)]) for i in range(args.tokens)]
    with tempfile.TemporaryDirectory(prefix="bench-engine-") as tmp:
        store_path = str(Path(tmp) / "store.db")
        SqliteStore(store_path).close()
        ctx = mp.get_context("spawn")
        results = ctx.Queue()
        procs = []
        for p in range(args.procs):
            cfg = {"store_path": store_path, "redis_url": redis_url, "latency": args.latency_ms / 1000.0,
                   "unsafe": unsafe, "procs": args.procs, "tokens": tokens[p::args.procs]}
            procs.append(ctx.Process(target=_worker, args=(cfg, results)))
        started = time.perf_counter()
        for proc in procs:
            proc.start()
        rows: list[tuple[str, float, float, float]] = []
        for _ in procs:
            rows.extend(results.get(timeout=600))
        for proc in procs:
            proc.join(timeout=60)
        wall = time.perf_counter() - started
    calls = int(r.get(COUNT_KEY) or 0)
    unique = int(r.scard(URLS_KEY))
    r.close()
    statuses: dict[str, int] = {}
    for status, *_ in rows:
        statuses[status] = statuses.get(status, 0) + 1
    return ModeResult(
        calls=calls,
        unique=unique,
        overhead_ms=statistics.median(took - waited - slept for _, took, waited, slept in rows) if rows else 0.0,
        gross_ms=statistics.median(took - slept for _, took, _, slept in rows) if rows else 0.0,
        wait_ms=statistics.median(waited for _, _, waited, _ in rows) if rows else 0.0,
        wall_s=wall,
        statuses=statuses,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tokens", type=int, default=40, help="tokens (N)")
    parser.add_argument("--urls", type=int, default=8, help="distinct shared URLs (K)")
    parser.add_argument("--procs", type=int, default=4, help="OS processes (P)")
    parser.add_argument("--latency-ms", type=float, default=50.0, help="generator latency per call (L)")
    parser.add_argument("--per-token", type=int, default=0, help="URLs per token (default min(4, K))")
    args = parser.parse_args(argv)
    for name in ("tokens", "urls", "procs"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1, got {getattr(args, name)}")
    if args.latency_ms < 0 or not 0 <= args.per_token <= args.urls:
        parser.error("--latency-ms must be >= 0 and --per-token in 0..--urls")

    from social_recording_tests.redis_server import running_redis

    print(f"engine_calls: tokens={args.tokens} urls={args.urls} per_token={args.per_token or min(4, args.urls)} "
          f"procs={args.procs} latency_ms={args.latency_ms:g} (pid {os.getpid()})")
    with running_redis() as redis_url:
        engine = run_mode(redis_url, args, unsafe=False)
        unsafe = run_mode(redis_url, args, unsafe=True)
    header = f"{'mode':<24}{'calls':>7}{'unique':>8}{'calls/unique':>14}{'total-sleep ms p50':>20}" \
             f"{'overhead_ms p50':>17}{'lock_wait_ms p50':>18}{'wall_s':>8}  statuses"
    print(header)
    for label, m in (("engine (dedupe + locks)", engine), ("no dedupe / no lock", unsafe)):
        ratio = m.calls / m.unique if m.unique else 0.0
        print(f"{label:<24}{m.calls:>7}{m.unique:>8}{ratio:>14.2f}{m.gross_ms:>20.2f}{m.overhead_ms:>17.2f}"
              f"{m.wait_ms:>18.1f}"
              f"{m.wall_s:>8.2f}  {dict(sorted(m.statuses.items()))}")
    saved = unsafe.calls - engine.calls
    print(f"calls saved by dedupe + URL locks: {saved} of {unsafe.calls} "
          f"({(saved / unsafe.calls * 100) if unsafe.calls else 0:.0f}%)")
    return 0 if engine.unique and engine.calls == engine.unique else 1


if __name__ == "__main__":
    sys.exit(main())
