"""P2 — bookkeeping per URL at 1 and 4 threads, with the real clients and the shared rate limiter
(a benchmark, not a test).

    python bench/p2_bookkeeping.py [--threads 1 4] [--urls 400] [--latency-ms 20] [--locks redis sqlite]

Bookkeeping is what recording a URL costs us beside the call itself: the token and URL locks and
their renewal, the element and URL-state reads, the gate, the one write transaction, and the shared
rate limiter asked before every request. It is measured with the real GitHub client and generator
on the sandbox transport and the real limiter: the time in `record_url` outside the generator, plus
the limiter's time inside it. The client's own work (building requests, the redirect guard,
parsing, the graph; the provider's answer time aside) is printed beside it. T threads record
tokens of 2 unique GitHub repositories (no URL is shared, so no lock is ever waited for) one URL at
a time each, so exactly T URLs are in flight; the store is a SQLite file; the locks and the limiter
are on Redis (production) or on the store's own SQLite file (the embedded default). The limiter
enforces a rate no run here reaches, so what it costs is its bookkeeping alone. On Redis the round
trips per URL are counted (the token lock, shared by the token's two URLs; the URL lock; the
limiter, one per request), and apart those inside the timed bookkeeping (the URL lock's take and the
limiter's admission; the release comes after the outcome is timed), in the untimed pre-pass: the
instrument that counts them runs in the sending thread, so the timed runs go without it.

The provider is the sandbox, its answers replayed: an untimed pre-pass (which also warms the process
up) has the sandbox compute every answer once, and the timed runs get each one back after the
provider's latency. The sandbox's fakes build answers in this process, half a millisecond of CPU per
URL that would hold the interpreter lock against the recording threads: a real provider's work is
not ours, and at 4 threads it made the waits for the lock, not the bookkeeping, the larger figure.

Two clocks: wall time, what a URL waits for (at T threads it includes waiting for the interpreter
lock while the other threads run their Python, which grows with T and with the machine's load), and
the recording thread's own CPU time (`time.thread_time`), what the bookkeeping costs whatever the
number of threads.

Beside it, in the same run, the floor: the same workload with the dedupe gate, every lock and the
limiter switched off (a benchmark-only switch): the write transaction and the engine's Python alone.

Each row is the median of `--repeat` runs, each run followed by its floor: on a small virtual machine
the wall time at 4 threads of one run can be twice another's a minute later (how the threads and the
server happen to share two cores), so one run is not a figure. The spread of the runs' means is
printed beside it.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import httpx
from _common import Table, build_engine, mean, median, percentile  # noqa: I001
from pydantic import SecretStr

from social_recording.locks import open_lock_manager
from social_recording.locks.rate_limits import SharedRateLimiter, open_rate_limiter
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


class Clocks:
    """Per thread, the time of the URL in flight spent inside the provider (the sandbox transport)
    and inside the shared limiter."""

    def __init__(self) -> None:
        self._local = threading.local()

    def reset(self) -> None:
        self._local.provider = 0.0
        self._local.limiter = 0.0
        self._local.limiter_cpu = 0.0

    def add(self, what: str, seconds: float) -> None:
        setattr(self._local, what, getattr(self._local, what, 0.0) + seconds)

    def ms(self, what: str) -> float:
        return float(getattr(self._local, what, 0.0)) * 1000.0


@dataclasses.dataclass(frozen=True)
class Answer:
    status: int
    headers: list[tuple[bytes, bytes]]
    body: bytes


class Answers:
    """The sandbox's answers, each computed once (by the untimed pre-pass) and then replayed.

    The sandbox's fakes build every answer in this process: about half a millisecond of CPU per URL
    that holds the interpreter lock while the recording threads wait for it, work a real provider
    does on its own machine. Replayed, the provider costs the process what a real one costs: its
    latency (a sleep, which releases the lock) and the response object."""

    def __init__(self) -> None:
        self.known: dict[tuple[str, str], Answer] = {}
        self.computed_cpu: list[float] = []
        """The recording thread's CPU time per answer the sandbox computed (the pre-pass's)."""
        self.misses = 0
        """Answers computed during a timed run (should stay 0: the pre-pass asks for every one)."""


class ReplayedProvider(httpx.BaseTransport):
    """The sandbox transport, its answers replayed from `answers` once known; its time (latency
    included) counted as the provider's."""

    def __init__(self, inner: SandboxTransport, answers: Answers, clocks: Clocks, latency_ms: int, *,
                 timed: bool) -> None:
        self._inner = inner
        self._answers = answers
        self._clocks = clocks
        self._latency_s = latency_ms / 1000.0
        self._timed = timed

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        started = time.perf_counter()
        try:
            key = (request.method, str(request.url))
            known = self._answers.known.get(key)
            if known is None:
                cpu = time.thread_time()
                response = self._inner.handle_request(request)  # sleeps the latency itself
                body = response.read()
                self._answers.computed_cpu.append(time.thread_time() - cpu)
                self._answers.misses += self._timed
                self._answers.known[key] = Answer(response.status_code, list(response.headers.raw), body)
                return response
            time.sleep(self._latency_s)
            return httpx.Response(known.status, headers=known.headers, content=known.body, request=request)
        finally:
            self._clocks.add("provider", time.perf_counter() - started)

    def close(self) -> None:
        self._inner.close()


@dataclasses.dataclass
class TimedLimiter:
    """The shared limiter, its time counted as bookkeeping."""

    inner: SharedRateLimiter
    clocks: Clocks

    def acquire(self, service: str) -> None:
        started, cpu = time.perf_counter(), time.thread_time()
        try:
            self.inner.acquire(service)
        finally:
            self.clocks.add("limiter", time.perf_counter() - started)
            self.clocks.add("limiter_cpu", time.thread_time() - cpu)

    def penalise(self, service: str, retry_after_s: float) -> None:
        self.inner.penalise(service, retry_after_s)


@dataclasses.dataclass(frozen=True)
class UrlTimes:
    generate: float
    provider: float
    limiter: float
    generate_cpu: float
    limiter_cpu: float


@dataclasses.dataclass
class TimedGenerator:
    """The real generator; records, per (token, URL), its own time, its provider's and its limiter's."""

    inner: Generator
    clocks: Clocks
    times: dict[tuple[str, str], UrlTimes]

    def generate(self, url: str, ctx: GenerateContext) -> GenerateResult:
        self.clocks.reset()
        started, cpu = time.perf_counter(), time.thread_time()
        try:
            return self.inner.generate(url, ctx)
        finally:
            self.times[(ctx.token_address, url)] = UrlTimes(
                (time.perf_counter() - started) * 1000.0, self.clocks.ms("provider"), self.clocks.ms("limiter"),
                (time.thread_time() - cpu) * 1000.0, self.clocks.ms("limiter_cpu"))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


@dataclasses.dataclass(frozen=True)
class Sample:
    bookkeeping: list[float]
    """Per URL: the time in record_url outside the generator, plus the limiter's time inside it."""
    limiter: list[float]
    client: list[float]
    """Per URL: the client's and generator's own work (requests, parsing, the graph), provider aside."""
    cpu: list[float]
    """Per URL: the recording thread's CPU time in record_url outside the generator, plus the limiter's."""
    round_trips: float | None
    """Per URL: Redis round trips (commands or scripts sent), whatever sent them (the untimed pre-pass only)."""
    timed_trips: float | None
    """Per URL: those inside the timed bookkeeping (the URL lock's take, the limiter's admission)."""


def measure(threads: int, n_urls: int, latency_ms: int, lock_url: str | None, *, floor: bool,
            answers: Answers, timed: bool = True) -> Sample:
    with tempfile.TemporaryDirectory(prefix="bench-p2-") as tmp, ExitStack() as stack:
        store = SqliteStore(Path(tmp) / "store.db")
        stack.callback(store.close)
        lock_url = lock_url or f"sqlite:///{Path(tmp) / 'store.db'}"
        locks = open_lock_manager(lock_url)
        stack.callback(locks.close)
        on_redis = lock_url.startswith("redis")
        if on_redis:
            import redis

            client = redis.Redis.from_url(lock_url)
            client.flushdb()
            client.close()
        tokens = {f"P2TOKEN{i:06d}": [f"https://github.com/p2org{i}/repo-a", f"https://github.com/p2org{i}/repo-b"]
                  for i in range(max(1, n_urls // 2))}
        clocks = Clocks()
        scenario = Scenario.model_validate({"tokens": [], "default_latency_ms": latency_ms})
        transport = ReplayedProvider(SandboxTransport(scenario, Ledger(Path(tmp) / "ledger.jsonl")), answers,
                                     clocks, latency_ms, timed=timed)
        limiter = None
        if not floor:
            shared = open_rate_limiter(lock_url, {"github": NEVER_HOLDS})
            stack.callback(shared.close)
            limiter = TimedLimiter(shared, clocks)
        registry = build_registry(ProviderKeys(github_token=SecretStr("p2-token")), transport=transport,
                                  resolve_host=sandbox_resolve_host, limiter=limiter)
        times: dict[tuple[str, str], UrlTimes] = {}
        registry = dataclasses.replace(registry, generators={
            p: TimedGenerator(g, clocks, times) for p, g in registry.generators.items()})
        engine = build_engine(store, locks, registry, tokens, unsafe=floor)
        record_cpu = time_record_url_cpu(engine.processor.recorder)
        run = RunState(calls=CallSlots(per_token=1))  # T threads = T URLs in flight
        # The round trips are counted in the untimed pre-pass only (the same locks and limiter, URL for URL):
        # the count runs in the sending thread, and the timed runs should not pay for the instrument.
        counting = counting_round_trips() if not timed else nullcontext(Counter[tuple[str, str]]())
        with counting as sent, ThreadPoolExecutor(max_workers=threads) as pool:
            outcomes = list(pool.map(lambda a: engine.processor.record(a, None, run), list(tokens)))
    rows = [u for o in outcomes for u in o.urls]
    if not all(str(u.status) == "ok" for u in rows):
        raise SystemExit(f"P2: not every URL was recorded ok: {run.status_counts()}")
    per_url = [(u, times[(u.token, u.url)]) for u in rows]
    return Sample(
        bookkeeping=[u.took_ms - t.generate + t.limiter for u, t in per_url],
        limiter=[t.limiter for _, t in per_url],
        client=[t.generate - t.provider - t.limiter for _, t in per_url],
        cpu=[record_cpu[(u.token, u.url)] - t.generate_cpu + t.limiter_cpu for u, t in per_url],
        round_trips=sum(sent.values()) / len(rows) if on_redis and not timed else None,
        timed_trips=sum(sent[k] for k in TIMED_TRIPS) / len(rows) if on_redis and not timed else None,
    )


def time_record_url_cpu(recorder: Any) -> dict[tuple[str, str], float]:
    """Wrap `recorder.record_url` on this instance: per (token, URL), the recording thread's CPU time
    in it (ms). A URL is recorded start to end on one thread, its generator and limiter included."""
    cpu: dict[tuple[str, str], float] = {}
    inner = recorder.record_url

    def record_url(token: Any, url: str, run: Any, selected: Any = None) -> Any:
        started = time.thread_time()
        try:
            return inner(token, url, run, selected)
        finally:
            address = token.address if hasattr(token, "address") else token[0]
            cpu[(address, url)] = (time.thread_time() - started) * 1000.0

    recorder.record_url = record_url
    return cpu


TIMED_TRIPS = (("acquire", "social-url:"), ("admit", "social-recording-rate:"))
"""The round trips made inside the timed bookkeeping: the URL lock taken (with its fencing token), the
limiter's admission of the request. The URL lock's release comes after the outcome is timed, the
token lock's take and release around the token's URLs."""


def _script_names() -> dict[bytes, str]:
    """The lock and limiter scripts by the SHA1 they are sent as (EVALSHA)."""
    import hashlib

    from social_recording.locks import rate_limits, redis

    sources = {"acquire": redis._ACQUIRE_LUA, "extend": redis._EXTEND_LUA, "release": redis._RELEASE_LUA,
               "admit": rate_limits._ADMIT_LUA}
    return {hashlib.sha1(src.encode()).hexdigest().encode(): name for name, src in sources.items()}


@contextmanager
def counting_round_trips() -> Iterator[Counter[tuple[str, str]]]:
    """Round trips to Redis made by this process meanwhile (one per command or script sent; a
    pipeline's commands go out together), whichever client sends them, by (script or command, the
    first key's prefix up to its first colon)."""
    import redis.connection

    from social_recording.locks import resp

    names = _script_names()
    sent: Counter[tuple[str, str]] = Counter()
    original = redis.connection.AbstractConnection.send_packed_command
    original_trip = resp.round_trip

    def count(command: Any) -> None:
        raw = command if isinstance(command, bytes | str) else command[0] if len(command) == 1 else b"".join(command)
        # The first four bulk strings (a script's first key is the fourth), not the whole command.
        parts = (raw.encode() if isinstance(raw, str) else raw).split(b"\r\n", 9)[2:9:2]
        what = parts[0].decode().upper() if parts else "?"
        key_at = 3 if what == "EVALSHA" else 1
        if what == "EVALSHA" and len(parts) > 1:
            what = names.get(parts[1], "script")
        key = parts[key_at].decode(errors="replace") if len(parts) > key_at else ""
        sent[(what, key.split(":", 1)[0] + ":" if ":" in key else key)] += 1

    def counting(self: Any, command: Any, check_health: bool = True) -> None:
        count(command)
        original(self, command, check_health)

    def counting_trip(conn: Any, command: bytes) -> Any:  # the locks' and limiter's own round trips
        count(command)
        return original_trip(conn, command)

    redis.connection.AbstractConnection.send_packed_command = counting  # type: ignore[method-assign]
    resp.round_trip = counting_trip
    try:
        yield sent
    finally:
        redis.connection.AbstractConnection.send_packed_command = original  # type: ignore[method-assign]
        resp.round_trip = original_trip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--urls", type=int, default=400)
    parser.add_argument("--latency-ms", type=int, default=20)
    parser.add_argument("--locks", nargs="+", choices=("redis", "sqlite"), default=["redis", "sqlite"])
    parser.add_argument("--repeat", type=int, default=3, help="runs per row; the row gives their medians")
    args = parser.parse_args(argv)
    if min(args.threads) < 1 or args.urls < 2 or args.latency_ms < 0 or args.repeat < 1:
        parser.error("--threads >= 1, --urls >= 2, --latency-ms >= 0, --repeat >= 1")
    table = Table("P2", f"bookkeeping per URL in ms (locks, store, gate, rate limiter: time in record_url minus the "
                        f"client's own; real GitHub client, provider answering in {args.latency_ms} ms, "
                        f"{args.urls} URLs, SQLite store)",
                  ["locks", "threads", "p50 ms", "mean ms", "means of runs", "p90 ms", "CPU mean", "limiter mean",
                   "Redis trips/URL", "timed trips/URL", "floor mean", "floor CPU", "client mean", "load"])
    answers = Answers()
    with ExitStack() as stack:
        for kind in args.locks:
            lock_url: str | None = None
            if kind == "redis":
                from test_support.redis_server import running_redis

                lock_url = stack.enter_context(running_redis())
            for t in args.threads:
                # The pre-pass, untimed: warms the process up and has the sandbox compute every answer once.
                pre = measure(t, args.urls, args.latency_ms, lock_url, floor=False, answers=answers, timed=False)
                runs = [(measure(t, args.urls, args.latency_ms, lock_url, floor=False, answers=answers),
                         measure(t, args.urls, args.latency_ms, lock_url, floor=True, answers=answers))
                        for _ in range(args.repeat)]

                def mid(stat: Any, runs: list[tuple[Sample, Sample]] = runs) -> float:
                    return median([stat(got, fl) for got, fl in runs])

                means = sorted(mean(got.bookkeeping) for got, _ in runs)
                table.add(kind, t, mid(lambda g, f: median(g.bookkeeping)), median(means),
                          f"{means[0]:.2f}-{means[-1]:.2f}", mid(lambda g, f: percentile(g.bookkeeping, 0.9)),
                          mid(lambda g, f: mean(g.cpu)), mid(lambda g, f: mean(g.limiter)),
                          float("nan") if pre.round_trips is None else pre.round_trips,
                          float("nan") if pre.timed_trips is None else pre.timed_trips,
                          mid(lambda g, f: mean(f.bookkeeping)), mid(lambda g, f: mean(f.cpu)),
                          mid(lambda g, f: mean(g.client)), _load())
    table.notes.append("bookkeeping: time in record_url outside the generator (token and URL locks, element and "
                       "URL-state reads, gate, the write) plus the shared limiter's time inside it; client: the GitHub "
                       "client's and generator's own work (requests, redirect guard, parsing, graph), provider aside")
    table.notes.append("CPU: the recording thread's own CPU time for the same bookkeeping (time.thread_time), which "
                       "waiting for the interpreter lock or the machine does not inflate")
    table.notes.append("floor: the same workload with the dedupe gate, every lock and the rate limiter switched off "
                       "(the write transaction and the engine's Python alone)")
    table.notes.append(f"each figure the median of {args.repeat} run(s), each followed by its floor; means of runs: "
                       "the lowest and highest run's mean")
    table.notes.append("Redis trips: round trips to Redis per URL, counted in the untimed pre-pass of the row (the "
                       "same URLs, locks and limiter), whatever sent them (the token lock's take and "
                       "release, shared by the token's URLs; the URL lock's take and release; the limiter's admission; "
                       "a renewal now and then); timed: those inside the timed bookkeeping (the URL lock's take, the "
                       "limiter's admission), each a wait for the server and then for the interpreter lock")
    table.notes.append(f"provider: the sandbox computed each answer once, before the timed runs "
                       f"({mean(answers.computed_cpu) * 1000.0:.2f} ms of CPU per answer, in this process), and "
                       f"the timed runs replay it after its latency, as a real provider's answer arrives from "
                       f"elsewhere ({answers.misses} computed during a timed run)")
    table.notes.append("load: the 1-minute load average after the row")
    table.print()
    return 0


def _load() -> str:
    import os

    return f"{os.getloadavg()[0]:.2f}"


if __name__ == "__main__":
    sys.exit(main())
