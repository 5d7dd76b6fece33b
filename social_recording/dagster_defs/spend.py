"""Spend in the UI: the `provider_spend` asset, materialized by every run that paid, and its checks —
the budgets (warn at 80 %, fail once used up) and, hourly, the ledger against the URL states
(docs/architecture.md, "Spend budgets").

Each materialization carries, per paid billing account, today's and this month's paid requests and
estimated cost as numbers, so the asset page plots them per account over time.

No `from __future__ import annotations`: Dagster reads annotations at decoration time.
"""

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from dagster import (
    AssetCheckEvaluation,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetKey,
    AssetMaterialization,
    AssetSpec,
    MetadataValue,
)

from social_recording.dagster_defs.assets import GROUP, PREFIX, TOKEN_SOCIAL_URLS
from social_recording.domain.spend import DAY, MONTH, Budget
from social_recording.platforms.catalogue import CATALOGUE
from social_recording.recording.spend_report import SpendFigures, budget_verdict, spend_drift
from social_recording.store.base import SpendStore

log = logging.getLogger("social_recording.spend")

PROVIDER_SPEND = AssetKey([PREFIX, "provider_spend"])
PAID_ACCOUNTS = ", ".join(a.name for a in CATALOGUE.paid_accounts())
"""The paid billing accounts, as the catalogue names them (the asset's description lists them)."""
WITHIN_BUDGET = "spend_within_budget"
LEDGER_MATCHES = "spend_ledger_matches_url_states"

PROVIDER_SPEND_SPEC = AssetSpec(
    PROVIDER_SPEND,
    description=(
        f"Paid requests and their estimated cost per paid billing account ({PAID_ACCOUNTS}) and UTC "
        "day, from the store's spend ledger: one counter per account and day, moved by the very write that "
        "records the paid call. Materialized by every run that paid; the plots show today's and this month's "
        "figures per account. Budgets: SOCIAL_RECORDING_SPEND_BUDGETS."
    ),
    deps=[TOKEN_SOCIAL_URLS],
    group_name=GROUP,
    metadata={"collection": MetadataValue.text("spend_ledger")},
)

SPEND_CHECK_SPECS = [
    AssetCheckSpec(WITHIN_BUDGET, asset=PROVIDER_SPEND, description=(
        "Each account's paid requests today and this month against its spend budget. WARN at 80 % of a budget; "
        "ERROR once it is used up: further paid requests are not sent (their URLs wait as skipped_paid until "
        "the budget resets).")),
    AssetCheckSpec(LEDGER_MATCHES, asset=PROVIDER_SPEND, description=(
        "Hourly only: the spend ledger's paid requests per account equal those counted on the URL states by "
        "the same writes. WARN: a write was interrupted between the two (or a defect); the drift is reported.")),
]


def spend_metadata(figures: SpendFigures) -> dict[str, Any]:
    meta: dict[str, Any] = {"day": MetadataValue.text(figures.day)}
    for a in figures.accounts:
        meta[f"{a.account}_requests_today"] = MetadataValue.int(a.requests[DAY])
        meta[f"{a.account}_cost_usd_today"] = MetadataValue.float(round(float(a.cost_usd[DAY]), 6))
        meta[f"{a.account}_requests_this_month"] = MetadataValue.int(a.requests[MONTH])
        meta[f"{a.account}_cost_usd_this_month"] = MetadataValue.float(round(float(a.cost_usd[MONTH]), 6))
        meta[f"{a.account}_unanswered_today"] = MetadataValue.int(a.unanswered.get(DAY, 0))
        meta[f"{a.account}_unanswered_this_month"] = MetadataValue.int(a.unanswered.get(MONTH, 0))
        for period in (DAY, MONTH):
            limit = None if a.budget is None else a.budget.limit(period)
            if limit is not None:
                meta[f"{a.account}_budget_per_{period}"] = MetadataValue.int(limit)
    return meta


def _budget_fields(figures: SpendFigures) -> dict[str, Any]:
    verdict = budget_verdict(figures)
    return {"asset_key": PROVIDER_SPEND, "check_name": WITHIN_BUDGET, "passed": verdict.level == 0,
            "severity": AssetCheckSeverity.ERROR if verdict.level == 2 else AssetCheckSeverity.WARN,
            "description": verdict.summary, "metadata": spend_metadata(figures)}


def report_spend(context: Any, store: SpendStore, budgets: Mapping[str, Budget], now: datetime, *,
                 held: int = 0) -> None:
    """A paying run's hook: materialize `provider_spend` and evaluate the budget check into the run.
    Never raises: spend describes the data, the run that recorded it did its job."""
    try:
        figures = SpendFigures.read(store, budgets, now)
        meta = spend_metadata(figures)
        meta["urls_held_by_budget_this_run"] = MetadataValue.int(held)
        context.log_event(AssetMaterialization(PROVIDER_SPEND, description="spend as recorded after this run",
                                               metadata=meta))
        context.log_event(AssetCheckEvaluation(**_budget_fields(figures), blocking=False))
    except Exception as exc:
        context.log.warning(f"spend report skipped: {type(exc).__name__} (the run's recording is unaffected)")
        log.warning("spend report failed", exc_info=True)


def spend_check_results(store: SpendStore, budgets: Mapping[str, Budget], now: datetime) -> list[AssetCheckResult]:
    """The hourly health job's spend checks: the budgets, and the ledger reconciled with the URL states."""
    drift = spend_drift(store.spend_totals())
    shown = "; ".join(f"{a}: ledger {led}, URL states {st}" for a, (led, st) in drift.items())
    return [
        AssetCheckResult(**_budget_fields(SpendFigures.read(store, budgets, now))),
        AssetCheckResult(
            asset_key=PROVIDER_SPEND, check_name=LEDGER_MATCHES, passed=not drift, severity=AssetCheckSeverity.WARN,
            description=f"the ledger differs from the URL states: {shown}" if drift else
            "the spend ledger matches the paid requests the URL states count",
            metadata={"accounts_drifted": MetadataValue.int(len(drift)),
                      "requests_drift": MetadataValue.int(sum(abs(led - st) for led, st in drift.values()))},
        ),
    ]
