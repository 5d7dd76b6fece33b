"""A lock backend that refuses the password, a fence counter lost, an ownership check the backend cannot
answer, a Redis rate window, and a rate limiter that cannot be asked (docs/architecture.md, "Backend
outages", "Fencing", "`after`"; docs/operations.md, "Provider concurrency and rates").

- a Redis lock backend refusing the password: taking a lock raises that error at once, it is no outage
  to wait out ("Backend outages": other errors, a wrong password, raise at once);
- a Redis lock backend restarted empty (its fence counter lost): the next take still gets a fencing
  token larger than every one handed out before ("Fencing": floored at the server clock);
- a paid URL's holder whose lock backend cannot answer (past the outage bound) the ownership check right
  before its paid request: nothing is sent ("Fencing": lost or unreachable, not sent);
- on Redis, a provider's rate window holds the requests it admitted for its whole length: a request a
  fraction of a second after the one filling a 1-a-minute window waits, it is not admitted;
- the shared rate limiter cannot be asked (its backend down past the bound) before a paid URL's request:
  the URL is left as it was, not `error` ("`after`": the rate limiter could not be asked before any
  request: unchanged).

The Redis ones start a server of their own (test_support/redis_server.py). A mixin of the model
(test_support/url_machine_model.py); its walks are `LOCKS16_WALKS`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis

from social_recording.domain.models import TokenProfile
from social_recording.domain.platform import Rate
from social_recording.domain.provider_keys import ProviderKeys
from social_recording.domain.status import FetchStatus
from social_recording.domain.url_machine import Why
from social_recording.domain.urls import Platform
from social_recording.locks.base import LockBackendUnavailable
from social_recording.locks.rate_limits import open_rate_limiter
from social_recording.locks.redis import RedisLockManager
from social_recording.locks.sqlite import SqliteLockManager
from social_recording.outbound.limits import RateLimited
from social_recording.platforms.catalogue import CATALOGUE
from social_recording.platforms.registry import build_registry
from social_recording.recording.engine import build_engine
from social_recording.recording.run_state import RunState
from social_recording.recording.url_recorder import URL_LOCK_PREFIX
from social_recording.sandbox.ledger import Ledger
from social_recording.sandbox.scenario import parse_scenario
from social_recording.sandbox.transport import SandboxTransport, sandbox_resolve_host
from social_recording.store.sqlite import SqliteStore
from test_support.engine_fakes import T0, FakeProfiles, StepClock
from test_support.redis_server import free_port, running_redis
from test_support.url_machine_http import KEYS, URLS, secret
from test_support.url_machine_locks import URL_LOCK_TTL, KeptLeases, model_timings

if TYPE_CHECKING:
    from test_support.url_machine_model import World

SHORT_BOUND_S = 1.0
"""The outage bound of the walks' own managers and limiters: a mutant waiting out what it should raise
fails in a second, not in the deployed 30 s."""
PASSWORD = "the-model's-password"


class Locks16Rules:
    """A refused password, a lost fence counter, an unanswered ownership check, a Redis rate window, a
    limiter that cannot be asked. Expects the model's `world`, `dir`, `deployed`, `locks`, `doing`,
    `_run`, `_engine_on`, `_drawn_and_callable`."""

    world: World
    dir: Path
    deployed: Any
    locks: Any
    doing: Any
    _run: Any
    _engine_on: Any
    _drawn_and_callable: Any

    # ------------------------------------------------------------------ a refused password
    def a_redis_lock_backend_refuses_the_password(self) -> None:
        """A Redis lock backend asking a password the manager does not have: taking a lock raises the
        refusal at once, never waited out as an outage (`LockBackendUnavailable` past the bound)."""
        v = self.world.violations
        with running_redis() as url:
            admin = redis.Redis.from_url(url)
            admin.config_set("requirepass", PASSWORD)
            admin.close()
            wrong = url.replace("redis://", "redis://:not-the-password@")
            locks = RedisLockManager(wrong, outage_s=SHORT_BOUND_S)
            try:
                with locks.try_hold(URL_LOCK_PREFIX + "https://x.com/refused", URL_LOCK_TTL) as lease:
                    v.append(f"a Redis lock backend refusing the password let a lock be taken ({lease!r})")
            except LockBackendUnavailable as exc:
                v.append(f"a Redis lock backend refusing the password was waited out as an outage ({exc}): an "
                         f"error waiting cannot heal (a wrong password) raises at once")
            except Exception:  # noqa: BLE001 - the refusal itself, as the backend said it
                pass
            finally:
                locks.close()
                fix = redis.Redis.from_url(url.replace("redis://", f"redis://:{PASSWORD}@"))
                fix.config_set("requirepass", "")  # the server's own stop needs no password
                fix.close()

    # ------------------------------------------------------------------ a fence counter lost
    def a_redis_lock_backend_restarts_empty(self) -> None:
        """A fence taken on a Redis lock backend, which then loses everything (restarted without
        persistence): the next take's fencing token is still larger."""
        v = self.world.violations
        key = URL_LOCK_PREFIX + "https://x.com/fenced"
        with running_redis() as url:
            locks = RedisLockManager(url, outage_s=SHORT_BOUND_S)
            try:
                with locks.try_hold(key, URL_LOCK_TTL) as lease:
                    first = lease.fence
                admin = redis.Redis.from_url(url)
                admin.flushall()  # restarted empty: the fence counter is gone
                admin.close()
                with locks.try_hold(key, URL_LOCK_TTL) as lease:
                    second = lease.fence
            finally:
                locks.close()
        if second <= first:
            v.append(f"a Redis lock backend restarted empty handed out fence {second} after {first}: every "
                     f"acquisition gets a larger fencing token, floored at the server clock")

    # ------------------------------------------------------------------ an ownership check unanswered
    def an_ownership_check_the_backend_cannot_answer(self, data: Any, url_is: Callable[[str], bool]) -> None:
        """A paid URL's holder takes its lock from the machine's real manager; right before its paid
        request the backend cannot answer the ownership check (past the outage bound). Nothing is sent
        (the model's provider checks that)."""
        picked = self._drawn_and_callable(data, url_is)
        if picked is None:
            return
        address, url = picked
        from test_support.url_machine_model import STATS

        key, w = URL_LOCK_PREFIX + url, self.world
        held = KeptLeases(self.locks)

        def unanswered(_url: str, _address: str) -> None:
            lease = held.leases[key]

            def cannot_answer() -> bool:
                raise LockBackendUnavailable("the model's lock server", f"checking {key}", SHORT_BOUND_S,
                                             SHORT_BOUND_S, "ConnectionError: no answer")

            lease._confirm = cannot_answer  # noqa: SLF001 - the backend's answer, not the lease's rule
            w.unconfirmed = True  # its ownership check cannot be answered: it must say no

        STATS["ownership checks the lock backend cannot answer"] += 1
        try:
            with self.doing("live"):
                w.on_call = unanswered
                self._engine_on(held, True, timings=model_timings()).recorder.record_url(
                    (address, address), url, self._run(Why.LIVE))
        finally:
            w.lease_lost, w.vetoed, w.unconfirmed, w.on_call = False, False, False, None

    # ------------------------------------------------------------------ a Redis rate window
    def a_redis_rate_window_holds_its_length(self) -> None:
        """On Redis, a provider held to one request a minute: a request a fifth of a second after the one
        that filled the window is not admitted (its wait, a minute, is past the limiter's longest)."""
        v = self.world.violations
        account = "twitterapi"
        with running_redis() as url:
            limiter = open_rate_limiter(url, {account: (Rate(1, 60),)}, outage_s=SHORT_BOUND_S, max_wait_s=1.0)
            try:
                limiter.acquire(account)
                time.sleep(0.2)
                try:
                    limiter.acquire(account)
                except RateLimited as exc:
                    if exc.unavailable:
                        v.append(f"on Redis, the rate limiter could not be asked ({exc.reason})")
                    return
            finally:
                limiter.close()
        v.append(f"on Redis, {account} held to 1 request a minute: a second request 0.2 s after the first was "
                 f"admitted; a rate's window holds its requests for its whole length")

    # ------------------------------------------------------------------ a rate limiter not asked
    def a_rate_limiter_that_cannot_be_asked(self) -> None:
        """A paid X URL recorded through the real provider clients while the shared rate limiter's Redis
        does not answer (past the outage bound): nothing is sent and the URL is left as it was (pending,
        no attempt), not `error` as a rate wait would leave it."""
        v = self.world.violations
        root = self.dir / f"limiter-{len(list(self.dir.glob('limiter-*')))}"
        root.mkdir()
        store = SqliteStore(root / "store.db")
        locks = SqliteLockManager(root / "locks.db")
        ledger = Ledger(root / "ledger.jsonl")
        transport = SandboxTransport(parse_scenario({}), ledger, sleep=lambda _s: None)
        nobody = f"redis://127.0.0.1:{free_port()}/0"  # no server listens there
        limiter = open_rate_limiter(nobody, {a.name: (Rate(100, 60),) for a in CATALOGUE.accounts()},
                                    outage_s=0.2)
        keys = ProviderKeys({KEYS[Platform.X].variable: secret(KEYS[Platform.X].variable)})
        registry = build_registry(keys, transport=transport, sleep=lambda _s: None,
                                  resolve_host=sandbox_resolve_host, limiter=limiter)
        clock = StepClock(T0)
        engine = build_engine(store, locks, registry, FakeProfiles(), enable_paid=True, clock=clock,
                              max_attempts=self.deployed.max_attempts, backoff=self.deployed.backoff)
        model_unavailable, self.world.unavailable = self.world.unavailable, registry.unavailable
        try:
            url, address = URLS[Platform.X].format(n=0), "L000"
            store.create_pending_token(TokenProfile(address=address, symbol="L", urls=[url]), clock())
            engine.processor.record_urls(address, [url], RunState())
            el = store.find_element(address, url)
            if el is None or el.status is not FetchStatus.PENDING or el.attempts:
                v.append(f"{url}: the shared rate limiter could not be asked before its request; the URL must be "
                         f"left as it was (pending, nothing sent), it is {el!r}")
        finally:
            self.world.unavailable = model_unavailable
            limiter.close()
            transport.close()
            locks.close()
            store.close()


def _step(f: Callable[[Any], object]) -> Callable[[Any], list[Callable[[], object]]]:
    return lambda m: [lambda: f(m)]


def _unanswered(m: Any) -> list[Callable[[], object]]:
    from test_support.url_machine_lease_walks import _failed_once
    from test_support.url_machine_model import POOL
    from test_support.url_machine_steps import Draws, recorded_live

    x = POOL[0]
    return [*_failed_once(m, x),
            lambda: m.an_ownership_check_the_backend_cannot_answer(Draws(lambda c: c == ("T000", x)),
                                                                    lambda u: u == x),
            recorded_live(m, "T001")]


LOCKS16_WALKS: tuple[tuple[str, Callable[[Any], list[Callable[[], object]]]], ...] = (
    ("a Redis lock backend refusing the password", _step(lambda m: m.a_redis_lock_backend_refuses_the_password())),
    ("a Redis lock backend restarted empty, its fences", _step(lambda m: m.a_redis_lock_backend_restarts_empty())),
    ("a paid check the lock backend cannot answer", _unanswered),
    ("a Redis rate window of a minute", _step(lambda m: m.a_redis_rate_window_holds_its_length())),
    ("a rate limiter that cannot be asked before a paid request", _step(
        lambda m: m.a_rate_limiter_that_cannot_be_asked())),
)
"""(name, steps) of each walk (test_support/url_machine_walks.py lists them)."""
