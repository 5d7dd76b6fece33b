"""What the benchmarks share: the engine built in-process with stub generators, fake upstreams, and
one way to print a result table (the suite's smoke test looks for each part's title line).

The stub generators are not the real platform clients: they sleep a fixed latency per call (the
provider's answer time) and return a small valid graph, so the numbers measure the engine, not a
provider. Calls are counted in memory, or in Redis when several OS processes share the count.
"""

from __future__ import annotations

import math
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from social_recording.domain.graph import GraphGroup, SocialGraph, SocialObject  # noqa: E402
from social_recording.domain.models import TokenProfile  # noqa: E402
from social_recording.domain.urls import Platform, parse_canonical  # noqa: E402
from social_recording.locks.base import Lease, LockManager  # noqa: E402
from social_recording.platforms.base import GenerateContext, GenerateResult, GeneratorRegistry  # noqa: E402
from social_recording.recording.concurrency import (  # noqa: E402
    DEFAULT_PROVIDER_CONCURRENCY,
    MAX_PROVIDER_CONCURRENCY,
    CallSlots,
)
from social_recording.recording.engine import Engine  # noqa: E402
from social_recording.recording.engine import build_engine as build_recording_engine  # noqa: E402
from social_recording.recording.reconcile import ReconcileOutcome  # noqa: E402
from social_recording.store.base import Store, UrlWrite, WriteOutcome  # noqa: E402


class SleepingGenerator:
    """Sleeps `latency` seconds per call and answers a two-object graph; counts calls, the calls in
    flight (peak) and, per (token, URL), the time actually slept (to subtract it from `took_ms`)."""

    def __init__(self, platform: Platform, latency: float, on_call: Callable[[str], None] | None = None) -> None:
        self.platform = platform
        self._latency = latency
        self._on_call = on_call
        self._lock = threading.Lock()
        self.calls = 0
        self.in_flight = 0
        self.peak = 0
        self.slept_ms: dict[tuple[str, str], float] = {}

    def generate(self, url: str, ctx: GenerateContext) -> GenerateResult:
        with self._lock:
            self.calls += 1
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        if self._on_call is not None:
            self._on_call(url)
        started = time.perf_counter()
        try:
            time.sleep(self._latency)
        finally:
            slept = (time.perf_counter() - started) * 1000.0
            with self._lock:
                self.in_flight -= 1
                self.slept_ms[(ctx.token_address, url)] = slept
        host = parse_canonical(url).host
        author = SocialObject(platform=self.platform, platform_key=f"account:{host}", subtype="site")
        page = SocialObject(platform=self.platform, platform_key=url, subtype="page", metrics={"size": 1.0})
        return GenerateResult(SocialGraph(groups=[GraphGroup(ref="root", content=page, account=author)]),
                              attempted=True, requests=1)


def sleeping_registry(latency: float, platforms: Iterable[Platform] = (Platform.WEB,),
                      on_call: Callable[[str], None] | None = None) -> tuple[GeneratorRegistry, list[SleepingGenerator]]:
    gens = [SleepingGenerator(p, latency, on_call) for p in platforms]
    return GeneratorRegistry.of({g.platform: g for g in gens}), gens


@dataclass(frozen=True)
class RangeItem:
    address: str
    symbol: str | None
    investor_count: int = 5


@dataclass(frozen=True)
class RangeScan:
    kept: Sequence[Any]
    scanned: int
    malformed: Sequence[Any] = ()


class FakeUpstream:
    """The tracker and the profile reader over a dict of profiles (no HTTP)."""

    def __init__(self, tokens: Mapping[str, Sequence[str]]) -> None:
        self.profiles = {a: TokenProfile(address=a, symbol=a[:8], image="https://img.example/t.png", urls=list(u))
                         for a, u in tokens.items()}

    def read(self, address: str) -> TokenProfile | None:
        return self.profiles.get(address)

    def resolve_value(self, field: str, raw: str) -> str:
        return raw

    def scan_range(self, start: datetime, end: datetime, keep: Callable[[RangeItem], Any]) -> RangeScan:
        kept = [k for a, p in self.profiles.items() if (k := keep(RangeItem(a, p.symbol))) is not None]
        return RangeScan(kept, len(self.profiles))


class NoLocks:
    """A lock manager that locks nothing: every key is held at once by everyone (the baseline of what
    the URL lock saves). Benchmark-only; every write carries the same fence, so none is refused."""

    FENCE = 2**62

    @contextmanager
    def _held(self, key: str) -> Iterator[Lease]:
        yield Lease(key, "benchmark-no-lock", held=True, fence=self.FENCE, confirm=lambda: True)

    def try_hold(self, key: str, ttl: float) -> Any:
        return self._held(key)

    def hold_within(self, key: str, ttl: float, wait: float) -> Any:
        return self._held(key)

    def close(self) -> None:
        pass


class ForgetfulStore:
    """A store whose URLs never have a state: nothing is reused and nothing adopted, so every token
    pays for every URL (the baseline of what the dedupe gate saves). Benchmark-only."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def find_url_state(self, url: str) -> None:
        return None

    def apply_url_write(self, write: UrlWrite) -> WriteOutcome:
        return self._store.apply_url_write(replace(write, expect_version=None))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def build_engine(store: Store, locks: LockManager, registry: GeneratorRegistry, tokens: Mapping[str, Sequence[str]],
                 *, unsafe: bool = False) -> Engine:
    """The production engine over a fake upstream; `unsafe` takes the dedupe gate and the URL locks
    away (the baseline every token pays for every URL against)."""
    upstream = FakeUpstream(tokens)
    if unsafe:
        store, locks = ForgetfulStore(store), NoLocks()  # type: ignore[assignment]
    return build_recording_engine(store, locks, registry, upstream, tracker=upstream, enable_paid=True)


def reconcile(engine: Engine, start: datetime, end: datetime, *, min_af_count: int = 1,
              partition_key: str | None = None, **record: Any) -> ReconcileOutcome:
    """What reconcile_job does: read the window, then record it (`record`: record_window's arguments)."""
    window = engine.reconcile.read_window(start, end, partition_key=partition_key, min_af_count=min_af_count)
    return engine.reconcile.record_window(window, **record)


def sequential_unbounded() -> CallSlots:
    """The old behaviour, a baseline: a token's URLs one after another, and no provider bound below the
    largest one allowed (more than the most token workers a run may have, so only workers limit calls)."""
    return CallSlots({p: MAX_PROVIDER_CONCURRENCY for p in DEFAULT_PROVIDER_CONCURRENCY}, per_token=1)


def settings_engine(settings: Any) -> Engine:
    """The engine a run of the code location builds from these settings on the sandbox (its upstream,
    registry, tracker and policy, as the resources wire them), wired here from the plain parts, so
    the process that runs it never imports Dagster: the plain use cases' baseline."""
    from pydantic import SecretStr

    from social_recording.locks import open_lock_manager
    from social_recording.locks.rate_limits import open_rate_limiter, parse_rate_overrides
    from social_recording.platforms.base import ProviderKeys
    from social_recording.platforms.registry import build_registry
    from social_recording.sandbox import Ledger, SandboxTransport, load_scenario, sandbox_resolve_host
    from social_recording.sandbox.upstream import (
        SANDBOX_SLEEP_SCALE,
        sandbox_keys,
        sandbox_tracker_endpoint,
        scaled_sleep,
        scenario_rates,
    )
    from social_recording.store import open_store
    from social_recording.upstream.profile import TokenProfileReader
    from social_recording.upstream.shortlinks import ShortlinkResolver
    from social_recording.upstream.tracker import TrackerClient

    if settings.upstream != "sandbox":
        raise SystemExit(f"the benchmarks run on the sandbox, not SOCIAL_RECORDING_UPSTREAM={settings.upstream!r}")
    transport = SandboxTransport(load_scenario(settings.effective_scenario), Ledger(settings.effective_ledger))
    base, key, groups = sandbox_tracker_endpoint(None, list(settings.af_group_ids))
    tracker = TrackerClient(base, SecretStr(key), groups, transport=transport, sleep=scaled_sleep)
    resolver = ShortlinkResolver(transport=transport, resolve_host=sandbox_resolve_host)
    keys = sandbox_keys(ProviderKeys(dict(settings.provider_keys)))
    limiter = open_rate_limiter(settings.effective_lock_url,
                                scenario_rates(transport.scenario, parse_rate_overrides(dict(settings.rate_limits))),
                                penalty_scale=SANDBOX_SLEEP_SCALE)
    registry = build_registry(keys, transport=transport, sleep=scaled_sleep, resolve_host=sandbox_resolve_host,
                              limiter=limiter)
    return build_recording_engine(open_store(settings.store_url), open_lock_manager(settings.effective_lock_url),
                                  registry, TokenProfileReader(tracker, resolver), tracker=tracker,
                                  enable_paid=settings.enable_paid, max_attempts=settings.max_attempts)


# ---------------------------------------------------------------------------------------------- output

@dataclass
class Table:
    """One part's result table: printed with a `== <part>: <title> ==` line the smoke test looks for."""

    part: str
    title: str
    columns: Sequence[str]
    rows: list[Sequence[Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, *row: Any) -> None:
        self.rows.append(row)

    def render(self) -> str:
        cells = [[_cell(v) for v in row] for row in self.rows]
        widths = [max([len(c)] + [len(r[i]) for r in cells]) for i, c in enumerate(self.columns)]
        lines = [f"== {self.part}: {self.title} =="]
        lines.append("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(self.columns, widths,
                                                                                            strict=True))))
        for r in cells:
            lines.append("  ".join(v.rjust(w) if i else v.ljust(w) for i, (v, w) in enumerate(zip(r, widths,
                                                                                              strict=True))))
        lines.extend(f"   {n}" for n in self.notes)
        return "\n".join(lines)

    def print(self) -> None:
        print(self.render(), flush=True)


def _cell(v: Any) -> str:
    if isinstance(v, float):
        if math.isnan(v):
            return "-"
        return f"{v:.3f}" if abs(v) < 10 else f"{v:.1f}"
    return str(v)


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def mean(values: Sequence[float]) -> float:
    return statistics.fmean(values) if values else float("nan")


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]
