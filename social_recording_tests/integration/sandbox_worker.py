"""A worker OS process that records tokens with the REAL generators on the sandbox transport.

    python -m social_recording_tests.integration.sandbox_worker '<json config>'

Config: `store_path`, `lock_url`, `scenario`, `ledger`, `profiles` ({address: [canonical urls]}),
`tokens` ([[address, symbol]]), `sleep_scale` (client-side waits such as urlscan's first poll wait
are multiplied by it: small enough to be quick, large enough for a test to kill the process inside
one), `url_lock_ttl`, `token_lock_ttl`, `enable_paid`, `rate_limit_url` (when set, every provider request
asks the shared rate limiter on that lock backend, with the scenario's rates). Prints one JSON line
per token.
"""

from __future__ import annotations

import json
import math
import sys
import time
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from social_recording.locks import open_lock_manager
from social_recording.locks.rate_limits import open_rate_limiter
from social_recording.outbound.limits import Rate
from social_recording.platforms.base import ProviderKeys
from social_recording.platforms.registry import build_registry
from social_recording.recording.engine import Timings, build_engine
from social_recording.sandbox.ledger import Ledger
from social_recording.sandbox.scenario import load_scenario
from social_recording.sandbox.transport import SandboxTransport, sandbox_resolve_host
from social_recording.store.sqlite import SqliteStore
from social_recording_tests.recording.engine_fakes import FakeProfiles

SANDBOX_KEY = SecretStr("sandbox-key")


def main(raw: str) -> int:
    cfg: dict[str, Any] = json.loads(raw)
    store = SqliteStore(cfg["store_path"])
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
    processor = build_engine(
        store, locks, registry, profiles, enable_paid=cfg.get("enable_paid", True),
        timings=Timings(url_lock_ttl=cfg.get("url_lock_ttl", 30.0), url_lock_wait=cfg.get("url_lock_wait", 30.0),
                        token_lock_ttl=cfg.get("token_lock_ttl", 30.0)),
    ).processor
    run = processor.new_run()
    for address, symbol in cfg["tokens"]:
        out = processor.record(address, symbol, run)
        print(json.dumps({
            "token": out.address,
            "status": out.status.value,
            "urls": [{"url": u.url, "status": str(u.status), "attempted": u.attempted, "detail": u.detail}
                     for u in out.urls],
        }), flush=True)
    transport.close()
    if limiter is not None:
        limiter.close()
    locks.close()
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
