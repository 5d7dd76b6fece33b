"""A full disk under the store, for real: the worker runs in its own mount namespace on a small tmpfs
(`unshare --map-root-user --mount`: no root needed where user namespaces are allowed) that fills up
between a paid urlscan submission and the write of its result.

What must hold: the write is repeated while the disk stays full (bounded, like any store outage), so
space freed within the bound costs nothing; past the bound the URL fails, reported as attempted, and
the scan's id — saved when it was submitted — stays on the URL, so the next run polls that scan
instead of buying a second one (docs/architecture.md, "The three promises").
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from social_recording.domain.status import FetchStatus
from social_recording.sandbox.ledger import Ledger
from social_recording_tests.integration.conftest import GUARD, REPO
from test_support.sandbox_env import write_scenario

pytestmark = pytest.mark.integration

SITE = "https://full-disk.example/launch"
TWEET = "https://x.com/i/status/1790000000000000001"
"""A one-step paid URL (twitterapi.io): no request id to resume, so only the record of the call made
before it left, and the spool, keep a full disk from costing one payment per run."""
DISK_SIZE = "4m"
"""Room for the store's schema and a few writes; the filler takes the rest."""


def _record_on_a_small_disk(tmp_path: Path, **options: object) -> tuple[list[dict[str, Any]], Ledger, Path]:
    """Run the sandbox worker with its store on a fresh tmpfs of DISK_SIZE; returns its JSON lines,
    the ledger (outside the small disk) and the mount point (empty again once the namespace ends)."""
    unshare = shutil.which("unshare")
    assert unshare is not None, "the full-disk test needs util-linux's `unshare` (a mount namespace for a tmpfs)"
    disk = tmp_path / "disk"
    disk.mkdir()
    ledger_path = tmp_path / "ledger.jsonl"
    cfg = {"store_url": f"sqlite:///{disk / 'store.db'}", "lock_url": f"sqlite:///{tmp_path / 'locks.db'}",
           "scenario": str(write_scenario(tmp_path / "scenario.json", [])), "ledger": str(ledger_path),
           "profiles": {"A": [SITE]}, "tokens": [["A", "a"]], "fill_disk": str(disk / "filler"),
           "sleep_scale": 0.01, "spool_dir": str(tmp_path / "spool"), **options}
    # The worker also opens the store to print what it holds at the end (the tmpfs dies with it).
    script = f'mount -t tmpfs -o size={DISK_SIZE} tmpfs "$1" && shift && exec "$@"'
    proc = subprocess.run(
        [unshare, "--map-root-user", "--mount", "sh", "-c", script, "sh", str(disk), sys.executable, "-m",
         "social_recording_tests.integration.sandbox_worker", json.dumps(cfg)],
        cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=GUARD,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()], Ledger(ledger_path), disk


def _submissions(ledger: Ledger) -> list[str]:
    return [e.subject for e in ledger.read() if e.service == "urlscan" and e.subject.startswith("scan:")]


def test_a_disk_freed_within_the_write_retry_costs_nothing(tmp_path: Path) -> None:
    lines, ledger, _ = _record_on_a_small_disk(tmp_path, write_retry_s=30.0, free_disk_after_s=1.0)
    events = [line["event"] for line in lines if "event" in line]
    assert events == ["disk_full", "disk_freed"], lines
    url = next(line for line in lines if "token" in line)["urls"][0]
    assert url["status"] == "ok" and url["attempted"], url
    assert _submissions(ledger) == [f"scan:{SITE}"]


def test_a_disk_full_past_the_write_retry_fails_the_url_truthfully_and_the_next_run_resumes_the_paid_scan(
    tmp_path: Path,
) -> None:
    # No spool: the scan's saved id alone must keep the answer from being bought twice.
    lines, ledger, _ = _record_on_a_small_disk(tmp_path, write_retry_s=0.5, runs=2, final_state=True, spool_dir="")
    first, second = (line for line in lines if "token" in line)
    url = first["urls"][0]
    assert url["status"] == "failed" and url["attempted"], url  # the call was made: never attempted=False
    assert "its disk is full" in url["detail"] and "stays open for the next run to resume" in url["detail"], url
    again = second["urls"][0]
    assert again["status"] == "ok" and "resumed" in again["detail"], again
    assert _submissions(ledger) == [f"scan:{SITE}"]  # one scan bought across both runs
    state = next(line for line in lines if line.get("event") == "final_state")
    assert state["element"]["status"] == FetchStatus.OK.value and state["request"] is None, state


def _tweet_requests(ledger: Ledger) -> list[str]:
    return [e.subject for e in ledger.read() if e.service == "twitterapi" and e.paid]


@pytest.mark.parametrize("fill_at", ["open_call_refused", "open_call_saved"])
def test_runs_while_the_store_cannot_write_pay_for_a_tweet_at_most_once(tmp_path: Path, fill_at: str) -> None:
    """Found trying a full disk from outside: six runs while the store's disk was full and one after
    it was freed paid 7 requests for one tweet, as nothing recorded the calls. Now a paid call is
    recorded before it leaves: a store that cannot take that record sends nothing (the URL is left
    as it was, the run says why); an answer that came back when the store could no longer write is
    kept in the spool (on another disk) and written by the first run after the disk is freed, which
    pays nothing again. Six runs on a full disk, then one."""
    lines, ledger, _ = _record_on_a_small_disk(tmp_path, profiles={"A": [TWEET]}, fill_at=fill_at,
                                               write_retry_s=0.2, runs=7, full_runs=6, final_state=True)
    runs = [line for line in lines if "token" in line]
    assert len(runs) == 7, lines
    assert len(_tweet_requests(ledger)) <= 1, _tweet_requests(ledger)
    for line in runs[:6]:
        (url,) = line["urls"]
        assert url["status"] in ("deferred", "failed"), url
        if url["status"] == "deferred":
            assert ("could not record the paid" in url["detail"] or "waits in the spool" in url["detail"]), url
        else:  # the one run whose call went out before the disk filled
            assert url["attempted"] and "kept in the spool" in url["detail"], url
    (last,) = runs[6]["urls"]
    assert last["status"] == "ok", last
    assert len(_tweet_requests(ledger)) == 1, "the answer was written without paying again"
    state = next(line for line in lines if line.get("event") == "final_state")
    assert state["element"]["status"] == FetchStatus.OK.value, state
    assert not list((tmp_path / "spool").glob("*.json")), "the spooled answer was written and removed"
