"""A worker OS process for the multi-process engine tests (and nothing else).

    python -m social_recording_tests.recording.engine_worker '<json config>'

It opens the store (`store_url`: a SQLite file or a Mongo database) and the lock manager named in the config, records the given tokens
with counting generators whose calls are counted in Redis, and prints one JSON line per token.
Coordination with the test goes through Redis keys:

- `barrier` / `barrier_n`: INCR the key, then wait until it reaches n (start together);
- `<name>:generating`: set when a generator call starts;
- `hold_in_generate`: a key the generator waits for before returning (the test decides when);
- `pause_after_urls`: after that many URL outcomes set `<name>:paused` and sleep (to be SIGKILLed
  between two URLs);
- `pause_in_generate`: after the counted call for that URL set `<name>:paused` and sleep (to be
  SIGKILLed after a generator call but before its write);
- `stop_before_call` / `stop_after_call`: for that URL set `<name>:stopping` (right before the
  request is sent / right after it was counted) and wait for `<name>:go` (the test SIGSTOPs the
  process meanwhile, lets its lease expire, and SIGCONTs it after setting the key);
- `lock_busy_timeout`: build the SQLite lock manager with that busy timeout (renewal fault tests);
- `store_busy_timeout` / `write_retry_s`: the store's busy timeout and how long a recording's write is
  repeated while the store is busy (store fault tests).
"""

from __future__ import annotations

import json
import sys
import time
from functools import partial
from typing import Any

import redis

from social_recording.domain.url_machine import Selected
from social_recording.locks import open_lock_manager
from social_recording.locks.base import LockManager
from social_recording.locks.sqlite import SqliteLockManager
from social_recording.recording.concurrency import URLS_PER_TOKEN_AT_ONCE, CallSlots
from social_recording.recording.engine import Timings, build_engine
from social_recording.recording.outcomes import UrlOutcome
from social_recording.recording.run_state import RunState
from social_recording.recording.url_recorder import TokenRef, UrlRecorder
from social_recording.store import Store, open_store
from social_recording.store.sqlite import SqliteStore
from test_support.engine_fakes import (
    Behaviour,
    FakeProfiles,
    RedisCounter,
    counting_registry,
)

PAUSE_SECONDS = 300.0
WAIT_GUARD_SECONDS = 60.0


def _wait_for(r: redis.Redis, cond: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT_GUARD_SECONDS
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(f"worker waited too long for {what}")
        time.sleep(0.01)


class _PausingRecorder(UrlRecorder):
    def __init__(self, *args: Any, r: redis.Redis, name: str, pause_after: int | None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._r = r
        self._name = name
        self._pause_after = pause_after
        self._done = 0

    def record_url(self, token: TokenRef, url: str, run: RunState, selected: Selected | None = None) -> UrlOutcome:
        out = super().record_url(token, url, run, selected)
        self._done += 1
        if self._pause_after is not None and self._done >= self._pause_after:
            self._r.set(f"{self._name}:paused", url)
            time.sleep(PAUSE_SECONDS)
        return out


def main(raw: str) -> int:
    cfg: dict[str, Any] = json.loads(raw)
    name = cfg["name"]
    r = redis.Redis.from_url(cfg["redis_url"])
    store_url: str = cfg["store_url"]
    store: Store
    if cfg.get("store_busy_timeout") and store_url.startswith("sqlite:///"):
        store = SqliteStore(store_url[len("sqlite:///"):], busy_timeout=cfg["store_busy_timeout"])
    else:
        store = open_store(store_url)
    locks: LockManager
    if cfg.get("lock_busy_timeout") and cfg["lock_url"].startswith("sqlite:///"):
        locks = SqliteLockManager(cfg["lock_url"][len("sqlite:///"):], busy_timeout=cfg["lock_busy_timeout"])
    else:
        locks = open_lock_manager(cfg["lock_url"])

    def stop_here(url: str) -> None:
        r.set(f"{name}:stopping", url)
        _wait_for(r, lambda: r.exists(f"{name}:go"), "the go key")

    def before_call(url: str) -> None:
        if cfg.get("stop_before_call") == url:
            stop_here(url)

    def on_call(url: str) -> None:
        r.set(f"{name}:generating", url)
        if cfg.get("hold_in_generate"):
            _wait_for(r, lambda: r.exists(cfg["hold_in_generate"]), "the release key")
        if cfg.get("pause_in_generate") == url:
            r.set(f"{name}:paused", url)
            time.sleep(PAUSE_SECONDS)
        if cfg.get("stop_after_call") == url:
            stop_here(url)

    behaviours = {url: Behaviour(**b) for url, b in cfg.get("behaviours", {}).items()}
    registry = counting_registry(RedisCounter(cfg["redis_url"]), behaviours, on_call=on_call, before_call=before_call)
    profiles = FakeProfiles()
    for address, urls in cfg.get("profiles", {}).items():
        profiles.add(address, urls)
    engine = build_engine(
        store, locks, registry, profiles, enable_paid=True,
        timings=Timings(url_lock_ttl=cfg.get("url_lock_ttl", 30.0), url_lock_wait=cfg.get("url_lock_wait", 30.0),
                        token_lock_ttl=cfg.get("token_lock_ttl", 30.0),
                        **({"write_retry_s": cfg["write_retry_s"]} if "write_retry_s" in cfg else {})),
        recorder_type=partial(_PausingRecorder, r=r, name=name, pause_after=cfg.get("pause_after_urls")),
    )
    processor = engine.processor
    if cfg.get("barrier"):
        r.incr(cfg["barrier"])
        _wait_for(r, lambda: int(r.get(cfg["barrier"]) or 0) >= cfg["barrier_n"], "the barrier")
    # `per_token: 1` records a token's URLs one after another (tests that stop a worker between URLs).
    run = RunState(calls=CallSlots(per_token=cfg.get("per_token", URLS_PER_TOKEN_AT_ONCE)))
    for address, symbol in cfg["tokens"]:
        out = processor.record(address, symbol, run)
        print(json.dumps({
            "token": out.address,
            "status": out.status.value,
            "urls": [
                {"url": u.url, "status": str(u.status), "attempted": u.attempted, "reused": u.reused,
                 "lease_lost": u.lease_lost, "detail": u.detail}
                for u in out.urls
            ],
        }), flush=True)
    locks.close()
    store.close()
    r.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
