"""One worker process of bench/faults.py: records tokens with the real generators on the sandbox.

    python bench/_fault_worker.py '<json config>'

Config: store_path, lock_url, scenario, ledger, tokens ([[address, [canonical urls]]]), sleep_scale,
url_lock_ttl, token_lock_ttl, max_workers, marker (a file touched once the run is inside its first
call), unsafe (the benchmark-only switch: no dedupe gate, no URL lock), barrier ([path, n]: wait until n
workers have touched files under that path before starting, so they record at the same moment),
store_busy_timeout (the store's busy timeout), write_retry_s (how long a write is repeated while
the store is busy), spend_budgets (account -> "N/day", held on the lock backend by every worker),
die_at (SIGKILL itself at that point of its first paid request: test_support/kill_points.py) and
clock_ahead_s (the recording's clock runs that far ahead: a dead worker's open calls are past their
timeout).
Prints one JSON summary line.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from _common import ForgetfulStore, NoLocks  # noqa: E402, I001  (bench/ on sys.path)
from pydantic import SecretStr  # noqa: E402

from social_recording.domain.models import TokenProfile  # noqa: E402
from social_recording.locks import open_lock_manager  # noqa: E402
from social_recording.platforms.base import ProviderKeys  # noqa: E402
from social_recording.platforms.registry import build_registry  # noqa: E402
from social_recording.recording.engine import Timings, build_engine  # noqa: E402
from social_recording.sandbox.ledger import Ledger  # noqa: E402
from social_recording.sandbox.scenario import load_scenario  # noqa: E402
from social_recording.sandbox.transport import SandboxTransport, sandbox_resolve_host  # noqa: E402
from social_recording.store.sqlite import SqliteStore  # noqa: E402
from test_support.kill_points import worker_money  # noqa: E402

KEY = SecretStr("sandbox-key")


class Profiles:
    def __init__(self, tokens: list[tuple[str, list[str]]]) -> None:
        self._by = {a: TokenProfile(address=a, symbol=a[:6], image="https://img.example/t.png", urls=u)
                    for a, u in tokens}

    def read(self, address: str) -> TokenProfile | None:
        return self._by.get(address)

    def resolve_value(self, field: str, raw: str) -> str:
        return raw


def main(raw: str) -> int:
    cfg: dict[str, Any] = json.loads(raw)
    store = SqliteStore(cfg["store_path"], **({"busy_timeout": cfg["store_busy_timeout"]}
                                              if cfg.get("store_busy_timeout") else {}))
    locks = open_lock_manager(cfg["lock_url"])
    transport = SandboxTransport(load_scenario(Path(cfg["scenario"])), Ledger(Path(cfg["ledger"])))
    scale = float(cfg.get("sleep_scale", 0.01))
    marker = Path(cfg["marker"]) if cfg.get("marker") else None

    def sleep(seconds: float) -> None:
        if marker is not None and not marker.exists():
            marker.touch()  # inside a two-step call, between its steps
        time.sleep(max(0.0, seconds) * scale)

    keys = ProviderKeys(twitterapi_io_key=KEY, apify_token=KEY, youtube_api_key=KEY, urlscan_api_key=KEY)
    registry = build_registry(keys, transport=transport, sleep=sleep, resolve_host=sandbox_resolve_host)
    tokens = [(a, list(u)) for a, u in cfg["tokens"]]
    if cfg.get("unsafe"):
        store, locks = ForgetfulStore(store), NoLocks()  # type: ignore[assignment]
    timings = Timings(url_lock_ttl=cfg["url_lock_ttl"], url_lock_wait=cfg.get("url_lock_wait", 30.0),
                      token_lock_ttl=cfg["token_lock_ttl"],
                      **({"write_retry_s": cfg["write_retry_s"]} if "write_retry_s" in cfg else {}))
    budgets, clock = worker_money(cfg, store, transport)
    processor = build_engine(store, locks, registry, Profiles(tokens), enable_paid=True, timings=timings,
                             spend_budgets=budgets, clock=clock).processor
    if cfg.get("barrier"):
        folder, n = Path(cfg["barrier"][0]), int(cfg["barrier"][1])
        (folder / f"ready-{os.getpid()}").touch()
        deadline = time.monotonic() + 60
        while len(list(folder.glob("ready-*"))) < n and time.monotonic() < deadline:
            time.sleep(0.005)
    run = processor.new_run()
    with ThreadPoolExecutor(max_workers=cfg.get("max_workers", 4)) as pool:
        outcomes = list(pool.map(lambda t: processor.record(t[0], t[0][:6], run), tokens))
    statuses = Counter(str(u.status) for o in outcomes for u in o.urls)
    print(json.dumps({"statuses": dict(statuses), "lost": run.lost, "budget_held": run.budget_held}), flush=True)
    if budgets is not None:
        budgets.close()
    transport.close()
    locks.close()
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
