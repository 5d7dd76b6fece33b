"""Small test doubles for the recording engine: counting generators, fake upstreams, a step clock.

The generators are NOT the real platform generators: they count every call (in memory, or in Redis
when several OS processes must share the count), can sleep, fail in a chosen way, or pause at a
chosen point so a test can kill the process there.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import redis

from social_recording.domain.graph import GraphGroup, SocialGraph, SocialObject
from social_recording.domain.models import TokenProfile, UnresolvedValue
from social_recording.domain.policy import DEFAULT_BACKOFF, DEFAULT_MIN_INTERVAL_MINUTES, Backoff
from social_recording.domain.status import FetchStatus
from social_recording.domain.urls import Platform, parse_canonical
from social_recording.locks.base import LockManager
from social_recording.outbound import observe
from social_recording.platforms.base import (
    PAID_PLATFORMS,
    PROVIDER_OF,
    ErrorCode,
    ExternalFetchError,
    GenerateContext,
    GenerateResult,
    GeneratorRegistry,
)
from social_recording.recording.answer_spool import AnswerSpool
from social_recording.recording.candidates import DEFAULT_LIMIT
from social_recording.recording.engine import Timings
from social_recording.recording.engine import build_engine as build_recording_engine
from social_recording.recording.job_pool import DEFAULT_MAX_WORKERS
from social_recording.recording.outcomes import UrlOutcome
from social_recording.recording.processor import TokenProcessor
from social_recording.recording.reconcile import DEFAULT_MIN_AF_COUNT, ReconcileOutcome, ReconcileService
from social_recording.recording.retry import RetryOutcome, RetryService
from social_recording.recording.run_state import RunState
from social_recording.recording.url_recorder import UrlRecorder
from social_recording.store.base import Store
from test_support.url_states import state_write

T0 = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

X_URL = "https://x.com/i/status/1"  # the one canonical tweet form (platforms/x/spec.py)
X_URL_2 = "https://x.com/i/status/2"
WEB_URL = "https://example.com/p"
YT_URL = "https://youtube.com/watch?v=abcdefghijk"
GH_URL = "https://github.com/owner/repo"
TG_URL = "https://t.me/foo"
DISCORD_URL = "https://discord.com/invite/abc"


class CallCounter(Protocol):
    def incr(self, url: str) -> int: ...

    def get(self, url: str) -> int: ...

    def total(self) -> int: ...


class MemoryCounter:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}

    def incr(self, url: str) -> int:
        with self._lock:
            self._counts[url] = self._counts.get(url, 0) + 1
            return self._counts[url]

    def get(self, url: str) -> int:
        with self._lock:
            return self._counts.get(url, 0)

    def total(self) -> int:
        with self._lock:
            return sum(self._counts.values())


class RedisCounter:
    """A call counter several OS processes share (INCR is atomic)."""

    PREFIX = "test-calls:"

    def __init__(self, redis_url: str) -> None:
        self._r = redis.Redis.from_url(redis_url)

    def incr(self, url: str) -> int:
        return int(self._r.incr(self.PREFIX + url))

    def get(self, url: str) -> int:
        raw = self._r.get(self.PREFIX + url)
        return int(raw) if raw is not None else 0

    def total(self) -> int:
        return sum(int(self._r.get(k) or 0) for k in self._r.scan_iter(match=self.PREFIX + "*"))

    def urls(self) -> set[str]:
        return {k.decode()[len(self.PREFIX):] for k in self._r.scan_iter(match=self.PREFIX + "*")}


def graph_for(url: str) -> SocialGraph:
    """A deterministic two-level graph: the root content and its author, plus a quoted content with the
    same author (folded to depth 0) and a venue at depth 1 — enough to exercise depth and folding."""
    platform = parse_canonical(url).platform
    host = parse_canonical(url).host
    author = SocialObject(platform=platform, platform_key=f"account:{host}:author", subtype="user",
                          fields={"name": "author"}, metrics={"followers": 10.0})
    root = SocialObject(platform=platform, platform_key=f"content:{url}", subtype="post",
                        fields={"text": "hello"}, metrics={"likes": 3.0})
    quoted = SocialObject(platform=platform, platform_key=f"quoted:{url}", subtype="post")
    venue = SocialObject(platform=platform, platform_key=f"venue:{url}", subtype="channel")
    return SocialGraph(groups=[
        GraphGroup(ref="root", content=root, account=author),
        GraphGroup(ref="quoted", content=quoted, account=author, venue=venue, parent_ref="root"),
    ])


def cyclic_graph(url: str) -> SocialGraph:
    """Breaks the graph contract (a quote cycle): plan() raises SocialContractError."""
    platform = parse_canonical(url).platform
    a = SocialObject(platform=platform, platform_key=f"a:{url}", subtype="post")
    b = SocialObject(platform=platform, platform_key=f"b:{url}", subtype="post")
    return SocialGraph(groups=[
        GraphGroup(ref="a", content=a, parent_ref="b"),
        GraphGroup(ref="b", content=b, parent_ref="a"),
    ])


@dataclass(frozen=True)
class Behaviour:
    """How a counting generator answers one URL.

    outcome: ok | not_found | blocked | error | credit_exhausted | invalid (returns a cyclic graph) |
    contract_unattempted (raises SocialContractError(attempted=False)) | unattempted_error (raises
    before any call: not counted) | bug_before_request (a KeyError of our own before any request) |
    unsupported_shape (a shape the generator cannot read: no call) |
    crash (a plain RuntimeError after the call).
    flaky: the first N calls fail with an UPSTREAM error, then `outcome` applies.
    """

    outcome: str = "ok"
    sleep: float = 0.0
    flaky: int = 0


class CountingGenerator:
    def __init__(
        self,
        platform: Platform,
        counter: CallCounter,
        behaviours: Mapping[str, Behaviour] | None = None,
        default: Behaviour = Behaviour(),
        on_call: Callable[[str], None] | None = None,
        before_call: Callable[[str], None] | None = None,
    ) -> None:
        self.platform = platform
        self._counter = counter
        self._behaviours = dict(behaviours or {})
        self._default = default
        self._on_call = on_call
        self._before_call = before_call
        self.contexts: list[GenerateContext] = []

    def generate(self, url: str, ctx: GenerateContext) -> GenerateResult:
        from social_recording.domain.graph import SocialContractError

        b = self._behaviours.get(url, self._default)
        if b.outcome == "unattempted_error":
            raise ExternalFetchError(ErrorCode.UPSTREAM, "failed before any request", attempted=False)
        if b.outcome == "contract_unattempted":
            raise SocialContractError("nothing fetchable in the url", attempted=False)
        if b.outcome == "bug_before_request":
            raise KeyError("a bug of ours before any request")
        if b.outcome == "unsupported_shape":
            raise ExternalFetchError(ErrorCode.UNSUPPORTED, "URL shape names nothing fetchable", attempted=False)
        self.contexts.append(ctx)
        if self._before_call is not None:
            self._before_call(url)
        # Stand in for the HTTP layer: the engine learns from it (not from us) that a request left,
        # and may veto a paid one right before it is sent.
        service, paid = PROVIDER_OF.get(self.platform, self.platform.value), self.platform in PAID_PLATFORMS
        observe.before_request(service=service, paid=paid)
        observe.request_sent(service=service, paid=paid)
        n = self._counter.incr(url)
        if self._on_call is not None:
            self._on_call(url)
        if b.sleep:
            time.sleep(b.sleep)
        if n <= b.flaky:
            raise ExternalFetchError(ErrorCode.UPSTREAM, f"503 on call {n}")
        codes = {
            "not_found": ErrorCode.NOT_FOUND,
            "blocked": ErrorCode.TARGET_BLOCKED,
            "error": ErrorCode.UPSTREAM,
            "credit_exhausted": ErrorCode.CREDIT_EXHAUSTED,
        }
        if b.outcome in codes:
            raise ExternalFetchError(codes[b.outcome], f"{b.outcome} for the target")
        if b.outcome == "crash":
            raise RuntimeError("generator bug with secret-looking text key=SECRET123")
        if b.outcome == "invalid":
            return GenerateResult(cyclic_graph(url), attempted=True, requests=1)
        return GenerateResult(graph_for(url), attempted=True, requests=1)


def counting_registry(
    counter: CallCounter,
    behaviours: Mapping[str, Behaviour] | None = None,
    *,
    default: Behaviour = Behaviour(),
    on_call: Callable[[str], None] | None = None,
    before_call: Callable[[str], None] | None = None,
    without: Iterable[Platform] = (Platform.DISCORD,),
) -> GeneratorRegistry:
    """Every platform but discord (-> unsupported) gets a counting generator; paid set as in production.
    `before_call` runs inside generate() before the request is sent (where a process may be paused);
    `on_call` right after it was counted."""
    skip = set(without)
    return GeneratorRegistry.of(
        {p: CountingGenerator(p, counter, behaviours, default, on_call, before_call) for p in Platform if p not in skip}
    )


class FakeProfiles:
    """ProfileSource over a dict; counts reads (V-5: a stored token causes no upstream call)."""

    def __init__(self, profiles: Mapping[str, TokenProfile] | None = None) -> None:
        self.profiles = dict(profiles or {})
        self.reads: list[str] = []
        self.resolutions = {}
        self._lock = threading.Lock()

    def add(self, address: str, urls: list[str], symbol: str | None = None,
            unresolved: tuple[UnresolvedValue, ...] = ()) -> TokenProfile:
        profile = TokenProfile(address=address, symbol=symbol or address.upper(), image="https://img/x.png",
                               urls=urls, unresolved=unresolved)
        self.profiles[address] = profile
        return profile

    def read(self, address: str) -> TokenProfile | None:
        with self._lock:
            self.reads.append(address)
        return self.profiles.get(address)

    resolutions: dict[str, list[str]] = {}

    def resolve_value(self, field: str, raw: str) -> str:
        """Scripted resolutions: `self.resolutions[raw]` is a list of answers consumed one per call:
        "transient" raises UnresolvedValueError, "gone" raises DroppedValue, anything else is the URL."""
        from social_recording.upstream.profile import DroppedValue, UnresolvedValueError

        answers = self.resolutions.get(raw) or ["gone"]
        answer = answers.pop(0) if len(answers) > 1 else answers[0]
        if answer == "transient":
            raise UnresolvedValueError(f"cannot resolve shortlink {raw!r}: timed out")
        if answer == "gone":
            raise DroppedValue(f"cannot resolve shortlink {raw!r}: HTTP 404")
        return answer


@dataclass(frozen=True)
class RangeItem:
    address: str
    symbol: str | None
    investor_count: int


@dataclass(frozen=True)
class SkippedRangeItem:
    index: int
    address: str | None
    reason: str


@dataclass(frozen=True)
class RangeScan:
    kept: list[Any]
    scanned: int
    malformed: list[SkippedRangeItem]


@dataclass
class FakeTracker:
    items: list[RangeItem] = field(default_factory=list)
    error: Exception | None = None
    malformed: list[SkippedRangeItem] = field(default_factory=list)
    calls: int = 0

    def scan_range(self, start: datetime, end: datetime, keep: Callable[[RangeItem], Any]) -> RangeScan:
        self.calls += 1
        if self.error is not None:
            raise self.error
        kept = [k for k in map(keep, self.items) if k is not None]
        return RangeScan(kept, len(self.items), list(self.malformed))


class StepClock:
    """A settable clock for back-off and TTL tests (thread-safe)."""

    def __init__(self, now: datetime = T0) -> None:
        self._now = now
        self._lock = threading.Lock()

    def __call__(self) -> datetime:
        with self._lock:
            return self._now

    def set(self, now: datetime) -> None:
        with self._lock:
            self._now = now

    def advance(self, delta: timedelta) -> datetime:
        with self._lock:
            self._now += delta
            return self._now


@dataclass
class Engine:
    """The production engine (`recording.engine.Engine`) with the test doubles it was built on."""

    store: Store
    locks: LockManager
    registry: GeneratorRegistry
    profiles: FakeProfiles
    tracker: FakeTracker
    recorder: UrlRecorder
    processor: TokenProcessor
    reconcile: ReconcileService
    retry: RetryService
    clock: Callable[[], datetime]


def build_engine(
    store: Store,
    locks: LockManager,
    registry: GeneratorRegistry,
    *,
    profiles: FakeProfiles | None = None,
    tracker: FakeTracker | None = None,
    enable_paid: bool = True,
    max_attempts: int = 5,
    url_lock_wait: float = 30.0,
    url_lock_ttl: float = 30.0,
    token_lock_ttl: float = 30.0,
    token_lock_wait: float = 0.3,
    job_lock_wait: float = 0.3,
    min_interval: timedelta = timedelta(minutes=60),
    clock: Callable[[], datetime] | None = None,
    monotonic: Callable[[], float] = time.monotonic,
    spool: AnswerSpool | None = None,
    backoff: Backoff = DEFAULT_BACKOFF,
) -> Engine:
    """The production engine (`recording.engine.build_engine`) with test timings and a step clock
    (a locked-out token's second look and a held job lock wait `token_lock_wait` / `job_lock_wait`,
    a fraction of a second here)."""
    clock = clock or StepClock()
    profiles = profiles or FakeProfiles()
    tracker = tracker if tracker is not None else FakeTracker()
    engine = build_recording_engine(
        store, locks, registry, profiles, tracker=tracker, enable_paid=enable_paid, max_attempts=max_attempts,
        min_interval=min_interval, clock=clock, monotonic=monotonic, spool=spool, backoff=backoff,
        timings=Timings(url_lock_wait=url_lock_wait, url_lock_ttl=url_lock_ttl, token_lock_ttl=token_lock_ttl,
                        token_lock_wait=token_lock_wait, job_lock_wait=job_lock_wait),
    )
    return Engine(store, locks, registry, profiles, tracker, engine.recorder, engine.processor, engine.reconcile,
                  engine.retry, clock)


def retry_run(
    eng: Engine,
    *,
    statuses: Collection[FetchStatus | str] | None = None,
    token_addresses: Sequence[str] | None = None,
    limit: int = DEFAULT_LIMIT,
    min_interval_minutes: int = DEFAULT_MIN_INTERVAL_MINUTES,
    deadline_seconds: float | None = None,
    max_workers: int = DEFAULT_MAX_WORKERS,
    run: RunState | None = None,
) -> RetryOutcome:
    """What retry_job does: select the due elements, then record the selection."""
    selection = eng.retry.select_due(statuses=statuses, token_addresses=token_addresses, limit=limit,
                                     min_interval_minutes=min_interval_minutes)
    return eng.retry.record_selection(selection, deadline_seconds=deadline_seconds, max_workers=max_workers, run=run)


def reconcile_run(
    eng: Engine,
    start: datetime,
    end: datetime,
    *,
    partition_key: str | None = None,
    min_af_count: int = DEFAULT_MIN_AF_COUNT,
    limit: int | None = None,
    deadline_seconds: float | None = None,
    max_workers: int = DEFAULT_MAX_WORKERS,
    run: RunState | None = None,
) -> ReconcileOutcome:
    """What reconcile_job does: read the window, then record it."""
    window = eng.reconcile.read_window(start, end, partition_key=partition_key, min_af_count=min_af_count)
    return eng.reconcile.record_window(window, limit=limit, deadline_seconds=deadline_seconds,
                                       max_workers=max_workers, run=run)


def record_one_url(eng: Engine, address: str, url: str, run: RunState | None = None) -> UrlOutcome:
    """One stored URL of a token, through the retry path's `record_urls` (another run recording it)."""
    return eng.processor.record_urls(address, [url], run if run is not None else eng.processor.new_run())[0]


def seed_result(
    store: Store,
    address: str,
    url: str,
    status: FetchStatus,
    attempted_at: datetime | None,
    *,
    attempts: int | None = None,
    checked_at: datetime | None = None,
    url_state: bool | None = None,
) -> None:
    """Record a result for (address, url) the way the engine would after a call at `attempted_at`
    (None: no call): the element, and the URL's state when a call or an answer decided it (or as
    `url_state` says). Uses a fence just
    above the element's, far below any real lock's (those are floored at the clock)."""
    from social_recording.domain.status import ABSORBING
    from social_recording.store.base import ElementWrite, UrlWrite

    if url_state is None:  # the engine writes a URL state only for a call or an answer
        url_state = attempted_at is not None or status in ABSORBING

    element = store.find_element(address, url)
    assert element is not None, f"no element {address}/{url}"
    state = store.find_url_state(url)
    calls = attempts if attempts is not None else max(element.attempts, state.attempts if state else 0) + int(
        attempted_at is not None
    )
    written = store.apply_url_write(
        UrlWrite(
            address=address,
            url=url,
            platform=parse_canonical(url).platform.value,
            fence=max(element.fence, state.fence if state else 0) + 1,
            now=checked_at or attempted_at or T0,
            element=ElementWrite(status, calls, attempted_at, checked_at or attempted_at or T0),
            state=state_write(status, calls, attempted_at, source_token=address if status is FetchStatus.OK else None)
            if url_state
            else None,
        )
    )
    assert written.result.applied, written
