"""Faults, with real processes, a real redis-server and a real store (a SQLite file, or the Mongo store
over the wire): a holder paused past its lease (SIGSTOP), renewals that fail for a while (Redis CLIENT
PAUSE, a SQLite write lock held past the busy timeout), a store too busy to take a paid result for a
while, the Mongo store's server stopped and started again mid-run, and a lock server restarted empty
in the middle of a run.

What must hold: a stale holder never overwrites a newer result and never pays when it could know it
no longer owns the URL; a renewal that fails for a moment never throws away a paid result; a lock
server that forgot everything costs at most one extra call per in-flight URL, never an overwrite.
Timeouts are guards, not performance assertions.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
import redis

from social_recording.domain.status import FetchStatus
from social_recording.store import open_store
from social_recording_tests.integration.conftest import GUARD, Env, element, finish, store_url_of, wait_until
from test_support.engine_fakes import GH_URL, WEB_URL, X_URL, YT_URL, RedisCounter
from test_support.ferretdb_server import running_ferretdb
from test_support.mongo_server import mongo_url_with_db
from test_support.redis_server import free_port
from test_support.sqlite_faults import hold_write_lock

pytestmark = [pytest.mark.integration, pytest.mark.heavy(minutes=0.25)]

TTL = 1.0
"""Short leases so a pause "past the TTL" takes a second, not minutes."""


def _stop_then_let_another_process_win(env: Env, stop_at: str) -> tuple[list[dict], list[dict]]:
    """Worker 1 records token A (paid X_URL) and stops (SIGSTOP) at `stop_at` ("stop_before_call" or
    "stop_after_call"); its token and URL leases expire; worker 2 records the same token and URL to
    `ok`; worker 1 is resumed. Returns both workers' outputs."""
    r = redis.Redis.from_url(env.redis_url)
    try:
        w1 = env.spawn("w1", profiles={"A": [X_URL]}, tokens=[["A", "a"]], token_lock_ttl=TTL, url_lock_ttl=TTL,
                       **{stop_at: X_URL})
        wait_until(lambda: r.exists("w1:stopping"), "worker 1 at the call")
        os.kill(w1.pid, signal.SIGSTOP)
        try:
            time.sleep(TTL * 2.5)  # well past both leases: the renewal threads are stopped too
            w2 = env.spawn("w2", profiles={"A": [X_URL]}, tokens=[["A", "a"]], token_lock_ttl=TTL, url_lock_ttl=TTL)
            second = finish(w2)
            r.set("w1:go", 1)
        finally:
            os.kill(w1.pid, signal.SIGCONT)
        first = finish(w1)
    finally:
        r.close()
    return first, second


def test_a_holder_paused_before_its_paid_call_makes_no_call_and_writes_nothing(env: Env) -> None:
    first, second = _stop_then_let_another_process_win(env, "stop_before_call")
    assert second[0]["urls"][0]["status"] == "ok"
    resumed = first[0]["urls"][0]
    assert resumed["status"] == "lost" and not resumed["attempted"]
    assert "right before a paid" in resumed["detail"] or "lost" in resumed["detail"]
    assert RedisCounter(env.redis_url).get(X_URL) == 1  # only the second worker paid
    store = env.open_store()
    try:
        el = element(store, "A", X_URL)
        assert (el.status, el.attempts) == (FetchStatus.OK, 1)
        assert len(store.find_links("A", X_URL)) == 4
    finally:
        store.close()


def test_a_holder_paused_after_its_paid_call_writes_nothing(env: Env) -> None:
    """A pause between the provider receiving the request and our write used to cost one more call:
    the second worker could not know an answer was on its way. The paused holder recorded its paid
    call before sending it, so the second worker finds the open call and pays nothing beside it (`error`,
    due again once the call's timeout has passed); the stale holder's late result is refused by the
    fence the second worker wrote with."""
    first, second = _stop_then_let_another_process_win(env, "stop_after_call")
    newer = second[0]["urls"][0]
    assert newer["status"] == "error" and not newer["attempted"] and "open since" in newer["detail"], newer
    resumed = first[0]["urls"][0]
    assert resumed["status"] == "lost" and resumed["attempted"], resumed
    assert RedisCounter(env.redis_url).get(X_URL) == 1
    store = env.open_store()
    try:
        el = element(store, "A", X_URL)
        assert (el.status, el.attempts) == (FetchStatus.ERROR, 0)
        state = store.find_url_state(X_URL)
        assert state is not None and state.open_call is not None  # counted as failed after its timeout
    finally:
        store.close()


def _no_call_on_rerun(env: Env, url: str) -> None:
    w = env.spawn("again", profiles={"A": [url]}, tokens=[["A", "a"]])
    out = finish(w)
    assert out[0]["status"] == "up_to_date"


def test_redis_renewal_failures_do_not_throw_away_a_paid_result(redis_url: str, tmp_path: Path) -> None:
    """CLIENT PAUSE makes every renewal time out for a while (the client's socket timeout is short);
    the call finishes meanwhile; the result is written and the next run makes no call."""
    env = Env.sqlite(redis_url, redis_url + "?socket_timeout=0.2", tmp_path / "store.db")
    admin = redis.Redis.from_url(redis_url)
    try:
        w = env.spawn("w1", profiles={"A": [X_URL]}, tokens=[["A", "a"]], url_lock_ttl=3.0, token_lock_ttl=3.0,
                      behaviours={X_URL: {"outcome": "ok", "sleep": 3.0}})
        wait_until(lambda: admin.exists("w1:generating"), "worker inside the call")
        # Longer than the client's socket timeout (every renewal in it fails), well inside the TTL.
        admin.execute_command("CLIENT", "PAUSE", "1500", "WRITE")
        out = finish(w)
    finally:
        admin.execute_command("CLIENT", "UNPAUSE")
        admin.close()
    url_out = out[0]["urls"][0]
    assert url_out["status"] == "ok" and url_out["attempted"], url_out
    assert RedisCounter(redis_url).get(X_URL) == 1
    _no_call_on_rerun(env, X_URL)
    assert RedisCounter(redis_url).get(X_URL) == 1


def _write_locked_during_the_call(env: Env, locked: Path, *, url: str, sleep: float, **options: object) -> dict:
    """Worker w1 records token A's `url` (a call of `sleep` s); once it is inside the call, another
    connection holds `locked`'s write lock for 1.5 s. Returns w1's outcome for the URL."""
    r = redis.Redis.from_url(env.redis_url)
    try:
        w = env.spawn("w1", profiles={"A": [url]}, tokens=[["A", "a"]],
                      behaviours={url: {"outcome": "ok", "sleep": sleep}}, **options)
        wait_until(lambda: r.exists("w1:generating"), "worker inside the call")
        started = threading.Event()
        blocker = threading.Thread(target=hold_write_lock, args=(locked, 1.5, started))
        blocker.start()
        assert started.wait(GUARD)
        out = finish(w)
        blocker.join(GUARD)
    finally:
        r.close()
    result: dict = out[0]["urls"][0]
    return result


def test_sqlite_renewal_failures_do_not_throw_away_a_paid_result(redis_url: str, tmp_path: Path) -> None:
    """Another process holds the lock file's write lock longer than the busy timeout, several renewals
    fail; the lease survives, the paid result is written, the next run makes no call."""
    locks_path = tmp_path / "locks.db"
    env = Env.sqlite(redis_url, f"sqlite:///{locks_path}", tmp_path / "store.db")
    url_out = _write_locked_during_the_call(env, locks_path, url=WEB_URL, sleep=3.0, url_lock_ttl=3.0,
                                            token_lock_ttl=3.0, lock_busy_timeout=0.1)
    assert url_out["status"] == "ok" and url_out["attempted"], url_out
    assert RedisCounter(redis_url).get(WEB_URL) == 1
    _no_call_on_rerun(env, WEB_URL)
    assert RedisCounter(redis_url).get(WEB_URL) == 1


def _store_blocked_while_the_result_is_written(redis_url: str, tmp_path: Path, write_retry_s: float
                                               ) -> tuple[dict, Env]:
    """Another process holds the STORE file's write lock for 1.5 s from the middle of a paid call (the
    store's busy timeout is 0.1 s), so the write of the paid result meets "database is locked"."""
    env = Env.sqlite(redis_url, redis_url, tmp_path / "store.db")
    url_out = _write_locked_during_the_call(env, env.store_path, url=X_URL, sleep=0.5, store_busy_timeout=0.1,
                                            write_retry_s=write_retry_s)
    return url_out, env


def test_a_busy_store_does_not_throw_away_a_paid_result(redis_url: str, tmp_path: Path) -> None:
    """The write is repeated until the store takes it: recorded ok, paid once, no call on the next run."""
    url_out, env = _store_blocked_while_the_result_is_written(redis_url, tmp_path, write_retry_s=30.0)
    assert url_out["status"] == "ok" and url_out["attempted"], url_out
    assert RedisCounter(redis_url).get(X_URL) == 1
    _no_call_on_rerun(env, X_URL)
    assert RedisCounter(redis_url).get(X_URL) == 1


def test_a_store_busy_past_the_write_retry_fails_the_url_and_the_next_run_records_it(
    redis_url: str, tmp_path: Path
) -> None:
    """Without repeating the write (retry 0 s) and without a spool, the paid result is lost: the URL
    fails, attempted. The call was recorded before it left, so the next run pays nothing beside it
    (`error`, cause backoff) until the call's timeout counts it as one failed call."""
    url_out, env = _store_blocked_while_the_result_is_written(redis_url, tmp_path, write_retry_s=0.0)
    assert url_out["status"] == "failed", url_out
    assert "OperationalError" in url_out["detail"]
    out = finish(env.spawn("again", profiles={"A": [X_URL]}, tokens=[["A", "a"]]))
    again = out[0]["urls"][0]
    assert again["status"] == "error" and not again["attempted"] and "open since" in again["detail"], again
    assert RedisCounter(redis_url).get(X_URL) == 1


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.exceptions.ConnectionError:
        return False


@pytest.mark.parametrize("first_call_s", [0.6, 4.0])
@pytest.mark.parametrize("store_kind", ["sqlite", pytest.param("mongo", marks=pytest.mark.mongo_server)])
def test_a_lock_server_restarted_empty_mid_run_overwrites_nothing(
    redis_url: str, tmp_path: Path, store_kind: str, first_call_s: float, request: pytest.FixtureRequest
) -> None:
    """Redis (the lock server) is killed and started again with no data while a run is inside paid
    calls, and a second run starts right after. Fencing tokens keep growing across the restart, so no
    recorded element is overwritten and no `ok` is lost; each in-flight URL costs at most one extra
    call (the benchmark prints the count). A URL the second run meets while the first run's call is
    still out is `error` beside that open call (which run gets there first depends on the machine's
    load; a first call of 4 s makes it the second run every time)."""
    import shutil

    urls = [X_URL, "https://x.com/i/status/21", "https://x.com/i/status/22", YT_URL, GH_URL]
    store_url = store_url_of(request, store_kind, tmp_path)
    binary = shutil.which("redis-server")
    assert binary
    port = free_port()
    workdir = tmp_path / "redis"
    workdir.mkdir()

    def start_server() -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", str(workdir)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(port=port)
        wait_until(lambda: _pings(client), "redis-server to answer")
        client.close()
        return proc

    server = start_server()
    lock_url = f"redis://127.0.0.1:{port}/0?socket_timeout=0.5&socket_connect_timeout=0.5"
    env = Env(redis_url, lock_url, store_url)  # counters and coordination stay on the session's Redis
    coordination = redis.Redis.from_url(redis_url)
    restarted: subprocess.Popen[bytes] | None = None
    try:
        behaviours = {u: {"outcome": "ok", "sleep": 0.6} for u in urls}
        behaviours[X_URL]["sleep"] = first_call_s
        w1 = env.spawn("w1", profiles={"A": urls}, tokens=[["A", "a"]], behaviours=behaviours,
                       url_lock_ttl=3.0, token_lock_ttl=3.0)
        wait_until(lambda: coordination.exists("w1:generating"), "the first run inside a call")
        server.kill()
        server.wait()
        restarted = start_server()
        w2 = env.spawn("w2", profiles={"A": urls}, tokens=[["A", "a"]], behaviours=behaviours,
                       url_lock_ttl=3.0, token_lock_ttl=3.0, url_lock_wait=10.0)
        first, second = finish(w1), finish(w2)
    finally:
        coordination.close()
        for p in (server, restarted):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    store = env.open_store()
    try:
        doc = store.find_token("A")
        assert doc is not None
        finished = [e for e in doc.social_urls if e.status is FetchStatus.OK]
        for e in finished:  # every recorded answer is whole: one set of links, attempts counted once
            assert len(store.find_links("A", e.url)) == 4
            if e.detail and e.detail.startswith("reused ok of"):
                # The first run's answer reached the URL state, but its element write was refused by the
                # second run's newer element fence; the second run adopted that answer without a call.
                # The one call is counted on the URL state, where the back-off and the budget read it.
                state = store.find_url_state(e.url)
                assert e.attempts == 0 and state is not None and state.answer is FetchStatus.OK, (e, state)
                assert state.attempts >= 1, state
            else:
                assert e.attempts == 1, e
        for e in doc.social_urls:
            seen = (e.url, e.status, e.cause, e.detail)
            if e.status is FetchStatus.ERROR:
                # The second run reached the URL while the first run's call was still out: it paid
                # nothing beside that open call, and the call stays recorded, to be counted as failed
                # once its timeout has passed (the late answer is refused by the newer fence).
                assert e.attempts == 0 and e.detail is not None and "open since" in e.detail, seen
                state = store.find_url_state(e.url)
                assert state is not None and state.open_call is not None, (seen, state)
            else:
                assert e.status in (FetchStatus.OK, FetchStatus.PENDING), seen
    finally:
        store.close()
    counter = RedisCounter(redis_url)
    per_url = {u: counter.get(u) for u in urls}
    assert all(n <= 2 for n in per_url.values()), per_url  # at most one extra call per in-flight URL
    outcomes = [u for res in (first, second) for t in res for u in t["urls"]]
    # nobody overwrote a recorded ok: a write after one was refused, and reported as such
    assert not any(u["status"] == "ok" and "not written" not in u["detail"] and u["url"] not in
                   {e.url for e in finished} for u in outcomes)


@pytest.mark.mongo_server
def test_a_store_server_stopped_for_seconds_mid_run_loses_nothing_and_pays_once(
    redis_url: str, tmp_path: Path
) -> None:
    """The Mongo store's server (a FerretDB process of this test's own) is killed while a run is inside
    its paid calls, and started again on the same data 3 s later: the writes that met the dead server
    are repeated (or waited out by the driver) until it answers. Every URL ends ok with one set of
    links, each paid once; nothing is left pending; a second run has nothing to do."""
    urls = [X_URL, "https://x.com/i/status/31", "https://x.com/i/status/32", YT_URL, GH_URL]
    behaviours = {u: {"outcome": "ok", "sleep": 0.6} for u in urls}
    coordination = redis.Redis.from_url(redis_url)
    with running_ferretdb() as ferret:
        env = Env(redis_url, redis_url, mongo_url_with_db(ferret.url, "outage"))
        env.open_store().close()  # indexes in place before the run
        try:
            w1 = env.spawn("w1", profiles={"A": urls}, tokens=[["A", "a"]], behaviours=behaviours,
                           url_lock_ttl=5.0, token_lock_ttl=5.0)
            wait_until(lambda: coordination.exists("w1:generating"), "the run inside a paid call")
            ferret.stop()  # SIGKILL: in-flight requests see their connection reset
            time.sleep(3.0)
            assert w1.poll() is None  # the run waits for its store; it does not give up
            ferret.start()
            first = finish(w1)
            second = finish(env.spawn("w2", profiles={"A": urls}, tokens=[["A", "a"]], behaviours=behaviours))
        finally:
            coordination.close()
        store = env.open_store()
        try:
            doc = store.find_token("A")
            assert doc is not None
            assert {e.url: (e.status, e.attempts) for e in doc.social_urls} == dict.fromkeys(
                urls, (FetchStatus.OK, 1))
            for url in urls:
                assert len(store.find_links("A", url)) == 4
        finally:
            store.close()
    assert [u["status"] for u in first[0]["urls"]] == ["ok"] * len(urls), first
    assert second[0]["status"] == "up_to_date", second
    counter = RedisCounter(redis_url)
    assert {u: counter.get(u) for u in urls} == dict.fromkeys(urls, 1)  # nothing paid twice


def _spawn_sandbox_worker(**cfg: object) -> subprocess.Popen[str]:
    import json
    import sys

    from social_recording_tests.integration.conftest import REPO

    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen(
        [sys.executable, "-m", "social_recording_tests.integration.sandbox_worker", json.dumps(cfg)],
        cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


@pytest.mark.parametrize(("lock_kind", "store_kind"), [
    ("redis", "sqlite"), ("sqlite", "sqlite"), pytest.param("redis", "mongo", marks=pytest.mark.mongo_server),
])
def test_killed_while_polling_a_paid_scan_the_next_run_resumes_it_without_paying_again(
    redis_url: str, tmp_path: Path, lock_kind: str, store_kind: str, request: pytest.FixtureRequest
) -> None:
    """SIGKILL after urlscan accepted (and billed) the scan, while the worker waits to poll it: the
    scan's id was recorded right after submission, so the next holder polls that scan instead of
    submitting again. The ledger shows one paid submission and the scan's result is recorded."""
    from social_recording.sandbox.ledger import Ledger
    from test_support.sandbox_env import write_scenario

    site = "https://kill-mid-poll.example/launch"
    scenario = write_scenario(tmp_path / "scenario.json", [])
    ledger_path = tmp_path / "ledger.jsonl"
    store_url = store_url_of(request, store_kind, tmp_path)
    lock_url = redis_url if lock_kind == "redis" else f"sqlite:///{tmp_path / 'locks.db'}"
    common = {"store_url": store_url, "lock_url": lock_url, "scenario": str(scenario),
              "ledger": str(ledger_path), "profiles": {"A": [site]}, "tokens": [["A", "a"]],
              "url_lock_ttl": TTL, "token_lock_ttl": TTL}
    ledger = Ledger(ledger_path)
    # The first poll waits 10 s x 0.5: plenty of time to see the billed submission and kill the worker.
    first = _spawn_sandbox_worker(sleep_scale=0.5, **common)
    try:
        wait_until(lambda: any(e.subject == f"scan:{site}" for e in ledger.read()), "the paid scan submission")
        store = open_store(store_url)
        try:
            wait_until(lambda: (s := store.find_url_state(site)) is not None and s.request is not None,
                       "the scan id recorded on the URL")
        finally:
            store.close()
    finally:
        os.kill(first.pid, signal.SIGKILL)
        first.communicate(timeout=GUARD)
    assert not [e for e in ledger.read() if e.subject.startswith("result:")]  # killed before any poll
    time.sleep(TTL * 1.5)  # the dead worker's leases expire
    second = _spawn_sandbox_worker(sleep_scale=0.01, **common)
    out = finish(second)
    url_out = out[0]["urls"][0]
    assert url_out["status"] == "ok" and "resumed" in url_out["detail"], url_out
    entries = ledger.read()
    assert [e.subject for e in entries if e.service == "urlscan" and not e.subject.startswith("result:")] == [
        f"scan:{site}"
    ]
    assert any(e.subject.startswith("result:") and e.status == 200 for e in entries)
    store = open_store(store_url)
    try:
        el = element(store, "A", site)
        assert el.status is FetchStatus.OK and el.attempts == 1
        state = store.find_url_state(site)
        assert state is not None and state.request is None  # cleared by the recorded result
        assert len(store.find_links("A", site)) == 1
    finally:
        store.close()


@pytest.mark.parametrize("store_kind", ["sqlite", pytest.param("mongo", marks=pytest.mark.mongo_server)])
def test_a_lock_server_restarted_for_two_seconds_mid_run_costs_a_wait_not_a_failure(
    tmp_path: Path, store_kind: str, request: pytest.FixtureRequest
) -> None:
    """The issue's first finding, end to end: two run processes record six tokens whose paid URLs they
    share pairwise (the real generators on the sandbox, paid calls on, the locks and the shared rate
    limiter on one redis-server with its append-only file, as deployed; the store a SQLite file or the
    Mongo store over the wire); the server is restarted,
    two seconds down, while they are inside paid calls. Taking a token lock, waiting for a URL lock,
    asking the limiter, checking ownership before a paid call and releasing all wait for it: no token
    fails, no URL ends `error` or left behind, nothing is paid twice, no key is left to block a re-run
    for its TTL, and the re-run right after finds everything done."""
    from social_recording.sandbox.ledger import Ledger
    from test_support.redis_server import restartable_redis
    from test_support.sandbox_env import write_scenario

    shared = [[f"https://x.com/i/status/{99100 + k}", f"https://blip{k}.example/page",
               f"https://tiktok.com/@/video/{7199000000000000000 + k}"] for k in range(3)]
    scenario = write_scenario(tmp_path / "scenario.json", [],
                              {url: {"latency_ms": 700} for urls in shared for url in urls})
    ledger = Ledger(tmp_path / "ledger.jsonl")
    store_url = store_url_of(request, store_kind, tmp_path)
    profiles = {f"{side}{k}": urls for k, urls in enumerate(shared) for side in ("A", "B")}
    with restartable_redis(tmp_path / "redis", password="blip-pw") as server:
        common = {"store_url": store_url, "lock_url": server.url, "rate_limit_url": server.url,
                  "scenario": str(scenario), "ledger": str(ledger.path), "profiles": profiles, "sleep_scale": 0.05}
        workers = [_spawn_sandbox_worker(tokens=[[f"{side}{k}", side.lower()] for k in range(3)], **common)
                   for side in ("A", "B")]
        try:
            wait_until(lambda: any(e.paid for e in ledger.read()), "the first paid request")
            down = server.restart(2.0)
        finally:
            outputs = [finish(w) for w in workers]
        client = server.client()
        try:
            left = sorted(k.decode() for pattern in ("social-record:*", "social-url:*", "social-reconcile:*")
                          for k in client.scan_iter(match=pattern))
        finally:
            client.close()
        assert down >= 2.0
        tokens = [t for out in outputs for t in out]
        assert sorted(t["token"] for t in tokens) == sorted(profiles)
        assert all(t["status"] == "recorded" for t in tokens), tokens
        assert all(u["status"] == "ok" for t in tokens for u in t["urls"]), tokens
        assert left == []  # every release landed once the server was back: nothing blocks a re-run
        assert ledger.repeated_paid_subjects() == {}
        paid = len(ledger.paid_requests())
        rerun = finish(_spawn_sandbox_worker(tokens=[[a, a.lower()] for a in sorted(profiles)], **common))
    assert [t["status"] for t in rerun] == ["up_to_date"] * len(profiles)
    assert len(ledger.paid_requests()) == paid
    store = open_store(store_url)
    try:
        for address, urls in profiles.items():
            assert {u: element(store, address, u).status for u in urls} == dict.fromkeys(urls, FetchStatus.OK)
    finally:
        store.close()
