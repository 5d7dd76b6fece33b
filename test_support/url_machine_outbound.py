"""The outbound request path behind the real providers (docs/architecture.md, "Outbound requests"): URLs
recorded by the real engine through the REAL platform adapters over the sandbox's transport (as
test_support/url_machine_http.py does), their providers answering with detours the model sets:

- a chain of redirects through mirror hosts (each resolving, in the model's DNS, to two public addresses)
  to a mirror that serves the provider's answer: followed up to 3 redirects (the element recorded from
  the mirror), refused past 3 (nothing sent to the 4th target);
- a redirect to a host resolving to a public address AND a private one: refused (the guard judges EVERY
  address), nothing sent there, the URL `blocked`;
- a transient failure (503): a paid provider's call sends its request once (never retried: a retry is
  paid again), a free one's is sent again.

And a run's calls at once per provider account against docs/operations.md's table (test_support/
provider_table.py): a reconcile run as the job makes it records one URL more of a provider's platform than its
calls at once, held by tokens of up to 8 URLs, and exactly its calls at once are in flight.

The model's DNS, its mirrors and its counts of requests per host are its own; the engine's outcome is read
from its store. A mixin of the model (test_support/url_machine_model.py); its walks are `OUTBOUND_WALKS`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from social_recording.domain.models import TokenProfile
from social_recording.domain.provider_keys import ProviderKeys
from social_recording.domain.status import FetchStatus
from social_recording.domain.url_machine import Why
from social_recording.domain.urls import Platform, platform_of, to_canonical
from social_recording.locks.sqlite import SqliteLockManager
from social_recording.platforms.registry import build_registry
from social_recording.recording.engine import build_engine
from social_recording.recording.run_state import RunState
from social_recording.sandbox.ledger import Ledger
from social_recording.sandbox.scenario import parse_scenario
from social_recording.sandbox.transport import SandboxTransport, sandbox_resolve_host
from social_recording.store.sqlite import SqliteStore
from test_support.engine_fakes import (
    T0,
    FakeProfiles,
    FakeTracker,
    MemoryCounter,
    RangeItem,
    StepClock,
    counting_registry,
)
from test_support.provider_table import DOCUMENTED, URLS_PER_TOKEN_AT_ONCE
from test_support.url_machine_http import KEYS, URLS, secret

if TYPE_CHECKING:
    from test_support.url_machine_model import World

MAX_REDIRECTS = 3
"""Redirects a call follows (docs/architecture.md: "over 3 hops" is refused)."""
MIRRORS = "mirror.example"
"""The mirrors' domain: `hop<i>.mirror.example` redirects to the next hop, the last one serves."""
TWO_FACED = "two-faced.example"
"""A host the model's DNS resolves to a public address first and a private one after it."""
PUBLIC = ("93.184.216.34", "93.184.216.35")
DETOURS = ("redirects", "a host with a private address", "503")


def model_dns(host: str) -> list[str]:
    """The model's DNS: the two-faced host has a public and a private address, a mirror two public ones,
    every other host the sandbox's one."""
    if host == TWO_FACED:
        return [PUBLIC[0], "10.0.0.7"]
    if host.endswith("." + MIRRORS):
        return list(PUBLIC)
    return sandbox_resolve_host(host)


class Detours(httpx.BaseTransport):
    """The sandbox's transport behind the model's detours: every request kept; a provider request (https,
    to one of `hosts`) answered by the detour set; a mirror's last hop served by the sandbox as if asked
    of the provider."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self.inner = inner
        self.seen: list[httpx.Request] = []
        self.hosts: frozenset[str] = frozenset()
        self.detour: tuple[str, int] | None = None

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        url, detour = request.url, self.detour
        if url.host.endswith("." + MIRRORS):
            hop = int(url.host.split(".")[0].removeprefix("hop"))
            assert detour is not None
            if hop < detour[1]:
                return _redirect(url.copy_with(host=f"hop{hop + 1}.{MIRRORS}"), request)
            return self.inner.handle_request(httpx.Request(
                request.method, url.copy_with(host=url.params.get("provider-host", "")).copy_remove_param(
                    "provider-host"), headers=request.headers, content=request.content))
        if url.host == TWO_FACED:
            return httpx.Response(200, json={}, request=request)
        if detour is not None and url.host in self.hosts:
            kind, hops = detour
            if kind == "503":
                return httpx.Response(503, request=request)
            if kind == DETOURS[1]:
                return _redirect(url.copy_with(host=TWO_FACED), request)
            return _redirect(url.copy_with(host=f"hop1.{MIRRORS}").copy_add_param("provider-host", url.host), request)
        return self.inner.handle_request(request)


def _redirect(to: httpx.URL, request: httpx.Request) -> httpx.Response:
    return httpx.Response(302, headers={"location": str(to)}, request=request)


class DetourRules:
    """Detoured providers behind the real adapters. Expects the model's `dir`, `world` and `deployed`."""

    dir: Path
    world: World
    deployed: Any

    def detoured_through_the_real_providers(self, cases: Sequence[tuple[Platform, str, int]]) -> None:
        """Every key set; each case records its platform's URL for a token of its own, its provider
        detoured as said (`DETOURS`; the redirects' count), and is checked."""
        v = self.world.violations
        root = self.dir / f"outbound-{len(list(self.dir.glob('outbound-*')))}"
        root.mkdir()
        store, locks = SqliteStore(root / "store.db"), SqliteLockManager(root / "locks.db")
        transport = Detours(SandboxTransport(parse_scenario({}), Ledger(root / "ledger.jsonl"), sleep=lambda _s: None))
        registry = build_registry(ProviderKeys({k.variable: secret(k.variable) for k in KEYS.values()}),
                                  transport=transport, sleep=lambda _s: None, resolve_host=model_dns)
        clock = StepClock(T0)
        engine = build_engine(store, locks, registry, FakeProfiles(), enable_paid=True, clock=clock,
                              max_attempts=self.deployed.max_attempts, backoff=self.deployed.backoff)
        model_unavailable, self.world.unavailable = self.world.unavailable, registry.unavailable
        try:
            for n, (platform, detour, hops) in enumerate(cases):
                key, url, address = KEYS[platform], URLS[platform].format(n=100 + n), f"O{n:03d}"
                transport.seen.clear()
                transport.hosts, transport.detour = key.hosts, (detour, hops)
                store.create_pending_token(TokenProfile(address=address, symbol="O", urls=[url]), clock())
                engine.processor.record_urls(address, [url], RunState())
                el = store.find_element(address, url)
                status = None if el is None else el.status
                what = f"{platform.value}'s provider detoured ({detour}, {hops})"
                to_provider = [r for r in transport.seen if r.url.host in key.hosts]
                for r in transport.seen:
                    if r.url.host not in key.hosts and secret(key.variable) in str(r.url) + " ".join(r.headers.values()):
                        v.append(f"{what}: its key went to {r.url.host}")
                if detour == "503":
                    if key.bills is not None and len(to_provider) != 1:
                        v.append(f"{what}: a paid call failing transiently sent {len(to_provider)} request(s) to its "
                                 f"provider; a paid provider is never retried (a retry is paid again)")
                    if key.bills is None and len(to_provider) < 2:
                        v.append(f"{what}: a free call failing transiently was not sent again")
                elif detour == DETOURS[1]:
                    if any(r.url.host == TWO_FACED for r in transport.seen) or status is not FetchStatus.BLOCKED:
                        v.append(f"{what}: a redirect to a host with a private address among its public ones must be "
                                 f"refused, nothing sent there, the URL blocked; {len(transport.seen)} request(s) "
                                 f"to {sorted({r.url.host for r in transport.seen})}, the URL {status}")
                else:
                    served = any(r.url.host == f"hop{hops}.{MIRRORS}" for r in transport.seen)
                    if hops <= MAX_REDIRECTS and (not served or status is not FetchStatus.OK):
                        v.append(f"{what}: a chain of {hops} redirect(s) through public hosts is followed to its "
                                 f"answer; the last mirror {'was' if served else 'was not'} asked, the URL {status}")
                    if hops > MAX_REDIRECTS and (served or status is FetchStatus.OK):
                        v.append(f"{what}: a chain of {hops} redirects is refused past {MAX_REDIRECTS}; the last "
                                 f"mirror {'was' if served else 'was not'} asked, the URL {status}")
        finally:
            self.world.unavailable = model_unavailable
            transport.inner.close()
            locks.close()
            store.close()


SAMPLE_URLS = ("https://x.com/i/status/7{n}", "https://tiktok.com/@dancer{n}", "https://instagram.com/pictures{n}",
               "https://reddit.com/r/sub{n}", "https://youtube.com/@channel{n}", "https://github.com/org/repo{n}",
               "https://t.me/chat{n}", "https://discord.gg/invite{n}", "https://bsky.app/profile/user{n}.bsky.social",
               "https://warpcast.com/caster{n}", "https://site-{n}.example")
"""A URL of each platform (`n`: its number), written as people write them (the entry canonicalises them)."""
SETTLE_S = 10.0
"""A safety net only: the first call waits for the token's other URL threads to call or park, which
they do at once; past this the run is said to stall."""


class SlotGate:
    """Holds a provider's first call until every URL thread the model expects has called or parked on
    the provider's call slot: the calls then in flight are exactly those the run lets through, whatever
    the threads' timing. `call` and `done` take whatever the engine's call hook passes."""

    def __init__(self, threads: int) -> None:
        self.threads = threads
        self.cond = threading.Condition()
        self.open = self.parked = self.peak = 0
        self.stalled = False

    def call(self, *_: object) -> None:
        with self.cond:
            self.open += 1
            self.cond.notify_all()
            if not self.cond.wait_for(lambda: self.open + self.parked >= self.threads, timeout=SETTLE_S):
                self.stalled = True
            self.peak = max(self.peak, self.open)
            self.threads = 0  # settled: later calls pass at once

    def done(self, *_: object) -> None:
        with self.cond:
            self.open -= 1

    def parking(self) -> threading.Condition:
        """The provider's slot condition, telling the gate when a thread parks on it."""
        gate = self

        class Parking(threading.Condition):
            def wait(self, timeout: float | None = None) -> bool:
                with gate.cond:
                    gate.parked += 1
                    gate.cond.notify_all()
                try:
                    return super().wait(timeout)
                finally:
                    with gate.cond:
                        gate.parked -= 1

        return Parking(threading.Lock())


class CallsAtOnce:
    """A run's calls at once per provider against the operator's table. Expects the model's `dir`, `world`
    and `deployed`."""

    dir: Path
    world: World
    deployed: Any

    def calls_at_once_per_provider(self) -> None:
        """For every provider account the table gives calls at once, a reconcile run as the job makes it
        records one URL more of its platform than those calls at once, held by tokens of up to 8 URLs
        (a token's URLs side by side), every token in flight: exactly its calls at once are in flight."""
        root = self.dir / f"slots-{len(list(self.dir.glob('slots-*')))}"
        root.mkdir()
        store, locks = SqliteStore(root / "store.db"), SqliteLockManager(root / "locks.db")
        gate = SlotGate(0)
        registry = counting_registry(MemoryCounter(), before_call=lambda u: gate.call(u),
                                     on_call=lambda u: gate.done(u), without=())
        profiles, tracker = FakeProfiles(), FakeTracker()
        engine = build_engine(store, locks, registry, profiles, tracker=tracker, enable_paid=True,
                              clock=StepClock(T0), max_attempts=self.deployed.max_attempts,
                              backoff=self.deployed.backoff)
        samples = {platform_of(to_canonical(u.format(n=1))).value: u for u in SAMPLE_URLS}
        model_unavailable, self.world.unavailable = self.world.unavailable, registry.unavailable
        try:
            for account, row in DOCUMENTED.items():
                if row.calls_at_once is None:
                    continue
                platform, want = row.platforms[0], row.calls_at_once
                urls = [to_canonical(samples[platform].format(n=n)) for n in range(want + 1)]
                held = [urls[i:i + URLS_PER_TOKEN_AT_ONCE] for i in range(0, len(urls), URLS_PER_TOKEN_AT_ONCE)]
                tracker.items = [RangeItem(f"C-{account}-{i}", "C", 5) for i in range(len(held))]
                for item, its in zip(tracker.items, held, strict=True):
                    profiles.add(item.address, its)
                gate = SlotGate(len(urls))  # every URL thread starts: `want` call, the last one parks
                run = engine.processor.new_run(Why.RECONCILE)
                run.calls._lane(account).cond = gate.parking()
                window = engine.reconcile.read_window(T0, T0 + timedelta(days=1), min_af_count=1)
                engine.reconcile.record_window(window, max_workers=len(held), run=run)
                if gate.stalled or gate.peak != want:
                    self.world.violations.append(
                        f"{len(urls)} {platform} URLs of {len(held)} token(s) recorded by one run: {gate.peak} "
                        f"{account} call(s) in flight at once, {want} expected (its calls at once; a token's URLs "
                        f"side by side: up to {URLS_PER_TOKEN_AT_ONCE})" + (" (stalled)" if gate.stalled else ""))
                    break  # one is enough: a stalled run costs a wait per provider
        finally:
            self.world.unavailable = model_unavailable
            locks.close()
            store.close()


class OutboundRules(DetourRules, CallsAtOnce):
    """The outbound request path and the providers' documented numbers (the model's mixin)."""


def _walk(cases: Sequence[tuple[Platform, str, int]]) -> Callable[[Any], list[Callable[[], object]]]:
    return lambda m: [lambda: m.detoured_through_the_real_providers(cases)]


OUTBOUND_WALKS: tuple[tuple[str, Callable[[Any], list[Callable[[], object]]]], ...] = (
    ("every provider's calls at once in a run, as documented", lambda m: [m.calls_at_once_per_provider]),
    ("the real providers detoured: redirect chains, a two-faced host, transient failures", _walk([
        (Platform.GITHUB, DETOURS[0], MAX_REDIRECTS), (Platform.GITHUB, DETOURS[0], MAX_REDIRECTS + 1),
        (Platform.GITHUB, DETOURS[1], 1), (Platform.YOUTUBE, DETOURS[1], 1),
        (Platform.X, "503", 0), (Platform.GITHUB, "503", 0)])),
)
"""(name, steps) of each walk (test_support/url_machine_walks.py lists them)."""
