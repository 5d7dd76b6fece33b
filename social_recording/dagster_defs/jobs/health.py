"""health_check_job: the health of the recorded data as asset checks, evaluated every hour by
`health_schedule`, so the checks stay current when no recording run happens. A peer of the recording
jobs: the evaluation they all share is health_report.py.

No `from __future__ import annotations`: Dagster reads annotations at decoration time.
"""

from collections.abc import Iterator
from typing import TYPE_CHECKING

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetSelection,
    Definitions,
    define_asset_job,
    multi_asset_check,
)

from social_recording.dagster_defs.assets import (
    observations_for_run,
)
from social_recording.dagster_defs.health_report import (
    HealthInputs,
    check_specs,
    evaluate_health,
    exhausted_baseline,
    log_failures,
    to_result,
)
from social_recording.dagster_defs.job_kind import JobKind
from social_recording.dagster_defs.job_shape import utc_schedule
from social_recording.dagster_defs.spend import SPEND_CHECK_SPECS, spend_check_results
from social_recording.dagster_defs.stages import default_status
from social_recording.domain.models import utcnow
from social_recording.settings import Settings

if TYPE_CHECKING:
    from dagster._core.definitions.unresolved_asset_job_definition import UnresolvedAssetJobDefinition


HEALTH_JOB = "health_check_job"
HEALTH_CRON = "15 * * * *"
"""A quarter past every hour: between two retry runs (minute 0), so it sees what the last one left."""

def make_health_checks(*, sandbox: bool) -> AssetChecksDefinition:
    """The checks as one multi-asset check (one store read serves them all)."""

    @multi_asset_check(
        name="health_checks",
        specs=[*check_specs(sandbox=sandbox), *SPEND_CHECK_SPECS],
        required_resource_keys={"store", "platforms", "policy"},
        description="Convergence health of the recorded data: stuck pending elements, starved retries, "
        "exhausted growth" + (", paid requests per distinct paid subject (sandbox)" if sandbox else "")
        + ", the store's counters against a recount (repaired when they drifted), and spend: the budgets and "
        "the spend ledger reconciled with the URL states.",
    )
    def health_checks(context: AssetCheckExecutionContext) -> Iterator[AssetCheckResult]:
        store = context.resources.store.get()
        now = utcnow()
        inputs = HealthInputs.of(context.resources.policy, context.resources.platforms)
        baseline = exhausted_baseline(context.instance, now)
        checks = evaluate_health(store, inputs, now=now, baseline=baseline, hourly=True)
        # The hourly observation keeps the asset pages' plots going when no recording run happens
        # (after the recount: its figures are the repaired ones).
        for observation in observations_for_run(store, None):
            context.op_execution_context.log_event(observation)
        log_failures(checks, context.log.warning)
        for check in checks:
            yield to_result(check)
        yield from spend_check_results(store, inputs.budgets, now)

    return health_checks


def make_health_job(checks: AssetChecksDefinition) -> "UnresolvedAssetJobDefinition":
    return define_asset_job(
        HEALTH_JOB,
        selection=AssetSelection.checks(checks),
        tags=JobKind.HEALTH.tag,
        description="Evaluate the health checks of the recorded data (no recording, no upstream call).",
    )


def definitions(settings: Settings) -> Definitions:
    """The health checks, the health job and its hourly schedule; merged by the builder."""
    schedule_status, _ = default_status(settings.env)
    checks = make_health_checks(sandbox=settings.upstream == "sandbox")
    job = make_health_job(checks)
    schedule = utc_schedule("health_schedule", job, HEALTH_CRON, schedule_status,
                            "Hourly health checks of the recorded data, so they stay current between recording runs.")
    return Definitions(asset_checks=[checks], jobs=[job], schedules=[schedule])
