"""More of the outbound path and the shared limiter, as a new user meets them (docs/architecture.md,
"Outbound requests", "Provider concurrency and rates", "Resumable paid calls"; docs/operations.md,
"Provider concurrency and rates"; social_recording/platforms/apify/README.md, "The steps"):

- URLs recorded by the real engine through the REAL platform adapters over the sandbox's transport (as
  test_support/url_machine_outbound.py does), their providers detoured: a free provider answering HTTP 500
  is asked again (a 5xx is a transient failure, not an answer); a provider whose transport raises a timeout
  on every request is a failed call (the request counts as made: it may have reached the provider), its
  streak and calls counted; a redirect to a host in the shared address space (100.64.0.0/10, neither
  private nor global) is refused like any non-public one, nothing sent there, the URL `blocked`;
- Apify's two-step call: a run still RUNNING when the call's status reads are spent is saved, so the next
  holder resumes it (no second start: no second payment); a resumed run that ended FAILED is replaced by a
  new start in the same call, which answers;
- the shared limiter: a rate whose 90 % is not a whole number (15 a minute) sends 13, rounded down, never
  14; a spent window whose reset is given in epoch seconds (GitHub's `x-ratelimit-reset`, Bluesky's
  `ratelimit-reset`) holds the provider until that moment, not for the epoch's count of seconds; on Redis
  (a real redis-server started here, its own clock), a shorter pause asked while a longer one holds does not
  cut it short.

A mixin of the model (test_support/url_machine_model.py); its walks are `OUTBOUND15_WALKS`.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from unittest.mock import patch

import httpx

from social_recording.domain.models import TokenProfile
from social_recording.domain.provider_keys import ProviderKeys
from social_recording.domain.status import FetchStatus
from social_recording.domain.urls import Platform
from social_recording.locks.rate_limits import open_rate_limiter
from social_recording.locks.sqlite import SqliteLockManager
from social_recording.outbound import limits as limits_module
from social_recording.outbound.client import OutboundClient
from social_recording.outbound.limits import RateLimited
from social_recording.outbound.network import Network
from social_recording.platforms.catalogue import CATALOGUE
from social_recording.platforms.registry import build_registry
from social_recording.recording.engine import build_engine
from social_recording.recording.run_state import RunState
from social_recording.sandbox.ledger import Ledger
from social_recording.sandbox.scenario import parse_scenario
from social_recording.sandbox.transport import SandboxTransport
from social_recording.store.sqlite import SqliteStore
from test_support.engine_fakes import T0, FakeProfiles, StepClock
from test_support.redis_server import running_redis
from test_support.url_machine_http import KEYS, URLS, secret
from test_support.url_machine_outbound import model_dns

if TYPE_CHECKING:
    from test_support.url_machine_model import World

SHARED = "carrier-grade.example"
"""A host the model's DNS puts in the shared address space (RFC 6598, 100.64.0.0/10): not public."""
SHARED_ADDRESS = "100.64.0.7"
KINDS = ("500", "timeout", "a shared address")
"""The detours of a free provider's requests this module adds."""
FREE_ATTEMPTS = 3
"""Attempts of a free provider's request (docs/architecture.md, "Outbound requests": 3 in all)."""
APIFY_STATUS_READS = 3
"""Status reads of one Apify call (platforms/apify/README.md, step 2: `MAX_STATUS_READS`)."""
_RUN_READ = re.compile(r"^/v2/actor-runs/([A-Za-z0-9]+)/?$")
_RUN_START = re.compile(r"^/v2/acts/[^/]+/runs/?$")
APIFY_HOST = "api.apify.com"
GRAIN_S = 0.01
"""The model's clock moves a microsecond at each reading and the limiter reads it on a grid: an epoch
reset's pause, all on the model's clock, is exact to within this."""


def dns15(host: str) -> list[str]:
    """The model's DNS, with the shared-address host."""
    return [SHARED_ADDRESS] if host == SHARED else model_dns(host)


class Detours15(httpx.BaseTransport):
    """The sandbox's transport behind this module's detours: every request kept; a request to one of
    `hosts` answered as `kind` says; Apify's run reads answered with the status the model sets for the run
    (`run_status`: "RUNNING", "FAILED"; absent: the sandbox's own run)."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.seen: list[httpx.Request] = []
        self.hosts: frozenset[str] = frozenset()
        self.kind: str | None = None
        self.run_status: dict[str, str] = {}
        self.running = False
        """While set, a run without a status of the model's answers RUNNING."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        url = request.url
        if url.host == SHARED:
            return httpx.Response(200, json={}, request=request)
        if url.host in self.hosts and self.kind is not None:
            if self.kind == KINDS[0]:
                return httpx.Response(500, json={"message": "Internal Server Error"}, request=request)
            if self.kind == KINDS[1]:
                raise httpx.ReadTimeout("the model's provider never answers", request=request)
            return httpx.Response(302, headers={"location": str(url.copy_with(host=SHARED))}, request=request)
        read = _RUN_READ.match(url.path) if url.host == APIFY_HOST else None
        if read is not None and (read.group(1) in self.run_status or self.running):
            run_id = read.group(1)
            status = self.run_status.get(run_id, "RUNNING")
            return httpx.Response(200, json={"data": {"id": run_id, "status": status,
                                                      "defaultDatasetId": f"{run_id}d"}}, request=request)
        return self.inner.handle_request(request)


def _starts(seen: Sequence[httpx.Request]) -> list[httpx.Request]:
    """The Apify run starts (its billed requests) among `seen`."""
    return [r for r in seen if r.url.host == APIFY_HOST and r.method == "POST" and _RUN_START.match(r.url.path)]


def _run_reads(seen: Sequence[httpx.Request]) -> list[str]:
    """The run ids of Apify's status reads among `seen`, in order."""
    return [m.group(1) for r in seen if r.url.host == APIFY_HOST and (m := _RUN_READ.match(r.url.path))]


class _Recording:
    """One deployment of the real engine over the real providers and the sandbox (every key set), on a
    store, lock file and ledger of its own, with a clock of its own."""

    def __init__(self, root: Path, deployed: Any) -> None:
        self.store, self.locks = SqliteStore(root / "store.db"), SqliteLockManager(root / "locks.db")
        self.transport = Detours15(SandboxTransport(parse_scenario({}), Ledger(root / "ledger.jsonl"),
                                                    sleep=lambda _s: None))
        self.registry = build_registry(ProviderKeys({k.variable: secret(k.variable) for k in KEYS.values()}),
                                       transport=self.transport, sleep=lambda _s: None, resolve_host=dns15)
        self.clock = StepClock(T0)
        self.engine = build_engine(self.store, self.locks, self.registry, FakeProfiles(), enable_paid=True,
                                   clock=self.clock, max_attempts=deployed.max_attempts, backoff=deployed.backoff)

    def record(self, address: str, url: str) -> Any:
        """`address`'s URL recorded (its token created on first use); the requests seen are only its own."""
        self.transport.seen.clear()
        if self.store.find_element(address, url) is None:
            self.store.create_pending_token(TokenProfile(address=address, symbol="O", urls=[url]), self.clock())
        return self.engine.processor.record_urls(address, [url], RunState())[0]

    def due_again(self, address: str, url: str) -> None:
        """The clock moved to the element's due time (its back-off passed)."""
        el = self.store.find_element(address, url)
        if el is not None and el.due_at is not None and el.due_at > self.clock():
            self.clock.set(el.due_at)

    def close(self) -> None:
        self.transport.inner.close()
        self.locks.close()
        self.store.close()


class Outbound15Rules:
    """The outbound path's failures, Apify's resumed runs and the shared limiter's arithmetic. Expects the
    model's `dir`, `world`, `deployed` and the rate rules' `_limiter`, `_limiter_clock`, `clock`."""

    dir: Path
    world: World
    deployed: Any
    clock: Any
    rate_overrides: Any
    _limiter: Any

    def _recording15(self, kind: str) -> _Recording:
        root = self.dir / f"outbound15-{kind}-{len(list(self.dir.glob(f'outbound15-{kind}-*')))}"
        root.mkdir()
        return _Recording(root, self.deployed)

    def _with_registry(self, rec: _Recording, body: Callable[[], None]) -> None:
        """`body` with the model's checks of every decision reading this registry's usable generators."""
        model_unavailable, self.world.unavailable = self.world.unavailable, rec.registry.unavailable
        try:
            body()
        finally:
            self.world.unavailable = model_unavailable
            rec.close()

    # ------------------------------------------------------------------ a free provider's failures

    def free_provider_fails(self, cases: Sequence[tuple[Platform, str]]) -> None:
        """Each case records its free platform's URL for a token of its own, every request to its provider
        detoured as said (`KINDS`), and is checked (docs/architecture.md, "Statuses": a timeout and a 5xx
        are transient; "Outbound requests": every redirect's every address public)."""
        rec = self._recording15("free")
        v = self.world.violations

        def body() -> None:
            for n, (platform, kind) in enumerate(cases):
                key, url, address = KEYS[platform], URLS[platform].format(n=300 + n), f"F{n:03d}"
                rec.transport.hosts, rec.transport.kind = key.hosts, kind
                out = rec.record(address, url)
                el, state = rec.store.find_element(address, url), rec.store.find_url_state(url)
                what = f"{platform.value}'s free provider ({kind})"
                to_provider = [r for r in rec.transport.seen if r.url.host in key.hosts]
                status = None if el is None else el.status
                if kind == KINDS[0] and len(to_provider) != FREE_ATTEMPTS:
                    v.append(f"{what}: a free provider answering HTTP 500 was asked {len(to_provider)} time(s); a 5xx "
                             f"is a transient failure, asked again up to {FREE_ATTEMPTS} times")
                failed = status is FetchStatus.ERROR and state is not None and out.attempted \
                    and (state.streak, state.attempts) == (1, 1)
                if kind in KINDS[:2] and not failed:
                    v.append(f"{what}: {len(to_provider)} request(s) went to the provider and none brought an "
                             f"answer: a failed call (`error`, its streak and calls + 1, the run saying it "
                             f"called); the element is {status}, the state {state!r}, the outcome {out!r}")
                if kind == KINDS[2] and (any(r.url.host == SHARED for r in rec.transport.seen)
                                         or status is not FetchStatus.BLOCKED):
                    v.append(f"{what}: a redirect to {SHARED} ({SHARED_ADDRESS}, shared address space, not public) "
                             f"must be refused, nothing sent there, the URL blocked; requests went to "
                             f"{sorted({r.url.host for r in rec.transport.seen})}, the URL {status}")

        self._with_registry(rec, body)

    # ------------------------------------------------------------------ Apify's two-step call

    def apify_run_outlasts_its_reads(self, then: str) -> None:
        """A TikTok URL whose Apify run is still RUNNING when its call's status reads are spent (a failed
        call, `error`); once due again, its next holder resumes that run instead of starting (and paying
        for) another; the run then `then`: "SUCCEEDED" (the sandbox's run: read, its items answer) or
        "FAILED" (the resumed run is replaced by one new start in the same call, which answers)."""
        rec = self._recording15("apify")
        v = self.world.violations
        url, address = URLS[Platform.TIKTOK].format(n=400 + len(then)), f"A{then[:3]}"

        def body() -> None:
            t = rec.transport
            t.running = True  # every run read of the first call answers RUNNING
            try:
                out = rec.record(address, url)
            finally:
                t.running = False
            first_starts = [r.url.path for r in _starts(t.seen)]
            reads = _run_reads(t.seen)
            el = rec.store.find_element(address, url)
            what = f"an Apify run still RUNNING after its call's {APIFY_STATUS_READS} status reads"
            if len(first_starts) != 1 or len(reads) != APIFY_STATUS_READS or el is None \
                    or el.status is not FetchStatus.ERROR or not out.attempted:
                v.append(f"{what}: one start, {APIFY_STATUS_READS} reads and a failed call (`error`) expected; "
                         f"{len(first_starts)} start(s), {len(reads)} read(s), the element {el!r}")
                return
            run_id = reads[0]
            if then != "SUCCEEDED":  # else the sandbox's run: RUNNING on its first read, SUCCEEDED after
                t.run_status[run_id] = then
            rec.due_again(address, url)
            out = rec.record(address, url)
            starts, reads = _starts(t.seen), _run_reads(t.seen)
            el = rec.store.find_element(address, url)
            status = None if el is None else el.status
            if not reads or reads[0] != run_id:
                v.append(f"{what}: its id is saved for the next holder, which reads that run first before paying "
                         f"for another; the next call read {reads} and started {len(starts)} run(s) (docs/"
                         f"architecture.md, \"Resumable paid calls\")")
            if then == "SUCCEEDED" and (starts or status is not FetchStatus.OK):
                v.append(f"{what}: the next holder resumes the run (no new start, no second payment) and records "
                         f"its answer; {len(starts)} new start(s), the URL {status}")
            if then != "SUCCEEDED" and (len(starts) != 1 or status is not FetchStatus.OK):
                v.append(f"{what}, then {then}: the next holder's resumed run cannot answer any more, so one new run "
                         f"is started in the same call (platforms/apify/README.md, step 2) and answers; "
                         f"{len(starts)} new start(s), the URL {status} ({out!r})")

        self._with_registry(rec, body)

    # ------------------------------------------------------------------ the shared limiter

    def a_rate_not_whole_at_its_headroom(self, account: str, text: str, requests: int, per_s: int) -> None:
        """The operator sets `account`'s rate to `text` (`requests` per `per_s` seconds, SOCIAL_RECORDING_
        RATE_LIMITS) whose 90 % is not a whole number: the bound is rounded down (docs/operations.md,
        "Provider concurrency and rates"); the bound and one more are sent in one instant."""
        from social_recording.domain.platform import Rate
        from test_support.url_machine_rates import bound

        rate = Rate(requests, per_s)
        self.rate_overrides = {**self.rate_overrides, account: (text, (rate,))}
        self.clock.frozen = True
        self.requests_leave(False, account, bound(rate) + 1)  # type: ignore[attr-defined]

    def an_epoch_reset(self, account: str, header: str, remaining: str, seconds: int) -> None:
        """`account`'s provider answers a request with its window spent (`remaining`: 0) and its reset in
        epoch seconds (`header`), `seconds` from now: the next request is held until that moment (the
        limiter's clock: the model's), then leaves; it is neither sent before nor refused (docs/
        architecture.md, "Provider concurrency and rates")."""
        v = self.world.violations
        answered: list[tuple[datetime, float]] = []
        arrived: list[datetime] = []

        start, wall0 = self.clock(), time.time()

        def wall() -> float:
            """Epoch seconds on the model's clock: the provider's reset and the client's reading of it
            agree exactly, whatever the machine's load between them."""
            return wall0 + (self.clock() - start).total_seconds()

        class ModelWall(datetime):
            @classmethod
            def now(cls, tz: Any = None) -> datetime:  # type: ignore[override]
                return datetime.fromtimestamp(wall(), tz)

        def provider(request: httpx.Request) -> httpx.Response:
            arrived.append(self.clock())
            if len(arrived) > 1:
                return httpx.Response(200)
            reset = math.ceil(wall()) + seconds
            answered.append((self.clock(), reset - wall()))
            return httpx.Response(403 if account == "github" else 429,
                                  headers={remaining: "0", header: str(reset)})

        with self._limiter(False) as limiter, patch.object(limits_module, "datetime", ModelWall):
            paid = next(a.paid for a in CATALOGUE.accounts() if a.name == account)
            client = OutboundClient(service=account, paid=paid, timeout=httpx.Timeout(5.0), max_bytes=1024,
                                    transport=Network(httpx.MockTransport(provider), limiter=limiter))
            request = client.build("GET", "https://provider.example/")
            client.send(request)
            try:
                client.send(request)
            except RateLimited as exc:
                v.append(f"{account} answered its window spent, {header} {seconds} s from now (epoch seconds); the "
                         f"next request was refused ({exc.reason}): it waits until the reset, within a minute")
                return
        (at, left), second = answered[0], arrived[1]
        held = (second - at).total_seconds()
        if not left - GRAIN_S <= held <= left * 1.2 + GRAIN_S:
            v.append(f"{account} answered its window spent, {header} {left:.2f} s from now (epoch seconds); the next "
                     f"request left {held:.2f} s later: it is held until the reset (a jittered sleep up to 1.2 times)")

    def a_shorter_pause_on_redis(self, longer: float, shorter: float) -> None:
        """On Redis (a real server, its own clock): twitterapi answers 429 asking `longer` seconds; another
        process's request is answered 429 asking `shorter`; the next request leaves no sooner than the
        longer pause ends (a shorter pause asked later does not cut it short; docs/architecture.md,
        "Provider concurrency and rates"). Costs about `longer` seconds of real time: long enough that a
        request released by the shorter pause is told apart even on a loaded machine."""
        v = self.world.violations
        account = "twitterapi"
        arrived: list[float] = []

        def provider(request: httpx.Request) -> httpx.Response:
            arrived.append(time.monotonic())
            if len(arrived) == 1:
                return httpx.Response(429, headers={"retry-after": f"{longer:g}"})
            return httpx.Response(200)

        with running_redis() as url:
            limiter, other = open_rate_limiter(url, {}), open_rate_limiter(url, {})  # two processes
            try:
                client = OutboundClient(service=account, paid=True, timeout=httpx.Timeout(5.0), max_bytes=1024,
                                        transport=Network(httpx.MockTransport(provider), limiter=limiter))
                request = client.build("GET", "https://provider.example/")
                client.send(request)
                other.penalise(account, shorter)  # its request in flight answered 429 asking `shorter`
                client.send(request)
            except RateLimited as exc:
                v.append(f"on Redis, a {account} request after pauses of {longer:g} s and {shorter:g} s was refused "
                         f"({exc.reason}): both are within the limiter's wait")
                return
            finally:
                limiter.close()
                other.close()
        held = arrived[1] - arrived[0]
        if held < longer - 0.05:
            v.append(f"on Redis, {account} asked a {longer:g} s pause, then (another process) a {shorter:g} s one: "
                     f"the next request left {held:.3f} s after the first answer; a shorter pause asked later does "
                     f"not cut a longer one short")


def _step(f: Callable[[Any], object]) -> Callable[[Any], list[Callable[[], object]]]:
    return lambda m: [lambda: f(m)]


OUTBOUND15_WALKS: tuple[tuple[str, Callable[[Any], list[Callable[[], object]]]], ...] = (
    ("a free provider's 500, timeout and redirect to a shared address", _step(lambda m: m.free_provider_fails([
        (Platform.GITHUB, KINDS[0]), (Platform.GITHUB, KINDS[1]), (Platform.GITHUB, KINDS[2])]))),
    ("an Apify run outlasting its reads, resumed: it succeeds", _step(
        lambda m: m.apify_run_outlasts_its_reads("SUCCEEDED"))),
    ("an Apify run outlasting its reads, resumed: it failed", _step(
        lambda m: m.apify_run_outlasts_its_reads("FAILED"))),
    ("a rate whose headroom is not whole", _step(
        lambda m: m.a_rate_not_whole_at_its_headroom("bluesky", "15/minute", 15, 60))),
    ("a spent window's epoch reset, GitHub's and Bluesky's", lambda m: [
        lambda: m.an_epoch_reset("github", "x-ratelimit-reset", "x-ratelimit-remaining", 3),
        lambda: m.an_epoch_reset("bluesky", "ratelimit-reset", "ratelimit-remaining", 3)]),
    ("a shorter pause asked while a longer one holds, on Redis", _step(lambda m: m.a_shorter_pause_on_redis(1.0, 0.1))),
)
"""(name, steps) of each walk (test_support/url_machine_walks.py lists them)."""
