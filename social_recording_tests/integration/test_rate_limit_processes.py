"""A provider's rate holds across several worker processes at once (locks/rate_limits.py).

Four OS processes record tokens with the REAL generators on the sandbox, whose scenario sets GitHub's
rate: past it the sandbox answers GitHub's 429 (counted across processes in its state file), as the
real API would. Without the shared limiter the processes together exceed the rate and meet 429s; with
it (on either lock backend) no request gets a 429 and no window of the sandbox saw more than the rate.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from social_recording.sandbox.ledger import Ledger
from social_recording.store.sqlite import SqliteStore
from social_recording_tests.integration.conftest import GUARD, REPO

pytestmark = pytest.mark.integration

WORKERS = 4
TOKENS_PER_WORKER = 6
RATE = 12
"""GitHub requests per second the sandbox accepts in this test."""


def _run_workers(tmp_path: Path, lock_url: str, *, limiter: bool) -> Ledger:
    scenario = tmp_path / "scenario.json"
    scenario.write_text(json.dumps({"tokens": [], "rate_limits": {"github": {"requests": RATE, "per_seconds": 1}}}))
    store_path = tmp_path / "store.db"
    SqliteStore(store_path).close()
    ledger_path = tmp_path / "ledger.jsonl"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    procs = []
    for w in range(WORKERS):
        tokens = [f"RateTok{w}x{i}" for i in range(TOKENS_PER_WORKER)]
        profiles = {t: [f"https://github.com/{t.lower()}/repo-a", f"https://github.com/{t.lower()}/repo-b"]
                    for t in tokens}
        cfg = {"store_url": f"sqlite:///{store_path}", "lock_url": lock_url, "scenario": str(scenario),
               "ledger": str(ledger_path), "profiles": profiles, "tokens": [[t, t] for t in tokens],
               "sleep_scale": 0.01, "rate_limit_url": lock_url if limiter else None}
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "social_recording_tests.integration.sandbox_worker", json.dumps(cfg)],
            cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        ))
    for p in procs:
        _out, err = p.communicate(timeout=GUARD * 3)
        assert p.returncode == 0, err[-3000:]
    return Ledger(ledger_path)


def _github(ledger: Ledger) -> list[tuple[float, int]]:
    return [(e.ts.timestamp(), e.status) for e in ledger.read() if e.service == "github"]


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_the_shared_limiter_keeps_every_process_under_the_providers_rate(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    lock_url = request.getfixturevalue("redis_url") if backend == "redis" else f"sqlite:///{tmp_path / 'locks.db'}"
    (tmp_path / "without").mkdir()
    (tmp_path / "with").mkdir()
    without = _github(_run_workers(tmp_path / "without", lock_url, limiter=False))
    assert sum(1 for _, status in without if status == 429) > 0  # the rate is really exceeded without it

    with_limiter = _github(_run_workers(tmp_path / "with", lock_url, limiter=True))
    assert len(with_limiter) >= WORKERS * TOKENS_PER_WORKER * 2
    assert [status for _, status in with_limiter if status == 429] == []
    per_window = Counter(math.floor(ts) for ts, _ in with_limiter)  # a line's time: when the request arrived
    assert max(per_window.values()) <= RATE
