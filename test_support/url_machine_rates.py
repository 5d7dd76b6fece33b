"""Our own shared rate limiter against the providers' documented rates (docs/architecture.md, "Provider
concurrency and rates"; docs/operations.md, the same section): the real limiter (`locks/rate_limits.py`,
opened as the Dagster resource opens it, on the rates the upstream reads from the descriptors for the keys
set), on its SQLite windows, timed by the model's clock, asked through the outbound client every platform's
HTTP client sends through (`OutboundClient.send`: the limiter asked, the request sent, a 429's
`retry-after` reported back as a pause). The provider is the model's: it logs when each request reaches it
and answers 200, or 429 with a wait, while other requests are still in flight.

Checked from that log against the model's own reading of the descriptors: in any span of a rate's window
no more requests arrive than 10 % under its documented number allows (at least one); the limiter holds no
request the documented rates and pauses leave room for (it leaves at once), nor refuses one whose room
comes within the limiter's wait; no request arrives before the latest pause asked ends (a shorter pause
asked later does not cut a longer one short); and an account whose key is set is held to its keyed rate.
Two deployments, one with every provider key set and one with none, each with its own limiter file; a
machine may set the operator's rates (SOCIAL_RECORDING_RATE_LIMITS), which replace the documented ones.

A mixin of the model (test_support/url_machine_model.py); its walks: test_support/url_machine_rates_walks.py.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar

import httpx

from social_recording.domain.platform import ProviderAccount, Rate
from social_recording.domain.provider_keys import ProviderKeys
from social_recording.locks.rate_limits import (
    MAX_WAIT_S,
    SharedRateLimiter,
    open_rate_limiter,
    parse_rate_overrides,
)
from social_recording.outbound.client import OutboundClient
from social_recording.outbound.limits import RateLimited
from social_recording.outbound.network import Network
from social_recording.outbound.observe import observing
from social_recording.platforms.catalogue import CATALOGUE
from test_support.engine_fakes import T0
from test_support.provider_table import documented_rates

ACCOUNTS: dict[str, ProviderAccount] = {a.name: a for a in CATALOGUE.accounts()}
GRID = 2**20
"""The limiter reads the model's clock as seconds since T0 on a grid of 2**-20 s: finer than the clock's
microsecond (every reading stays apart), and a reading plus a window's whole seconds is exact in floats,
so a window's edge falls where the model's own arithmetic puts it."""
PAUSE_SLACK = timedelta(milliseconds=1)
"""The limiter reads the clock for a pause a few ticks after the provider answered (the model's reading);
a request asked that soon after a pause's end may still be held, unless the clock stands still."""


def documented(account: ProviderAccount, keyed: bool) -> tuple[Rate, ...]:
    """The account's documented rates for a deployment with its key set or not (only a key that is
    optional changes them: GitHub's 60/h without its token), as docs/operations.md's table says them
    (not its descriptor: the numbers under test)."""
    return documented_rates(account.name, keyed)


def bound(rate: Rate) -> int:
    """The requests a window may send: 10 % under the documented number, at least one."""
    return max(1, rate.requests * 9 // 10)


@dataclass
class RateLog:
    """The model's record: per (deployment keyed?, account), when each request reached the provider, and
    the latest end of the pauses it asked for."""

    sent: dict[tuple[bool, str], list[datetime]] = field(default_factory=dict)
    paused_until: dict[tuple[bool, str], datetime] = field(default_factory=dict)
    slept: list[float] = field(default_factory=list)
    at_wake: list[Callable[[], object]] = field(default_factory=list)
    """What happens elsewhere while the limiter sleeps: the first is done (and dropped) as its next sleep ends."""


class RateRules:
    """The shared limiter against the documented rates. Expects the model's `clock`, `dir` and `world`."""

    clock: Any
    dir: Path
    world: Any
    rate_overrides: ClassVar[Mapping[str, tuple[str, tuple[Rate, ...]]]] = {}
    """The operator's rates (SOCIAL_RECORDING_RATE_LIMITS), account -> (its text, the rates the model
    reads in it): they replace the documented ones, "none" none."""
    real_time_rates: ClassVar[bool] = False
    """The limiter counts on a server's clock (Redis's), not the model's: the walks meet only windows of a
    minute or more, which no walk crosses in real time."""

    @property
    def rate_log(self) -> RateLog:
        log: RateLog | None = self.__dict__.get("_rate_log")
        if log is None:
            log = self._rate_log = RateLog()
        return log

    def _limiter_clock(self) -> float:
        us = (self.clock() - T0) // timedelta(microseconds=1)
        return (us * GRID + 500_000) // 1_000_000 / GRID

    def _limiter_sleep(self, seconds: float) -> None:
        self.rate_log.slept.append(seconds)
        self.clock.advance(timedelta(seconds=seconds))
        if self.rate_log.at_wake:
            self.rate_log.at_wake.pop(0)()

    def held_to(self, account: str, keyed: bool) -> tuple[Rate, ...]:
        """The rates the deployment holds `account` to: the operator's, else the documented ones."""
        if account in self.rate_overrides:
            return self.rate_overrides[account][1]
        return documented(ACCOUNTS[account], keyed)

    def _rates_url(self, keyed: bool) -> str:
        """The lock backend the deployment's limiter counts on: its own SQLite file (a variant: Redis)."""
        return f"sqlite:///{self.dir / ('rates-keyed.db' if keyed else 'rates.db')}"

    @contextmanager
    def _limiter(self, keyed: bool) -> Iterator[SharedRateLimiter]:
        """The deployment's limiter as the Dagster resource opens it (`PlatformsResource.limiter`): the
        upstream's rates for the keys set, on the lock backend's SQLite file; timed by the model's clock."""
        from social_recording.dagster_defs.resources import UpstreamResource

        keys = ProviderKeys({v: "model-key" for v in CATALOGUE.key_variables()} if keyed else {})
        overrides = parse_rate_overrides({account: text for account, (text, _) in self.rate_overrides.items()})
        rates = UpstreamResource().rates(keys, overrides)
        limiter = open_rate_limiter(self._rates_url(keyed), rates, clock=self._limiter_clock,
                                    sleep=self._limiter_sleep)
        try:
            yield limiter
        finally:
            limiter.close()

    # ------------------------------------------------------------------ the model's reckoning

    def _room_at(self, keyed: bool, account: str, at: datetime) -> datetime:
        """The first moment from `at` on when the documented rates and the pauses asked leave room for one
        more request (`at` itself when there is room now)."""
        log = self.rate_log
        sent = log.sent.get((keyed, account), [])
        slack = timedelta(0) if self.clock.frozen else PAUSE_SLACK
        free = max(at, log.paused_until.get((keyed, account), at) + slack)
        for rate in self.held_to(account, keyed):
            window = timedelta(seconds=rate.per_seconds)
            inside = sent[bisect.bisect_right(sent, at - window):]
            if len(inside) >= bound(rate):  # room once the oldest of the last `bound` leaves the window
                free = max(free, inside[len(inside) - bound(rate)] + window)
        return free

    def _arrives(self, keyed: bool, account: str, at: datetime) -> None:
        """A request reached the provider at `at`: no pause asked holds it, no window goes past its bound."""
        log = self.rate_log
        v = self.world.violations
        sent = log.sent.setdefault((keyed, account), [])
        paused = log.paused_until.get((keyed, account))
        if paused is not None and at < paused:
            v.append(f"a {account} request arrived at {at} while the provider's pause held until {paused}")
        for rate in self.held_to(account, keyed):
            n = 1 + len(sent) - bisect.bisect_right(sent, at - timedelta(seconds=rate.per_seconds))
            if n > bound(rate):
                v.append(f"{n} {account} requests arrived within {rate.per_seconds} s up to {at} "
                         f"({'with' if keyed else 'without'} its key); its rate {rate} allows {bound(rate)}")
        sent.append(at)

    # ------------------------------------------------------------------ steps

    def requests_leave(self, keyed: bool, account: str, n: int, every: timedelta = timedelta(0),
                       retry_afters: tuple[float, ...] = ()) -> None:
        """`n` requests to `account` one after another (the clock `every` further before each but the
        first). With `retry_afters`, the first of them is answered 429 asking the first wait, and while it is
        in flight one more request leaves for each further wait, each sent while the one before is in flight
        and answered 429 asking its wait, the last sent answering first."""
        with self._limiter(keyed) as limiter:
            waits = list(retry_afters)
            client: OutboundClient

            def provider(request: httpx.Request) -> httpx.Response:
                at = self.clock()
                self._arrives(keyed, account, at)
                if not waits:
                    return httpx.Response(200)
                wait = waits.pop(0)
                if waits:  # the next request leaves while this one is in flight, and is answered first
                    self._ask(keyed, account, client, request)
                log = self.rate_log
                end = self.clock() + timedelta(seconds=wait)  # from the moment it answers
                log.paused_until[(keyed, account)] = max(log.paused_until.get((keyed, account), end), end)
                return httpx.Response(429, headers={"retry-after": f"{wait:g}"})

            client = OutboundClient(service=account, paid=ACCOUNTS[account].paid, timeout=httpx.Timeout(5.0),
                                    max_bytes=1024, transport=Network(httpx.MockTransport(provider), limiter=limiter))
            request = client.build("GET", "https://provider.example/")
            for i in range(n):
                if i and every:
                    self.clock.advance(every)
                self._ask(keyed, account, client, request)

    def a_pause_asked_elsewhere(self, keyed: bool, account: str, wait: float) -> None:
        """Another process's request to `account`, in flight, is answered 429 asking `wait` seconds: its
        outbound client reports the pause to its own limiter on the same lock backend."""
        with self._limiter(keyed) as other:
            other.penalise(account, wait)
        log = self.rate_log
        end = self.clock() + timedelta(seconds=wait)
        log.paused_until[(keyed, account)] = max(log.paused_until.get((keyed, account), end), end)

    def _ask(self, keyed: bool, account: str, client: OutboundClient, request: httpx.Request) -> None:
        """One request through the outbound client; held or refused only when its rates or a
        pause leave no room at once, refused only when that room is further than the limiter waits."""
        asked = self.clock()
        room = self._room_at(keyed, account, asked)
        log = self.rate_log
        slept = len(log.slept)
        v = self.world.violations
        seen = _Seen()
        try:
            with observing(seen):
                client.send(request)
        except RateLimited as exc:
            room = max(room, self._room_at(keyed, account, asked))  # with the pauses asked meanwhile
            # the limiter sleeps up to 1.2 times a wait, within its longest one
            if room - asked <= timedelta(seconds=MAX_WAIT_S / 1.2):
                v.append(f"a {account} request asked at {asked} was refused ({exc.reason}); its rates "
                         f"({'with' if keyed else 'without'} its key) and the pauses leave room at {room}")
            if seen.asked:  # the observer's yes takes a paid call's record and a budget's slot
                v.append(f"a {account} request the limiter held back (nothing sent) was put to the request "
                         f"observer {seen.asked} time(s): only a request about to leave is")
            return
        if (seen.asked, seen.sent) != (1, 1):
            v.append(f"a {account} request sent once was put to the request observer {seen.asked} time(s) and "
                     f"reported sent {seen.sent} time(s)")
        if self.clock() - asked > timedelta(seconds=MAX_WAIT_S * 1.2):
            v.append(f"a {account} request asked at {asked} left at {self.clock()}: the limiter holds a request at "
                     f"most {MAX_WAIT_S:g} s in all (a jittered sleep up to 1.2 times), else it is not sent")
        if room == asked and len(log.slept) > slept:
            v.append(f"a {account} request asked at {asked} was held {sum(log.slept[slept:]):.3f} s; its rates "
                     f"rates ({'with' if keyed else 'without'} its key) and the pauses leave room at once")


@dataclass
class _Seen:
    """The request observer of one request: how often it was asked (`before_request`) and told sent."""

    asked: int = 0
    sent: int = 0

    def before_request(self, *, service: str, paid: bool) -> None:
        self.asked += 1

    def request_sent(self, *, service: str, paid: bool) -> None:
        self.sent += 1
