"""Money as billed after a SIGKILL: a worker process kills itself at a chosen point of its first paid
request (the budget admitted it; its open call is recorded; the sandbox billed it), a second process
records the URL once the open call is past its timeout, and the spend ledger (`provider_spend`'s
figures) is compared with what the sandbox billed and what the shared budget counted
(docs/operations.md, "Spend budgets")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from social_recording.domain.spend import Budget
from social_recording.locks.spend_budget import open_spend_budgets
from social_recording.sandbox.ledger import Ledger
from social_recording.store import open_store
from social_recording_tests.integration.conftest import GUARD, REPO, store_url_of
from test_support.sandbox_env import write_scenario

URL = "https://x.com/i/status/1700000000000000001"
TTL = 1.0
AHEAD_S = 3 * 3600.0
"""The second process's clock: past the open call's timeout and the URL's back-off after one failure."""


def _run(cfg: dict[str, object]) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "social_recording_tests.integration.sandbox_worker",
                           json.dumps(cfg)], cwd=REPO, env=env, capture_output=True, text=True, timeout=GUARD)


@pytest.mark.parametrize("die_at", ["billed", "opened", "admitted"])
@pytest.mark.parametrize("store_kind", ["sqlite", pytest.param("mongo", marks=pytest.mark.mongo_server)])
def test_after_a_kill_the_ledger_holds_what_was_billed_and_says_what_it_cannot_know(
    tmp_path: Path, die_at: str, store_kind: str, request: pytest.FixtureRequest
) -> None:
    lock_url = f"sqlite:///{tmp_path / 'locks.db'}"
    ledger_path = tmp_path / "ledger.jsonl"
    store_url = store_url_of(request, store_kind, tmp_path)
    common = {"store_url": store_url, "lock_url": lock_url,
              "scenario": str(write_scenario(tmp_path / "scenario.json", [])), "ledger": str(ledger_path),
              "profiles": {"A": [URL]}, "tokens": [["A", "a"]], "url_lock_ttl": TTL, "token_lock_ttl": TTL,
              "spend_budgets": {"twitterapi": "50/day"}}
    dead = _run({**common, "die_at": die_at})
    assert dead.returncode == -9, dead.stderr[-2000:]
    time.sleep(TTL * 1.5)  # the dead process's leases run out
    done = _run({**common, "clock_ahead_s": AHEAD_S})
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[0])["urls"][0]["status"] == "ok", done.stdout

    billed = sum(1 for e in Ledger(ledger_path).read() if e.paid and e.service == "twitterapi")
    store = open_store(store_url)
    try:
        rows = store.spend_rows("2000-01-01")
        state = store.find_url_state(URL)
        totals = store.spend_totals()
    finally:
        store.close()
    assert state is not None and state.open_call is None
    ledger, unanswered = sum(r.requests for r in rows), sum(r.unanswered for r in rows)
    budgets = open_spend_budgets(lock_url, {"twitterapi": Budget("twitterapi", per_day=50)})
    try:
        counted = budgets.used("twitterapi")["day"]
    finally:
        budgets.close()
    assert totals.ledger == {"twitterapi": ledger} and totals.url_states == {"x": ledger}  # reconciled
    if die_at == "billed":  # killed after the provider billed it: entered once its open call was removed
        assert (billed, ledger, unanswered, counted) == (2, 2, 1, 2)
    elif die_at == "opened":  # killed before it left: not billed, yet nothing can tell it from the above
        assert (billed, ledger, unanswered, counted) == (1, 2, 1, 2)
    else:  # killed between the budget's answer and the call's record: a slot counted, nothing recorded
        assert (billed, ledger, unanswered, counted) == (1, 1, 0, 2)
