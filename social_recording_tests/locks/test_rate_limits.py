"""The shared rate limiter (locks/rate_limits.py): moving windows on the lock backend, penalties,
the bounded wait, and the rate holding across OS processes on both backends."""

from __future__ import annotations

import multiprocessing as mp
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from social_recording.locks.rate_limits import (
    HEADROOM,
    SharedRateLimiter,
    SqliteRateWindows,
    Window,
    effective_requests,
    open_rate_limiter,
    parse_rate_overrides,
    parse_rates,
)
from social_recording.outbound.limits import (
    PROVIDER_SERVICES,
    Rate,
    RateLimited,
    penalty_seconds,
    provider_rates,
)


class FakeTime:
    """A clock that only moves when the limiter sleeps (deterministic waits, no real time)."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start
        self.slept: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


@pytest.fixture()
def fake() -> FakeTime:
    return FakeTime()


@pytest.fixture()
def sqlite_storage(tmp_path: Path, fake: FakeTime) -> Iterator[SqliteRateWindows]:
    storage = SqliteRateWindows(tmp_path / "locks.db", clock=fake.clock)
    yield storage
    storage.close()


def test_headroom_keeps_each_rate_under_the_documented_one() -> None:
    assert effective_requests(Rate(20, 1)) == 18 == int(20 * HEADROOM)
    assert effective_requests(Rate(1, 5)) == 1
    assert effective_requests(Rate(5000, 3600)) == 4500


def test_documented_rates() -> None:
    rates = provider_rates(with_keys={"GITHUB_TOKEN"})
    assert rates["twitterapi"] == (Rate(20, 1),)
    assert rates["github"] == (Rate(5000, 3600),)
    assert provider_rates()["github"] == (Rate(60, 3600),)  # GitHub without a token
    assert rates["youtube"] == (Rate(10_000, 86_400),)
    assert "telegram" not in rates and "apify" not in rates  # no documented request rate
    over = provider_rates(with_keys={"GITHUB_TOKEN"}, overrides={"twitterapi": (Rate(50, 1),), "youtube": ()})
    assert over["twitterapi"] == (Rate(50, 1),) and "youtube" not in over


def test_rate_notation_and_overrides_name_the_bad_value() -> None:
    assert parse_rates("60/minute;500/hour") == (Rate(60, 60), Rate(500, 3600))
    assert parse_rates("none") == ()
    assert parse_rate_overrides({"urlscan": "2/second"}) == {"urlscan": (Rate(2, 1),)}
    with pytest.raises(ValueError, match="cannot read the rate 'lots'"):
        parse_rates("lots")
    with pytest.raises(ValueError, match="unknown service 'twitter'"):
        parse_rate_overrides({"twitter": "1/second"})
    assert {"twitterapi", "urlscan", "github", "youtube", "telegram", "apify"} <= PROVIDER_SERVICES


def test_platform_clients_send_under_known_service_names() -> None:
    from social_recording.platforms.apify import client as apify
    from social_recording.platforms.base import PROVIDER_OF
    from social_recording.platforms.github import generator as github
    from social_recording.platforms.telegram import generator as telegram
    from social_recording.platforms.web import generator as web
    from social_recording.platforms.x import generator as x
    from social_recording.platforms.youtube import generator as youtube

    assert set(PROVIDER_OF.values()) <= PROVIDER_SERVICES
    assert {apify.PROVIDER, github.SERVICE, telegram.SERVICE, web.PROVIDER, youtube.SERVICE} <= PROVIDER_SERVICES
    assert x.twitterapi_policy().service in PROVIDER_SERVICES


def test_sqlite_storage_moving_window(sqlite_storage: SqliteRateWindows, fake: FakeTime) -> None:
    window = Window(3, 10)
    for _ in range(3):
        assert sqlite_storage.admit("github", [window]) == 0
        fake.now += 1
    start = fake.now - 3
    # Three in the last 10 s: wait until the oldest leaves the window, counting nothing.
    assert sqlite_storage.admit("github", [window]) == pytest.approx(start + 10 - fake.now)
    assert sqlite_storage.counts("github", [window]) == [3]
    fake.now = start + 10.001  # the oldest entry left the window
    assert sqlite_storage.admit("github", [window]) == 0
    assert sqlite_storage.admit("github", [window]) > 0
    assert sqlite_storage.counts("github", [window]) == [3]
    assert sqlite_storage.counts("urlscan", [window]) == [0]  # one service's windows are its own


def test_sqlite_storage_pauses(sqlite_storage: SqliteRateWindows, fake: FakeTime) -> None:
    assert sqlite_storage.admit("urlscan", []) == 0
    sqlite_storage.pause("urlscan", 5)
    sqlite_storage.pause("urlscan", 2)  # a shorter pause never shortens the current one
    assert sqlite_storage.admit("urlscan", []) == pytest.approx(5)
    assert sqlite_storage.admit("github", []) == 0
    fake.now += 5
    assert sqlite_storage.admit("urlscan", []) == 0


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_a_request_refused_by_one_window_takes_no_slot_in_another(backend: str, tmp_path: Path,
                                                                  request: pytest.FixtureRequest) -> None:
    """The pause and every window are checked and counted in one atomic step: a refusal by the
    minute window leaves the second window untouched (the old per-window calls lost a slot there)."""
    lock_url = request.getfixturevalue("redis_url") if backend == "redis" else f"sqlite:///{tmp_path / 'locks.db'}"
    limiter = open_rate_limiter(lock_url, {"urlscan": (Rate(10, 1), Rate(2, 60))}, max_wait_s=0)
    try:
        limiter.acquire("urlscan")  # 1 of 9 per second, 1 of 1 per minute (headroom: floor(2 * 0.9) = 1)
        with pytest.raises(RateLimited):
            limiter.acquire("urlscan")
        assert limiter.used("urlscan") == [1, 1]
    finally:
        limiter.close()


def test_one_round_trip_per_admitted_request_on_redis(redis_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pause and three windows of a service: one script, one round trip to Redis per request,
    whichever way it is sent (the locks' own `resp.round_trip`, or redis-py's)."""
    import redis.connection

    from social_recording.locks import resp

    sent: list[bytes] = []
    original = redis.connection.AbstractConnection.send_packed_command
    original_trip = resp.round_trip

    def counting(self: Any, command: Any, check_health: bool = True) -> None:
        sent.append(command if isinstance(command, bytes) else b"".join(command))
        original(self, command, check_health)

    def counting_trip(conn: Any, command: bytes) -> Any:
        sent.append(command)
        return original_trip(conn, command)

    limiter = open_rate_limiter(redis_url, {"urlscan": (Rate(100, 1), Rate(1000, 60), Rate(5000, 3600))})
    try:
        limiter.acquire("urlscan")  # connects and loads the script once
        monkeypatch.setattr(redis.connection.AbstractConnection, "send_packed_command", counting)
        monkeypatch.setattr(resp, "round_trip", counting_trip)
        for _ in range(5):
            limiter.acquire("urlscan")
        assert len(sent) == 5 and all(b"EVALSHA" in c for c in sent)
        assert limiter.used("urlscan") == [6, 6, 6]
    finally:
        limiter.close()


def _limiter(storage: SqliteRateWindows, fake: FakeTime, rates: dict[str, tuple[Rate, ...]],
             max_wait_s: float = 60.0) -> SharedRateLimiter:
    return SharedRateLimiter(storage, rates, max_wait_s=max_wait_s, sleep=fake.sleep, clock=fake.clock)


def test_acquire_waits_for_the_window_to_free(sqlite_storage: SqliteRateWindows, fake: FakeTime) -> None:
    limiter = _limiter(sqlite_storage, fake, {"github": (Rate(10, 10),)})  # 9 per 10 s with the headroom
    for _ in range(9):
        limiter.acquire("github")
    assert fake.slept == []
    started = fake.now
    limiter.acquire("github")
    assert fake.now - started >= 10.0  # held until the first request left the 10 s window
    limiter.acquire("telegram")  # no rate: never held


def test_every_window_of_a_multi_window_rate_holds(sqlite_storage: SqliteRateWindows, fake: FakeTime) -> None:
    limiter = _limiter(sqlite_storage, fake, {"urlscan": (Rate(3, 1), Rate(4, 60))}, max_wait_s=600)
    admitted = []
    for _ in range(10):
        limiter.acquire("urlscan")
        admitted.append(fake.now)
    for i, t in enumerate(admitted):
        assert sum(1 for u in admitted[i:] if u < t + 60) <= effective_requests(Rate(4, 60))
        assert sum(1 for u in admitted[i:] if u < t + 1) <= effective_requests(Rate(3, 1))


def test_a_penalty_holds_the_service(sqlite_storage: SqliteRateWindows, fake: FakeTime) -> None:
    limiter = _limiter(sqlite_storage, fake, {})
    limiter.penalise("urlscan", 30.0)
    limiter.penalise("urlscan", 5.0)  # a shorter one never shortens it
    started = fake.now
    limiter.acquire("urlscan")
    assert fake.now - started >= 30.0
    limiter.acquire("github")  # other services are not held


def test_sandbox_pauses_are_scaled_like_its_other_waits(sqlite_storage: SqliteRateWindows, fake: FakeTime) -> None:
    limiter = SharedRateLimiter(sqlite_storage, {}, sleep=fake.sleep, clock=fake.clock, penalty_scale=0.01)
    limiter.penalise("telegram", 300.0)
    started = fake.now
    limiter.acquire("telegram")
    assert 0 < fake.now - started <= 3.6  # 3 s (rounded up to the storage's whole seconds), not 300
    with pytest.raises(ValueError, match="penalty_scale"):
        SharedRateLimiter(sqlite_storage, {}, penalty_scale=0)


def test_a_wait_past_the_bound_is_refused_without_sending(sqlite_storage: SqliteRateWindows,
                                                          fake: FakeTime) -> None:
    limiter = _limiter(sqlite_storage, fake, {}, max_wait_s=10.0)
    limiter.penalise("urlscan", 3600.0)  # a spent hour quota
    with pytest.raises(RateLimited, match="would hold this request"):
        limiter.acquire("urlscan")
    assert fake.slept == []


def test_an_unreachable_backend_refuses_instead_of_sending_blind() -> None:
    """After waiting out the outage bound (test_outage.py rides a real restart): refused, naming it."""
    limiter = open_rate_limiter("redis://:pw-xyz@127.0.0.1:1/0", {"github": (Rate(5, 1),)}, outage_s=0.3)
    with pytest.raises(RateLimited, match="could not be asked") as caught:
        limiter.acquire("github")
    assert caught.value.unavailable and "redis://:***@127.0.0.1:1/0" in str(caught.value)
    assert "pw-xyz" not in str(caught.value)
    limiter.close()


def test_penalty_seconds_from_headers() -> None:
    assert penalty_seconds(429, httpx.Headers({"retry-after": "7"})) == 7.0
    assert penalty_seconds(200, httpx.Headers({"x-rate-limit-remaining": "0", "x-rate-limit-reset-after": "12"})) == 12
    now = time.time()
    reset = {"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(now) + 100)}
    assert 90 < (penalty_seconds(403, httpx.Headers(reset)) or 0) <= 100
    assert penalty_seconds(200, httpx.Headers({"x-ratelimit-remaining": "3", "x-ratelimit-reset": "1"})) is None
    assert penalty_seconds(429, httpx.Headers({})) is None
    bluesky = {"ratelimit-limit": "3000", "ratelimit-remaining": "0", "ratelimit-reset": str(int(now) + 100),
               "ratelimit-policy": "3000;w=300"}  # the AppView's 429: no retry-after, an epoch reset
    assert 90 < (penalty_seconds(429, httpx.Headers(bluesky)) or 0) <= 100
    assert penalty_seconds(200, httpx.Headers({**bluesky, "ratelimit-remaining": "12"})) is None


def test_the_provider_http_layer_maps_a_refusal_to_rate_limited_with_nothing_sent() -> None:
    from social_recording.platforms.base import ErrorCode, ExternalFetchError
    from social_recording.platforms.http import HttpPolicy, ProviderHttp

    class Refusing:
        def acquire(self, service: str) -> None:
            raise RateLimited(service, "its rate would hold this request 99 s more")

        def penalise(self, service: str, retry_after_s: float) -> None:
            return None

    sent: list[httpx.Request] = []
    http = ProviderHttp(HttpPolicy.free("github"), auth_hosts={"api.github.com"},
                        transport=httpx.MockTransport(lambda r: sent.append(r) or httpx.Response(200)),
                        limiter=Refusing(), sleep=lambda s: None)
    with pytest.raises(ExternalFetchError) as info:
        http.get("https://api.github.com/repos/a/b")
    assert info.value.code is ErrorCode.RATE_LIMITED and not info.value.attempted and sent == []


# ------------------------------------------------------------------ across OS processes, both backends

def _hammer(lock_url: str, n: int, start_at: float, out: mp.Queue) -> None:  # type: ignore[type-arg]
    attempt = [0.0]

    def sleep(seconds: float) -> None:  # the limiter's wait; its next attempt starts when it returns
        time.sleep(seconds)
        attempt[0] = time.time()

    limiter = open_rate_limiter(lock_url, {"github": (Rate(10, 1),)}, sleep=sleep)
    while time.time() < start_at:
        time.sleep(0.001)
    admitted = []
    for _ in range(n):
        attempt[0] = time.time()
        limiter.acquire("github")
        admitted.append((attempt[0], time.time()))  # admitted within the last attempt's span
    limiter.close()
    out.put(admitted)


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_the_rate_holds_across_processes(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    lock_url = request.getfixturevalue("redis_url") if backend == "redis" else f"sqlite:///{tmp_path / 'locks.db'}"
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    start_at = time.time() + 3.0
    procs = [ctx.Process(target=_hammer, args=(lock_url, 6, start_at, out)) for _ in range(4)]
    for p in procs:
        p.start()
    admitted = sorted(span for _ in procs for span in out.get(timeout=60))
    for p in procs:
        p.join(30)
    assert len(admitted) == 24
    allowed = effective_requests(Rate(10, 1))
    # At most `allowed` requests in ANY one-second span, whoever sent them. Each request is known to
    # be admitted within its last attempt (a busy machine may pause a process between the admission
    # and its clock read): count those certainly inside [start, start + 1 s).
    assert max(sum(1 for began, ended in admitted if began >= start and ended < start + 1.0)
               for start, _ in admitted) <= allowed
