"""A worker OS process that records tokens with the REAL generators on the sandbox transport.

    python -m social_recording_tests.integration.sandbox_worker '<json config>'

Config: `store_url` (what `open_store` opens), `lock_url`, `scenario`, `ledger`, `profiles` ({address: [canonical urls]}),
`tokens` ([[address, symbol]]), `sleep_scale` (client-side waits such as urlscan's first poll wait
are multiplied by it: small enough to be quick, large enough for a test to kill the process inside
one), `url_lock_ttl`, `token_lock_ttl`, `enable_paid`, `rate_limit_url` (when set, every provider request
asks the shared rate limiter on that lock backend, with the scenario's rates), `write_retry_s`,
`fill_disk` (a SQLite store only: a file on the store's filesystem, written until that filesystem is
full right after a paid request is saved: the disk fills between a paid submission and its result's write),
`fill_at` ("paid_request", the default: right after a two-step paid request is saved; "open_call_refused":
right before a paid call's record is written, so that record is refused; "open_call_saved": right after
it is written, so the call's answer cannot be), `spool_dir` (where unwritten paid answers wait),
`free_disk_after_s` (the filler is deleted that long after, from another thread; without it, between
runs), `runs` (how many runs record the tokens, one after another; default 1), `spend_budgets`
(account -> "N/day", held on the lock backend), `die_at` (the process SIGKILLs itself at that point
of its first paid request: test_support/kill_points.py) and
`clock_ahead_s` (the recording's clock runs that far ahead: another process's open call is found past
its timeout). Prints one JSON line per token and run.
"""

from __future__ import annotations

import errno
import json
import math
import sys
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from social_recording.locks import open_lock_manager
from social_recording.locks.rate_limits import open_rate_limiter
from social_recording.outbound.limits import Rate
from social_recording.platforms.base import ProviderKeys
from social_recording.platforms.registry import build_registry
from social_recording.recording.answer_spool import AnswerSpool
from social_recording.recording.engine import Timings, build_engine
from social_recording.sandbox.ledger import Ledger
from social_recording.sandbox.scenario import load_scenario
from social_recording.sandbox.transport import SandboxTransport, sandbox_resolve_host
from social_recording.store import Store, open_store
from social_recording.store.base import WriteOutcome
from social_recording.store.sqlite import SqliteStore
from test_support.engine_fakes import FakeProfiles
from test_support.kill_points import worker_money

SANDBOX_KEY = SecretStr("sandbox-key")
DISK_FULL = threading.Event()


class FillingStore(SqliteStore):
    """The real store, whose filesystem fills up at the moment `fill_at` names."""

    filler: Path | None = None
    fill_at = "paid_request"
    filled = False

    def _fill(self, moment: str) -> None:
        """Once: a freed disk stays free."""
        if moment == self.fill_at and self.filler is not None and not self.filled:
            self.filled = True
            fill(self.filler)

    def save_paid_request(self, *args: Any, **kwargs: Any) -> WriteOutcome:
        saved = super().save_paid_request(*args, **kwargs)
        self._fill("paid_request")
        return saved

    def save_open_call(self, *args: Any, **kwargs: Any) -> Any:
        self._fill("open_call_refused")
        saved = super().save_open_call(*args, **kwargs)
        self._fill("open_call_saved")
        return saved


def fill(path: Path) -> None:
    """Write `path` until its filesystem has no space left."""
    # Unbuffered: a buffered file would keep the bytes that did not fit and fail again when closed.
    with open(path, "wb", buffering=0) as f:
        try:
            while True:
                f.write(b"\0" * 65536)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
    print(json.dumps({"event": "disk_full", "filler_bytes": path.stat().st_size}), flush=True)
    DISK_FULL.set()


def free(path: Path, delay: float = 0.0) -> None:
    time.sleep(delay)
    path.unlink(missing_ok=True)
    print(json.dumps({"event": "disk_freed"}), flush=True)


def _open(cfg: dict[str, Any]) -> tuple[Store, Path | None]:
    """The store the config names, and the filler file when its disk is to fill up (SQLite only)."""
    if not cfg.get("fill_disk"):
        return open_store(cfg["store_url"]), None
    url: str = cfg["store_url"]
    if not url.startswith("sqlite:///"):
        raise ValueError(f"fill_disk needs a SQLite store, got {url!r}")
    store = FillingStore(Path(url[len("sqlite:///"):]))
    store.filler = Path(cfg["fill_disk"])
    store.fill_at = cfg.get("fill_at", "paid_request")
    return store, store.filler


def main(raw: str) -> int:
    cfg: dict[str, Any] = json.loads(raw)
    store, filler = _open(cfg)
    locks = open_lock_manager(cfg["lock_url"])
    transport = SandboxTransport(load_scenario(Path(cfg["scenario"])), Ledger(Path(cfg["ledger"])))
    scale = float(cfg.get("sleep_scale", 0.01))

    def sleep(seconds: float) -> None:
        time.sleep(max(0.0, seconds) * scale)

    keys = ProviderKeys(twitterapi_io_key=SANDBOX_KEY, apify_token=SANDBOX_KEY, youtube_api_key=SANDBOX_KEY,
                        urlscan_api_key=SANDBOX_KEY)
    limiter = None
    if cfg.get("rate_limit_url"):
        rates = {service: (Rate(limit.requests, max(1, math.ceil(limit.per_seconds))),)
                 for service, limit in transport.scenario.rate_limits.items()}
        limiter = open_rate_limiter(cfg["rate_limit_url"], rates)
    registry = build_registry(keys, transport=transport, sleep=sleep, resolve_host=sandbox_resolve_host,
                              limiter=limiter)
    profiles = FakeProfiles()
    for address, urls in cfg.get("profiles", {}).items():
        profiles.add(address, urls)
    budgets, clock = worker_money(cfg, store, transport)
    processor = build_engine(
        store, locks, registry, profiles, enable_paid=cfg.get("enable_paid", True),
        clock=clock, spend_budgets=budgets,
        timings=Timings(url_lock_ttl=cfg.get("url_lock_ttl", 30.0), url_lock_wait=cfg.get("url_lock_wait", 30.0),
                        token_lock_ttl=cfg.get("token_lock_ttl", 30.0),
                        write_retry_s=cfg.get("write_retry_s", Timings.write_retry_s)),
        spool=AnswerSpool(Path(cfg["spool_dir"])) if cfg.get("spool_dir") else None,
    ).processor
    free_after = cfg.get("free_disk_after_s")
    if filler is not None and free_after is not None:
        threading.Thread(target=_free_once_full, args=(filler, float(free_after)), daemon=True).start()
    full_runs = cfg.get("full_runs")
    """With `full_runs` N: the disk stays full for the first N runs, freed before the next."""
    for n in range(int(cfg.get("runs", 1))):
        if n and filler is not None and (full_runs is None or n == full_runs):
            free(filler)
        run = processor.new_run()
        for address, symbol in cfg["tokens"]:
            out = processor.record(address, symbol, run)
            print(json.dumps({
                "run": n,
                "token": out.address,
                "status": out.status.value,
                "urls": [{"url": u.url, "status": str(u.status), "attempted": u.attempted, "detail": u.detail}
                         for u in out.urls],
            }), flush=True)
    if cfg.get("final_state"):
        address = cfg["tokens"][0][0]
        url = cfg["profiles"][address][0]
        el = store.find_element(address, url)
        state = store.find_url_state(url)
        print(json.dumps({"event": "final_state",
                          "element": None if el is None else {"status": el.status.value, "attempts": el.attempts},
                          "request": None if state is None or state.request is None else state.request.request_id}),
              flush=True)
    transport.close()
    if limiter is not None:
        limiter.close()
    if budgets is not None:
        budgets.close()
    locks.close()
    store.close()
    return 0


def _free_once_full(filler: Path, delay: float) -> None:
    DISK_FULL.wait()
    free(filler, delay)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
