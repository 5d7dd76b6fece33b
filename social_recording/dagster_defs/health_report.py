"""The health of the recorded data as Dagster asset checks, shared by every job: the evaluation, its
check specs and descriptions, and `report_health`, which every recording run's report stage calls.

The verdicts come from `recording.health` (plain Python over the store); this module turns them into
Dagster events on `token_social_urls`: after every recording run, `report_health` logs the
materializations and observations of `assets.py` and one `AssetCheckEvaluation` per check into that
run (never failing it: a failing check describes the data, and the run that recorded the data did its
job). The health job (jobs/health.py) runs the same evaluation hourly (docs/architecture.md, "Health").

No `from __future__ import annotations`: Dagster reads annotations at decoration time.
"""

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from dagster import (
    AssetCheckEvaluation,
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetObservation,
    AssetRecordsFilter,
    DagsterInstance,
    MetadataValue,
    TableColumn,
    TableRecord,
    TableSchema,
)

from social_recording.dagster_defs.assets import (
    TOKEN_SOCIAL_URLS,
    materializations_for_run,
    observations_for_run,
)
from social_recording.domain.models import utcnow
from social_recording.domain.spend import Budget
from social_recording.domain.status import FetchStatus
from social_recording.domain.urls import Platform
from social_recording.platforms.catalogue import CATALOGUE
from social_recording.recording.health import (
    COUNTS_MATCH,
    EXHAUSTED_GROWTH,
    EXHAUSTED_WINDOW,
    LONGEST_RUN,
    PAID_ONCE,
    STARVED_AFTER,
    STARVED_RETRIES,
    STUCK_PENDING,
    STUCK_PENDING_AFTER,
    ExhaustedBaseline,
    HealthCheck,
    PaidLedgerFigures,
    RunFigures,
    Severity,
    StoreFigures,
    check_counts,
    check_exhausted_growth,
    check_paid_once,
    check_starved_retries,
    check_stuck_pending,
    hours_text,
)
from social_recording.recording.outcomes import Written
from social_recording.recording.run_state import RunState
from social_recording.store.base import HealthStore, Store

if TYPE_CHECKING:
    from dagster._core.event_api import EventLogRecord

    from social_recording.sandbox.ledger import Ledger

log = logging.getLogger("social_recording.health")

_EXHAUSTED_KEY = f"urls_{FetchStatus.EXHAUSTED.value}"
"""The observation figure the growth check compares (written by `observations_for_run`)."""

_DESCRIPTIONS: dict[str, str] = {
    STUCK_PENDING: (
        f"No pending element is older than {hours_text(STUCK_PENDING_AFTER)} (the URL lock's expiry plus the "
        f"longest run, {hours_text(LONGEST_RUN)}): a pending element that old was never recorded and no run has reached it. ERROR: "
        "nothing at all is recorded for it."
    ),
    STARVED_RETRIES: (
        f"No element the default retry selection would take has waited more than {hours_text(STARVED_AFTER)} since its "
        "last recording (its back-off plus two hourly retry cycles). What the retry deliberately leaves alone "
        "(no generator, paid calls off) is not counted. WARN: the elements are late, not lost."
    ),
    EXHAUSTED_GROWTH: (
        "The number of exhausted elements grows by at most SOCIAL_RECORDING_MAX_EXHAUSTED_PER_HOUR per hour, "
        "compared with the observation at least an hour old. WARN: exhausted is a recorded outcome; a burst "
        "suggests a provider outage or a bug spending call budgets."
    ),
    PAID_ONCE: (
        "Sandbox only: the ledger's paid requests per distinct paid subject equal 1.00 (second steps of "
        "two-step calls aside, and retries after a transient failure, which spend the URL's call budget). "
        "ERROR: a subject paid for again after it was answered is a payment made twice."
    ),
    COUNTS_MATCH: (
        "Hourly only: the store's figures (elements by platform and status, tokens, objects, metric points, "
        "links) are read from counters every write keeps; the health job recounts everything and repairs the "
        "counters that differ. WARN: the figures shown since the last recount were off by the drift reported."
    ),
}

_SEVERITY = {Severity.WARN: AssetCheckSeverity.WARN, Severity.ERROR: AssetCheckSeverity.ERROR}

_EXAMPLE_COLUMNS = ("token", "url", "status", "platform", "waiting_since", "attempts", "detail")
_EXAMPLE_SCHEMA = TableSchema(columns=[TableColumn(c, "int" if c == "attempts" else "string")
                                       for c in _EXAMPLE_COLUMNS])


def check_names(*, sandbox: bool, hourly: bool = False) -> list[str]:
    """The checks of this configuration: the ledger check exists only in the sandbox; `hourly` adds the
    counters' recount, which only the hourly health job runs (never a run's report stage)."""
    return [STUCK_PENDING, STARVED_RETRIES, EXHAUSTED_GROWTH, *([PAID_ONCE] if sandbox else []),
            *([COUNTS_MATCH] if hourly else [])]


def check_specs(*, sandbox: bool) -> list[AssetCheckSpec]:
    return [AssetCheckSpec(name, asset=TOKEN_SOCIAL_URLS, description=_DESCRIPTIONS[name])
            for name in check_names(sandbox=sandbox, hourly=True)]


@dataclass(frozen=True)
class HealthInputs:
    """What the checks need besides the store: the retry job's configuration (to judge starvation
    with its own selection), the exhausted bound, and the sandbox ledger (None live)."""

    enable_paid: bool
    usable_platforms: frozenset[Platform]
    max_exhausted_per_hour: int
    ledger: "Ledger | None"
    budgets: Mapping[str, Budget] = field(default_factory=dict)
    """The spend budgets (the `provider_spend` check)."""

    @classmethod
    def of(cls, policy: Any, platforms: Any) -> "HealthInputs":
        """From a run's `policy` and `platforms` resources (and the upstream behind them): the same
        values the retry job reads, so the starvation check and the retry selection never disagree."""
        return cls(
            enable_paid=policy.enable_paid,
            usable_platforms=frozenset(platforms.registry().usable_platforms()),
            max_exhausted_per_hour=policy.max_exhausted_per_hour,
            ledger=platforms.upstream.ledger(),
            budgets=platforms.parsed_budgets(),
        )


def ledger_figures(ledger: "Ledger") -> PaidLedgerFigures:
    """Paid requests (second steps of two-step calls aside) against the distinct subjects they were for,
    reading only the lines appended since the last evaluation (`PaidTally`)."""
    from social_recording.sandbox.paid_tally import PaidTally  # only where a sandbox ledger exists

    return PaidTally(ledger, second_steps=CATALOGUE.second_steps()).figures()


def baseline_observations(instance: DagsterInstance, now: datetime) -> Sequence["EventLogRecord"]:
    """The observation of `token_social_urls` the growth check compares with: the latest one at least
    `EXHAUSTED_WINDOW` old, or the earliest when none is that old yet (empty: never observed). The
    housekeeping job keeps the run that holds it."""
    cutoff = (now - EXHAUSTED_WINDOW).timestamp()
    records = instance.fetch_observations(
        AssetRecordsFilter(asset_key=TOKEN_SOCIAL_URLS, before_timestamp=cutoff), limit=1
    ).records
    if not records:
        records = instance.fetch_observations(TOKEN_SOCIAL_URLS, limit=1, ascending=True).records
    return records


def exhausted_baseline(instance: DagsterInstance, now: datetime) -> ExhaustedBaseline | None:
    """The exhausted count of the baseline observation (`baseline_observations`; None: never observed)."""
    for record in baseline_observations(instance, now):
        observation = record.asset_observation
        value = observation.metadata.get(_EXHAUSTED_KEY) if observation is not None else None
        if value is not None and isinstance(value.value, int):
            return ExhaustedBaseline(value.value, datetime.fromtimestamp(record.timestamp, UTC))
    return None


def evaluate_health(
    store: HealthStore,
    inputs: HealthInputs,
    *,
    now: datetime,
    baseline: ExhaustedBaseline | None,
    figures: StoreFigures | None = None,
    hourly: bool = False,
) -> list[HealthCheck]:
    """Every check of this configuration, in `check_names` order; `hourly` (the health job) first
    recounts the store's counters and repairs them, so the figures that follow are the recount's."""
    reconciled = check_counts(store.reconcile_counts()) if hourly else None
    if hourly:
        figures = None  # read after the repair
    exhausted = (figures or StoreFigures.read(store)).by_status[FetchStatus.EXHAUSTED]
    checks = [
        check_stuck_pending(store, now),
        check_starved_retries(store, now, enable_paid=inputs.enable_paid, usable_platforms=inputs.usable_platforms),
        check_exhausted_growth(exhausted, baseline, now, max_per_hour=inputs.max_exhausted_per_hour),
    ]
    if inputs.ledger is not None:
        checks.append(check_paid_once(ledger_figures(inputs.ledger)))
    if reconciled is not None:
        checks.append(reconciled)
    return checks


def check_metadata(check: HealthCheck) -> dict[str, Any]:
    """Numbers (plotted per check), the failing elements as a table, repeated paid subjects as text."""
    meta: dict[str, Any] = {
        key: MetadataValue.float(float(v)) if isinstance(v, float) else MetadataValue.int(int(v))
        for key, v in check.figures.items()
    }
    if check.examples:
        meta["examples"] = MetadataValue.table(
            records=[TableRecord(e.as_row()) for e in check.examples], schema=_EXAMPLE_SCHEMA
        )
    if check.subjects:
        meta["repeated_paid_subjects"] = MetadataValue.md("\n".join(f"- `{s}`" for s in check.subjects))
    return meta


def _fields(check: HealthCheck) -> dict[str, Any]:
    """What an evaluation in a run's log and a check job's result both carry."""
    return {
        "asset_key": TOKEN_SOCIAL_URLS,
        "check_name": check.name,
        "passed": check.passed,
        "metadata": check_metadata(check),
        "severity": _SEVERITY[check.severity],
        "description": check.summary,
    }


def to_evaluation(check: HealthCheck) -> AssetCheckEvaluation:
    """For a recording run's event log (never blocking: the run's data is recorded either way)."""
    return AssetCheckEvaluation(**_fields(check), blocking=False)


def to_result(check: HealthCheck) -> AssetCheckResult:
    return AssetCheckResult(**_fields(check))


def log_failures(checks: Sequence[HealthCheck], warn: Any) -> None:
    for check in checks:
        if not check.passed:
            names = ", ".join(f"{e.token} {e.url}" for e in check.examples) or ", ".join(check.subjects)
            warn(f"health check {check.name} ({check.severity.value}) failed: {check.summary}"
                 + (f"; e.g. {names}" if names else ""))


def report_health(context: Any, store: Store, inputs: HealthInputs, run_summary: RunState | RunFigures | None, *,
                  job: str = "", written: Mapping[Written, int] | None = None) -> None:
    """The recording stages' hook: materialize the assets the run wrote to, observe every one of
    them, and evaluate the health checks into this run's event log. Whatever happens here is logged
    and swallowed: health describes the data, and must never fail the run that recorded it."""
    observations: list[AssetObservation] = []
    figures: StoreFigures | None = None
    try:
        figures = StoreFigures.read(store)
        observations = observations_for_run(store, run_summary, figures=figures)
    except Exception as exc:
        context.log.warning(f"asset observations skipped: {type(exc).__name__} (the run's recording is unaffected)")
        log.warning("asset observations failed", exc_info=True)
    for event in [*observations, *materializations_for_run(job, written or {}, observations)]:
        context.log_event(event)
    if figures is None:
        return
    try:
        now = utcnow()
        baseline = exhausted_baseline(context.instance, now)
        checks = evaluate_health(store, inputs, now=now, baseline=baseline, figures=figures)
        for check in checks:
            context.log_event(to_evaluation(check))
        log_failures(checks, context.log.warning)
    except Exception as exc:  # health must never fail the run that recorded the data
        context.log.warning(f"health report skipped: {type(exc).__name__} (the run's recording is unaffected)")
        log.warning("health report failed", exc_info=True)
