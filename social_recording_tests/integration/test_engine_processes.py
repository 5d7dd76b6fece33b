"""The engine across OS processes, real Redis / real SQLite / the Mongo store over the wire: two tokens
racing one URL, one token raced twice, a crash between URLs and after a call.

Each worker is `python -m social_recording_tests.recording.engine_worker <json>`; generator calls
are counted in Redis so every process adds to one count. Assertions are on counts and stored
states; timeouts are only guards.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
import redis

from social_recording.domain.status import FetchStatus
from social_recording.locks import open_lock_manager
from social_recording.recording.outcomes import TokenStatus
from social_recording.recording.run_state import RunState
from social_recording.store import Store
from social_recording_tests.integration.conftest import GUARD, Env, element, finish, kill, wait_until
from test_support.engine_fakes import (
    GH_URL,
    WEB_URL,
    X_URL,
    YT_URL,
    FakeProfiles,
    RedisCounter,
    build_engine,
    counting_registry,
)

pytestmark = pytest.mark.integration

def test_v1_two_tokens_same_url_at_once_one_call(env: Env) -> None:
    """V-1: two processes, two tokens, one shared URL, started together: exactly one generator call;
    both ok, both linked (identical shapes); the other URLs of each token are recorded too."""
    behaviours = {X_URL: {"outcome": "ok", "sleep": 0.5}}
    common = {"barrier": "v1-barrier", "barrier_n": 2, "behaviours": behaviours}
    w1 = env.spawn("w1", profiles={"A": [X_URL, YT_URL]}, tokens=[["A", "a"]], **common)
    w2 = env.spawn("w2", profiles={"B": [X_URL, GH_URL]}, tokens=[["B", "b"]], **common)
    r1, r2 = finish(w1), finish(w2)
    assert r1[0]["status"] == r2[0]["status"] == "recorded"
    counter = RedisCounter(env.redis_url)
    assert counter.get(X_URL) == 1
    assert counter.get(YT_URL) == 1 and counter.get(GH_URL) == 1
    store = env.open_store()
    try:
        a, b = element(store, "A", X_URL), element(store, "B", X_URL)
        assert a.status is FetchStatus.OK and b.status is FetchStatus.OK
        assert sorted([a.attempts, b.attempts]) == [0, 1]  # the waiter reused: no attempt, no clock
        a_links, b_links = store.find_links("A", X_URL), store.find_links("B", X_URL)
        assert a_links and [x.shape() for x in a_links] == [x.shape() for x in b_links]
    finally:
        store.close()
    reused = [u["reused"] for res in (r1, r2) for u in res[0]["urls"] if u["url"] == X_URL]
    assert sorted(reused) == [False, True]


def test_v2_same_token_twice_second_returns_at_once(env: Env) -> None:
    """V-2: while process 1 holds token A (its generator is held open), process 2 on the same token
    returns locked_out and exits; only then is process 1 allowed to finish."""
    r = redis.Redis.from_url(env.redis_url)
    try:
        w1 = env.spawn("w1", profiles={"A": [YT_URL]}, tokens=[["A", "a"]], hold_in_generate="v2-release")
        wait_until(lambda: r.exists("w1:generating"), "worker 1 inside the generator")
        w2 = env.spawn("w2", profiles={"A": [YT_URL]}, tokens=[["A", "a"]])
        res2 = finish(w2)  # finishes although worker 1 is still holding the token
        assert res2 == [{"token": "A", "status": TokenStatus.LOCKED_OUT.value, "urls": []}]
        assert w1.poll() is None
        r.set("v2-release", 1)
        res1 = finish(w1)
    finally:
        r.close()
    assert res1[0]["urls"][0]["status"] == "ok"
    assert RedisCounter(env.redis_url).get(YT_URL) == 1


def _rerun_until_unlocked(env: Env, address: str) -> Any:
    """A fresh in-process engine on the same files; retried until the dead worker's token lock expired."""
    store = env.open_store()
    locks = open_lock_manager(env.lock_url)
    try:
        eng = build_engine(store, locks, counting_registry(RedisCounter(env.redis_url)),
                           profiles=FakeProfiles(), url_lock_wait=GUARD)
        deadline = time.monotonic() + GUARD
        while True:
            out = eng.processor.record(address, None, RunState())
            if out.status is not TokenStatus.LOCKED_OUT or time.monotonic() > deadline:
                return out
            time.sleep(0.1)
    finally:
        locks.close()
        store.close()


def _status(store: Store, address: str, url: str) -> FetchStatus | None:
    doc = store.find_token(address)
    el = None if doc is None else doc.element(url)
    return None if el is None else el.status


def test_v3_killed_between_two_urls(env: Env) -> None:
    """V-3: SIGKILL after the first URL was recorded: it is not called again; the rest stayed
    pending and a re-run (once the dead holder's auto-extension stopped and its TTL ran out) completes them."""
    r = redis.Redis.from_url(env.redis_url)
    try:
        w = env.spawn("w1", profiles={"A": [YT_URL, GH_URL, WEB_URL]}, tokens=[["A", "a"]],
                      pause_after_urls=1, token_lock_ttl=2.0, url_lock_ttl=2.0, per_token=1)
        wait_until(lambda: r.exists("w1:paused"), "worker paused between URLs")
        kill(w)
    finally:
        r.close()
    counter = RedisCounter(env.redis_url)
    store = env.open_store()
    try:
        assert (element(store, "A", YT_URL).status, element(store, "A", YT_URL).attempts) == (FetchStatus.OK, 1)
        for url in (GH_URL, WEB_URL):
            el = element(store, "A", url)
            assert (el.status, el.attempts, el.attempted_at) == (FetchStatus.PENDING, 0, None)
    finally:
        store.close()
    assert (counter.get(YT_URL), counter.get(GH_URL), counter.get(WEB_URL)) == (1, 0, 0)
    out = _rerun_until_unlocked(env, "A")
    assert out.status is TokenStatus.RECORDED
    assert [(u.url, u.status) for u in out.urls] == [(GH_URL, FetchStatus.OK), (WEB_URL, FetchStatus.OK)]
    assert (counter.get(YT_URL), counter.get(GH_URL), counter.get(WEB_URL)) == (1, 1, 1)


def test_v3_killed_after_a_call_before_its_write(env: Env) -> None:
    """V-3: SIGKILL after the generator call, before anything of it was written: the finished URL
    is not called again; the killed one is still pending with no links, and the re-run calls it
    (once more: nothing recorded that it was ever answered) and completes it without duplicates."""
    r = redis.Redis.from_url(env.redis_url)
    try:
        w = env.spawn("w1", profiles={"A": [YT_URL, GH_URL]}, tokens=[["A", "a"]],
                      pause_in_generate=GH_URL, token_lock_ttl=2.0, url_lock_ttl=2.0)
        # The two URLs run side by side: the kill comes once YouTube's result is written (a store
        # whose write takes several round trips, like Mongo's, may still be writing it at the pause).
        store = env.open_store()
        try:
            wait_until(lambda: r.exists("w1:paused") and _status(store, "A", YT_URL) is FetchStatus.OK,
                       "worker paused inside the generator, its other URL recorded")
        finally:
            store.close()
        kill(w)
    finally:
        r.close()
    counter = RedisCounter(env.redis_url)
    store = env.open_store()
    try:
        assert element(store, "A", YT_URL).status is FetchStatus.OK
        el = element(store, "A", GH_URL)
        assert (el.status, el.attempts) == (FetchStatus.PENDING, 0)
        assert store.find_links("A", GH_URL) == []
    finally:
        store.close()
    assert (counter.get(YT_URL), counter.get(GH_URL)) == (1, 1)
    out = _rerun_until_unlocked(env, "A")
    assert [(u.url, u.status) for u in out.urls] == [(GH_URL, FetchStatus.OK)]
    assert (counter.get(YT_URL), counter.get(GH_URL)) == (1, 2)
    store = env.open_store()
    try:
        assert len(store.find_links("A", GH_URL)) == 4
        assert element(store, "A", GH_URL).attempts == 1
    finally:
        store.close()
