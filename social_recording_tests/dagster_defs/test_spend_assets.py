"""Spend in the UI (docs/architecture.md, "Spend budgets"): a run that paid materializes
`provider_spend` with per-account figures and evaluates the budget check; the run log and metadata
count the URLs the budget held back; the hourly job reconciles the ledger with the URL states."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from dagster import AssetCheckEvaluation, AssetCheckSeverity, DagsterEventType, DagsterInstance

from social_recording.dagster_defs.jobs.health import HEALTH_JOB
from social_recording.dagster_defs.spend import LEDGER_MATCHES, PROVIDER_SPEND, WITHIN_BUDGET
from social_recording.domain.spend import Budget
from social_recording.recording.spend_report import AccountSpend, SpendFigures, budget_verdict
from social_recording.store import open_store
from test_support.sandbox_env import log_lines, make_env, output_metadata, token

A = "TokSpendA111111111111111111111111111111111"
B = "TokSpendB222222222222222222222222222222222"
TWEET_A = "https://x.com/i/status/1000000000000000011"
TWEET_B = "https://x.com/i/status/1000000000000000012"
KEYS = {"TWITTERAPI_IO_KEY": "twitterapi-key-S3cret", "GITHUB_TOKEN": "github-token-S3cret"}


def _spend_events(instance: DagsterInstance, run_id: str) -> tuple[dict[str, Any], dict[str, AssetCheckEvaluation]]:
    materialization: dict[str, Any] = {}
    checks: dict[str, AssetCheckEvaluation] = {}
    for entry in instance.all_logs(run_id):
        event = entry.dagster_event
        if event is None:
            continue
        if event.event_type == DagsterEventType.ASSET_MATERIALIZATION and event.asset_key == PROVIDER_SPEND:
            materialization = {k: v.value for k, v in event.event_specific_data.materialization.metadata.items()}
        data = event.event_specific_data
        if isinstance(data, AssetCheckEvaluation) and data.asset_key == PROVIDER_SPEND:
            checks[data.check_name] = data
    return materialization, checks


def test_a_run_over_the_budget_holds_back_materializes_spend_and_fails_the_budget_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = make_env(tmp_path, monkeypatch, [token(A, "2026-11-10T03:00:00Z", twitter=TWEET_A),
                                           token(B, "2026-11-10T04:00:00Z", twitter=TWEET_B)],
                   extra={**KEYS, "SOCIAL_RECORDING_SPEND_BUDGETS": json.dumps({"twitterapi": "1/day;40/month"})})
    instance = DagsterInstance.ephemeral()
    result = env.defs().resolve_job_def("reconcile_job").execute_in_process(partition_key="2026-11-10",
                                                                            instance=instance)
    assert result.success  # a budget held back is not work left behind: the retry job picks it up
    statuses = sorted(s for urls in env.statuses().values() for s in urls.values())
    assert statuses == ["ok", "skipped_paid"]
    assert output_metadata(result, "reconcile_window")["urls_held_by_budget"] == 1
    assert len(log_lines(instance, result.run_id, "urls_held_by_spend_budget urls=1 ")) == 1

    spend, checks = _spend_events(instance, result.run_id)
    assert spend["twitterapi_requests_today"] == 1 and spend["twitterapi_budget_per_day"] == 1
    assert spend["twitterapi_cost_usd_today"] == pytest.approx(0.00015)
    assert spend["twitterapi_budget_per_month"] == 40 and spend["urls_held_by_budget_this_run"] == 1
    assert spend["apify_requests_today"] == 0 and spend["urlscan_requests_today"] == 0
    budget = checks[WITHIN_BUDGET]
    assert not budget.passed and budget.severity is AssetCheckSeverity.ERROR
    assert "twitterapi: 1 of 1 paid requests this UTC day (used up" in (budget.description or "")

    health = env.defs().resolve_job_def(HEALTH_JOB).execute_in_process(instance=instance)
    assert health.success
    results = {e.check_name: e for e in health.get_asset_check_evaluations() if e.asset_key == PROVIDER_SPEND}
    assert results[LEDGER_MATCHES].passed and not results[WITHIN_BUDGET].passed
    store = open_store(env.store_url)
    try:
        assert [(r.account, r.requests) for r in store.spend_rows("2000-01-01")] == [("twitterapi", 1)]
    finally:
        store.close()


def test_the_budget_check_warns_at_80_percent_and_fails_when_used_up() -> None:
    now = datetime(2026, 12, 3, 12, tzinfo=UTC)

    def figures(day: int) -> SpendFigures:
        account = AccountSpend("urlscan", {"day": day, "month": day}, {"day": 0.0, "month": 0.0},
                               Budget("urlscan", per_day=10))
        return SpendFigures("2026-12-03", "2026-12", (account,), {"day": now, "month": now})

    assert budget_verdict(figures(7)).level == 0
    warn = budget_verdict(figures(8))
    assert warn.level == 1 and "8 of 10 paid requests this UTC day (80% used" in warn.summary
    assert budget_verdict(figures(10)).level == 2
