"""End to end: four `live_tokens_job` runs at once, in four OS processes, over the demo scenario.

Each process loads the real code location (`social_recording.definitions`) from its environment:
the same temporary SQLite store, the same sandbox ledger (and flaky-counter state) file, paid calls
on, and the real redis-server of the `redis_url` fixture for locks. The batches overlap: tokens
sharing a URL sit in different processes, and a few tokens are in two batches. Afterwards:

- the ledger shows no paid request repeated (same service + subject; urlscan `result:` polls aside);
- every token's URLs carry the status its scenario outcome implies;
- tokens sharing an `ok` URL hold identical links for it, but for the token address.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from social_recording.domain.models import TokenDoc
from social_recording.domain.urls import Platform, platform_of
from social_recording.platforms.base import PAID_PLATFORMS
from social_recording.sandbox import DEMO_SCENARIO_PATH, Ledger, OutcomeKind, load_scenario
from social_recording.sandbox.scenario import Scenario, ScriptedOutcome
from social_recording.sandbox.subjects import canonical_or_none, subject_key, target_subjects
from social_recording.store import open_store

pytestmark = pytest.mark.integration

WORKERS = 4
_TG_PRIVATE = frozenset({"joinchat", "c", "addlist", "m"})
FREE_ATTEMPTS = 3  # free platforms retry 3 times in one call; paid ones never (a retry costs money)

WORKER = r"""
import json, sys, time
from pathlib import Path
from dagster import DagsterInstance
from social_recording.definitions import defs

config_path, ready, go = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
job = defs.resolve_job_def("live_tokens_job")
run_config = json.loads(Path(config_path).read_text())
ready.touch()
deadline = time.monotonic() + 120
while not go.exists():  # start together: imports are done, only the run is left
    if time.monotonic() > deadline:
        sys.exit("no start signal")
    time.sleep(0.02)
result = job.execute_in_process(run_config=run_config, instance=DagsterInstance.ephemeral())
meta = {}
for event in result.events_for_node("record_tokens"):
    if event.is_successful_output:
        meta = {k: v.value for k, v in event.step_output_data.metadata.items()
                if isinstance(v.value, (int, float, str))}
print(json.dumps({"output": result.output_for_node("record_tokens"), "meta": meta}))
sys.exit(0 if result.success else 1)
"""


def _eligible(scenario: Scenario) -> list[str]:
    """What token_flow_sensor would launch: enough AF investors. A token with a credit_exhausted URL
    is left out: the run that meets it stops its further calls to that provider account (run-scoped),
    which would make other tokens' statuses depend on thread timing."""
    out = []
    for t in scenario.tokens:
        urls = [c for v in t.social_values().values() if isinstance(v, str) and (c := canonical_or_none(v))]
        outcomes = [_outcome_of(scenario, u) for u in urls]
        if t.investor_count >= 3 and not any(o and o.kind is OutcomeKind.CREDIT_EXHAUSTED for o in outcomes):
            out.append(t.address)
    return out


def _batches(addresses: list[str]) -> list[list[str]]:
    """Round robin (tokens sharing URLs land in different processes) + each batch repeats the next
    batch's first token (two processes race for the same token)."""
    batches = [addresses[i::WORKERS] for i in range(WORKERS)]
    for i in range(WORKERS):
        batches[i].append(batches[(i + 1) % WORKERS][0])
    return batches


def _outcome_of(scenario: Scenario, url: str) -> ScriptedOutcome | None:
    """The scenario outcome the sandbox applies to `url`'s requests (matched by provider subject)."""
    if url in scenario.targets:
        return scenario.targets[url].outcome
    mine = {subject_key(s) for s in target_subjects(url)}
    for target, spec in scenario.targets.items():
        if mine & {subject_key(s) for s in target_subjects(target)}:
            return spec.outcome
    return None


def _expected_status(scenario: Scenario, url: str) -> str:
    platform = platform_of(url)
    path = url.split("://", 1)[1].split("/", 2)
    if platform is Platform.TELEGRAM and len(path) > 1 and (path[1].startswith("+") or path[1] in _TG_PRIVATE):
        return "blocked"  # an invite / private link: blocked without a call (the Telegram generator)
    outcome = _outcome_of(scenario, url)
    kind = outcome.kind if outcome is not None else OutcomeKind.OK
    paid = platform in PAID_PLATFORMS
    if kind is OutcomeKind.OK:
        return "ok"
    if kind in (OutcomeKind.NOT_FOUND, OutcomeKind.BLOCKED):
        return kind.value
    if kind is OutcomeKind.INVALID:
        return "invalid" if platform is Platform.X else "ok"  # only X's quote chain can break the contract
    if kind in (OutcomeKind.ERROR, OutcomeKind.RATE_LIMITED):
        return "error"
    if kind is OutcomeKind.FLAKY:
        assert outcome is not None
        calls = 1 if paid else FREE_ATTEMPTS
        return "ok" if outcome.flaky_calls < calls else "error"
    raise AssertionError(f"unexpected outcome {outcome} for {url}")


def test_four_live_runs_at_once_never_pay_twice(tmp_path: Path, redis_url: str) -> None:
    scenario = load_scenario(DEMO_SCENARIO_PATH)
    addresses = _eligible(scenario)
    batches = _batches(addresses)
    store_db = tmp_path / "store.db"
    ledger_path = tmp_path / "ledger.jsonl"
    home = tmp_path / "dagster_home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SOCIAL_RECORDING_")}
    env.update({
        "DAGSTER_HOME": str(home),
        "SOCIAL_RECORDING_STORE_URL": f"sqlite:///{store_db}",
        "SOCIAL_RECORDING_LOCK_URL": redis_url,
        "SOCIAL_RECORDING_UPSTREAM": "sandbox",
        "SOCIAL_RECORDING_SANDBOX_LEDGER": str(ledger_path),
        "SOCIAL_RECORDING_ENABLE_PAID": "true",
    })
    go = tmp_path / "go"
    procs = []
    for i, batch in enumerate(batches):
        config = tmp_path / f"batch{i}.json"
        symbols = {t.address: t.symbol or "" for t in scenario.tokens}
        config.write_text(json.dumps({"ops": {"record_tokens": {"config": {
            "tokens": [{"address": a, "symbol": symbols[a]} for a in batch], "max_workers": 4}}}}))
        procs.append(subprocess.Popen(
            [sys.executable, "-c", WORKER, str(config), str(tmp_path / f"ready{i}"), str(go)],
            env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        ))
    deadline = time.monotonic() + 180
    while not all((tmp_path / f"ready{i}").exists() for i in range(WORKERS)):
        assert all(p.poll() is None for p in procs), [p.communicate() for p in procs if p.poll() is not None]
        assert time.monotonic() < deadline, "workers did not get ready"
        time.sleep(0.05)
    go.touch()
    reports = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        reports.append(json.loads(out.strip().splitlines()[-1]))

    # 1. No paid request was made twice for the same thing.
    ledger = Ledger(ledger_path)
    assert ledger.repeated_paid_subjects() == {}
    assert any(e.paid for e in ledger.read())

    # 2. Every token carries the statuses the scenario implies; each raced token was recorded once.
    store = open_store(f"sqlite:///{store_db}")
    try:
        docs: dict[str, TokenDoc] = {}
        for a in addresses:
            doc = store.find_token(a)
            if doc is not None:
                docs[a] = doc
        without_image = {t.address for t in scenario.tokens if t.address in addresses and not t.image_url}
        assert set(docs) == set(addresses) - without_image
        mismatches = {
            (a, el.url): (el.status.value, _expected_status(scenario, el.url))
            for a, doc in docs.items() for el in doc.social_urls
            if el.status.value != _expected_status(scenario, el.url)
        }
        assert mismatches == {}
        assert sum(r["output"]["tokens"] for r in reports) == len(addresses) + WORKERS
        assert sum(r["output"]["created"] for r in reports) == len(docs)
        assert sum(r["meta"].get("urls_reused", 0) for r in reports) > 0  # the dedupe gate answered

        # 3. Tokens sharing an ok URL: identical links but for the address.
        holders: dict[str, list[str]] = defaultdict(list)
        for a, doc in docs.items():
            for el in doc.social_urls:
                if el.status.value == "ok":
                    holders[el.url].append(a)
        shared = {url: owners for url, owners in holders.items() if len(owners) > 1}
        assert len(shared) >= 3
        for url, owners in shared.items():
            shapes = [sorted(link.shape() for link in store.find_links(a, url)) for a in owners]
            assert shapes[0], f"no links for {url}"
            assert all(s == shapes[0] for s in shapes), url
    finally:
        store.close()
