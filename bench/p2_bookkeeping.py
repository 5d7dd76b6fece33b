"""P2 — bookkeeping per URL at 1 and 4 threads, with the real clients and the shared rate limiter
(a benchmark, not a test).

    python bench/p2_bookkeeping.py [--threads 1 4] [--urls 400] [--latency-ms 20] [--locks redis sqlite]

Bookkeeping is what recording a URL costs beside the provider's own answer: the time spent in
`record_url` minus the time spent inside the (sandbox) provider answering its requests. Everything
on our side of the wire counts: the token and URL locks and their renewal, the element and
URL-state reads, the gate, the shared rate limiter asked before every request, the real GitHub
client and generator (request building, the redirect guard, parsing, the graph), and the one
write transaction. T threads record tokens of 2 unique GitHub repositories (no URL is shared, so
no lock is ever waited for) one URL at a time each, so exactly T URLs are in flight; the store is
a SQLite file; the locks and the limiter are on Redis (production) or on the store's own SQLite
file (the embedded default). The limiter enforces a rate high enough never to hold a request, so
what it costs is its bookkeeping alone.

Beside it, in the same run, the floor: the same workload with the dedupe gate, every lock and the
limiter switched off (a benchmark-only switch), i.e. the client, the write transaction and the
engine's Python alone. On Redis it also counts the commands the server ran per URL (INFO
commandstats): the lock and limiter round trips.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import httpx
from _common import Table, build_engine, mean, median, percentile  # noqa: I001
from pydantic import SecretStr

from social_recording.locks import open_lock_manager
from social_recording.locks.rate_limits import open_rate_limiter
from social_recording.outbound.limits import Rate
from social_recording.platforms.base import GenerateContext, GenerateResult, Generator, ProviderKeys
from social_recording.platforms.registry import build_registry
from social_recording.recording.concurrency import CallSlots
from social_recording.recording.run_state import RunState
from social_recording.sandbox.ledger import Ledger
from social_recording.sandbox.scenario import Scenario
from social_recording.sandbox.transport import SandboxTransport, sandbox_resolve_host
from social_recording.store.sqlite import SqliteStore

NEVER_HOLDS = (Rate(1_000_000, 1),)
"""The limiter counts every request against this rate, which no run here can reach."""


class ProviderClock:
    """Time spent inside the provider (the sandbox transport) per thread, read per URL."""

    def __init__(self) -> None:
        self._local = threading.local()

    def reset(self) -> None:
        self._local.spent = 0.0

    def add(self, seconds: float) -> None:
        self._local.spent = getattr(self._local, "spent", 0.0) + seconds

    def spent_ms(self) -> float:
        return float(getattr(self._local, "spent", 0.0)) * 1000.0


class TimedTransport(httpx.BaseTransport):
    """The sandbox transport, its time counted as the provider's."""

    def __init__(self, inner: httpx.BaseTransport, clock: ProviderClock) -> None:
        self._inner = inner
        self._clock = clock

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        started = time.perf_counter()
        try:
            response = self._inner.handle_request(request)
            response.read()
            return response
        finally:
            self._clock.add(time.perf_counter() - started)

    def close(self) -> None:
        self._inner.close()


@dataclasses.dataclass
class TimedGenerator:
    """The real generator; records, per (token, URL), how long its provider took."""

    inner: Generator
    clock: ProviderClock
    provider_ms: dict[tuple[str, str], float]

    def generate(self, url: str, ctx: GenerateContext) -> GenerateResult:
        self.clock.reset()
        try:
            return self.inner.generate(url, ctx)
        finally:
            self.provider_ms[(ctx.token_address, url)] = self.clock.spent_ms()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def measure(threads: int, n_urls: int, latency_ms: int, lock_url: str | None, *, floor: bool
            ) -> tuple[list[float], float | None]:
    """Per-URL bookkeeping in ms, and the Redis commands per URL (None without Redis)."""
    with tempfile.TemporaryDirectory(prefix="bench-p2-") as tmp, ExitStack() as stack:
        store = SqliteStore(Path(tmp) / "store.db")
        stack.callback(store.close)
        lock_url = lock_url or f"sqlite:///{Path(tmp) / 'store.db'}"
        locks = open_lock_manager(lock_url)
        stack.callback(locks.close)
        redis_client = None
        if lock_url.startswith("redis"):
            import redis

            redis_client = redis.Redis.from_url(lock_url)
            redis_client.flushdb()
        tokens = {f"P2TOKEN{i:06d}": [f"https://github.com/p2org{i}/repo-a", f"https://github.com/p2org{i}/repo-b"]
                  for i in range(max(1, n_urls // 2))}
        clock = ProviderClock()
        scenario = Scenario.model_validate({"tokens": [], "default_latency_ms": latency_ms})
        transport = TimedTransport(SandboxTransport(scenario, Ledger(Path(tmp) / "ledger.jsonl")), clock)
        limiter = None if floor else open_rate_limiter(lock_url, {"github": NEVER_HOLDS})
        if limiter is not None:
            stack.callback(limiter.close)
        registry = build_registry(ProviderKeys(github_token=SecretStr("p2-token")), transport=transport,
                                  resolve_host=sandbox_resolve_host, limiter=limiter)
        provider_ms: dict[tuple[str, str], float] = {}
        registry = dataclasses.replace(registry, generators={
            p: TimedGenerator(g, clock, provider_ms) for p, g in registry.generators.items()})
        engine = build_engine(store, locks, registry, tokens, unsafe=floor)
        run = RunState(calls=CallSlots(per_token=1))  # T threads = T URLs in flight
        before = _redis_calls(redis_client)
        with ThreadPoolExecutor(max_workers=threads) as pool:
            outcomes = list(pool.map(lambda a: engine.processor.record(a, None, run), list(tokens)))
        after = _redis_calls(redis_client)
    rows = [u for o in outcomes for u in o.urls]
    if not all(str(u.status) == "ok" for u in rows):
        raise SystemExit(f"P2: not every URL was recorded ok: {run.status_counts()}")
    commands = None if before is None or after is None else (after - before) / len(rows)
    return [u.took_ms - provider_ms[(u.token, u.url)] for u in rows], commands


def _redis_calls(client: Any) -> int | None:
    """Commands the Redis server has run (INFO commandstats), scripts counted once each."""
    if client is None:
        return None
    stats = client.info("commandstats")
    return sum(int(v["calls"]) for k, v in stats.items() if k not in ("cmdstat_info",))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--urls", type=int, default=400)
    parser.add_argument("--latency-ms", type=int, default=20)
    parser.add_argument("--locks", nargs="+", choices=("redis", "sqlite"), default=["redis", "sqlite"])
    args = parser.parse_args(argv)
    if min(args.threads) < 1 or args.urls < 2 or args.latency_ms < 0:
        parser.error("--threads >= 1, --urls >= 2, --latency-ms >= 0")
    table = Table("P2", f"bookkeeping per URL in ms (time in record_url minus the provider's own; real GitHub client "
                        f"and rate limiter, provider answering in {args.latency_ms} ms, {args.urls} URLs, SQLite store)",
                  ["locks", "threads", "p50 ms", "mean ms", "p90 ms", "Redis cmds/URL", "floor p50", "floor mean",
                   "load"])
    with ExitStack() as stack:
        for kind in args.locks:
            lock_url: str | None = None
            if kind == "redis":
                from social_recording_tests.redis_server import running_redis

                lock_url = stack.enter_context(running_redis())
            for t in args.threads:
                measure(t, min(40, args.urls), args.latency_ms, lock_url, floor=False)  # warm up
                ms, commands = measure(t, args.urls, args.latency_ms, lock_url, floor=False)
                fl, _ = measure(t, args.urls, args.latency_ms, lock_url, floor=True)
                table.add(kind, t, median(ms), mean(ms), percentile(ms, 0.9),
                          float("nan") if commands is None else commands, median(fl), mean(fl), _load())
    table.notes.append("floor: the same workload with the dedupe gate, every lock and the rate limiter switched off "
                       "(the client, the write transaction and the engine's Python alone)")
    table.notes.append("load: the 1-minute load average after the row")
    table.print()
    return 0


def _load() -> str:
    import os

    return f"{os.getloadavg()[0]:.2f}"


if __name__ == "__main__":
    sys.exit(main())
