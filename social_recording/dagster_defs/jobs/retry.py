"""retry_job: re-attempt URLs that have not converged — its config, stages, graph, job, the hourly
`retry_schedule` and `retry_candidates_sensor` (docs/architecture.md, "Retry").

The graph `retry_urls` selects the due elements (the retry selection, reading the store only),
records them under the retry job lock, and reports. Users, the schedule and the sensor configure it
as one node: `{"ops": {"retry_urls": {"config": {...}}}}`.

No `from __future__ import annotations`: Dagster reads these annotations at decoration time.
"""

import json
from collections.abc import Collection
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any

from dagster import (
    Config,
    DagsterRunStatus,
    DefaultSensorStatus,
    Definitions,
    JobDefinition,
    MetadataValue,
    OpExecutionContext,
    Output,
    RunConfig,
    RunRequest,
    RunsFilter,
    SensorDefinition,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    op,
    sensor,
)
from pydantic import Field

from social_recording.dagster_defs.engine import RecordingEngineResource
from social_recording.dagster_defs.job_kind import JobKind
from social_recording.dagster_defs.job_shape import JobConfig, one_node_job, staged_graph, utc_schedule
from social_recording.dagster_defs.reporting import RecordedRun, skipped_note
from social_recording.dagster_defs.resources import PlatformsResource, RecordingPolicyResource, StoreResource
from social_recording.dagster_defs.sensor_answer import sensor_answer
from social_recording.dagster_defs.stages import (
    PREVIEW_ROWS,
    CallBounds,
    Recorded,
    default_status,
    preview,
    record_stage,
    seconds,
    stage_config,
    workers_field,
)
from social_recording.dagster_defs.termination import sigterm_terminates
from social_recording.domain.policy import DEFAULT_MIN_INTERVAL, DEFAULT_MIN_INTERVAL_MINUTES
from social_recording.domain.status import FetchStatus
from social_recording.domain.urls import Platform
from social_recording.recording.candidates import (
    DEFAULT_LIMIT,
    MAX_LIMIT,
    by_status,
    describe_default,
    retry_query,
    select,
)
from social_recording.recording.engine import Engine
from social_recording.recording.log_line import kv_fields
from social_recording.recording.retry import RetrySelection
from social_recording.recording.run_state import RunState
from social_recording.settings import Settings
from social_recording.store.base import SelectionStore

RETRY_CRON = "0 * * * *"
"""Hourly, at the top of the hour (the status command's next tick and the health checks' retry cycle)."""
RETRY_SENSOR_INTERVAL_S = 300
ACTIVE_RUN_STATUSES = [
    DagsterRunStatus.QUEUED,
    DagsterRunStatus.NOT_STARTED,
    DagsterRunStatus.STARTING,
    DagsterRunStatus.STARTED,
    DagsterRunStatus.CANCELING,
]

# --------------------------------------------------------------------------- config

STATUSES_HELP = (
    "Statuses to re-attempt. Leave empty for the default selection: error and pending, plus "
    "skipped_paid when paid calls are on and unsupported when a generator now exists for its "
    "platform (what a retry can change under this configuration). Naming statuses selects "
    "them as named, absorbing ones included (not_found, blocked, invalid, exhausted: one fresh "
    "call each). `ok` cannot be named: it is final, and re-opening it would pay again for an "
    "answer already recorded."
)


class RetryableStatus(Enum):
    """Every FetchStatus but `ok`: a retry may never reopen a success (it would pay again for an
    answer already recorded, and `ok` is final).

    An Enum (not a free string) so that `statuses: [ok]` fails Dagster's config validation at
    launch, before any run exists.
    """

    not_found = "not_found"
    blocked = "blocked"
    invalid = "invalid"
    exhausted = "exhausted"
    error = "error"
    unsupported = "unsupported"
    skipped_paid = "skipped_paid"
    pending = "pending"


assert {s.value for s in RetryableStatus} == {s.value for s in FetchStatus} - {FetchStatus.OK.value}


class RetrySelectConfig(Config):
    """The selection stage."""

    statuses: list[RetryableStatus] | None = Field(default=None, description=STATUSES_HELP)
    token_addresses: list[str] | None = Field(default=None, description="Only these tokens.")
    limit: int = Field(default=DEFAULT_LIMIT, ge=1, le=MAX_LIMIT, description=f"Cap on URLs (1-{MAX_LIMIT}).")
    min_interval_minutes: int = Field(
        default=DEFAULT_MIN_INTERVAL_MINUTES, ge=0,
        description=(f"This run's back-off interval: {DEFAULT_MIN_INTERVAL_MINUTES} takes what is due now; less takes "
                     "each element that much earlier than its due time (0, with the default flat back-off: "
                     "everything recorded before now)."),
    )

    def fetch_statuses(self) -> list[FetchStatus] | None:
        return None if not self.statuses else [FetchStatus(s.value) for s in self.statuses]


class RetryRecordConfig(CallBounds):
    """The recording stage."""

    deadline_seconds: float | None = Field(default=None, gt=0, description="No URL started after this.")
    max_workers: int = workers_field()


class RetryConfig(RetrySelectConfig, RetryRecordConfig, JobConfig):
    """`retry_job`: re-attempt URLs that are not converged. `ok` cannot be named."""

    def stage_configs(self) -> dict[str, Any]:
        return {
            "select_retry_candidates": stage_config(
                statuses=[s.value for s in self.statuses] if self.statuses else None,
                token_addresses=self.token_addresses or None,
                limit=self.limit,
                min_interval_minutes=self.min_interval_minutes,
            ),
            "record_retry_candidates": stage_config(
                deadline_seconds=self.deadline_seconds, max_workers=self.max_workers,
                provider_concurrency=self.provider_concurrency or None),
        }


# --------------------------------------------------------------------------- stages


@op(description="Selects the due elements to re-attempt: oldest first, past the back-off, at most `limit`; "
                "by default only what a retry can change under this configuration. Reads the store only.")
def select_retry_candidates(
    context: OpExecutionContext,
    config: RetrySelectConfig,
    recording: RecordingEngineResource,
) -> Output[RetrySelection]:
    with sigterm_terminates(context):
        selection = recording.get().retry.select_due(
            statuses=config.fetch_statuses(),
            token_addresses=config.token_addresses,
            limit=config.limit,
            min_interval_minutes=config.min_interval_minutes,
        )
        counters = {"candidate_urls": len(selection.candidates), "tokens": selection.tokens,
                    "remaining": selection.remaining}
        selected = by_status(selection.candidates)
        context.log.info(kv_fields("retry_selected", {
            "selection": selection.takes, "token_addresses": len(config.token_addresses or []),
            "limit": config.limit, "min_interval_minutes": config.min_interval_minutes, **counters,
            "selected": ",".join(f"{s}:{n}" for s, n in selected.items()) or "none",
        }))
        metadata: dict[str, Any] = {k: MetadataValue.int(v) for k, v in counters.items()}
        metadata["selection"] = MetadataValue.text(selection.takes)
        metadata["selected_by_status"] = MetadataValue.json(selected)
        metadata["candidates_preview"] = preview(("token", "url", "status", "attempts", "checked_at"), [
            {"token": c.address, "url": c.url, "status": c.status.value, "attempts": c.attempts,
             "checked_at": c.checked_at.isoformat() if c.checked_at else "never"}
            for c in selection.candidates[:PREVIEW_ROWS]])
        return Output(selection, metadata=metadata)


@op(description="Re-attempts the selected elements under the retry job lock (an element another run "
                "recorded meanwhile is left as it is), one run-log line per URL, then observes the recorded data; "
                "fails when a URL hit an engine failure or work was left behind.")
def record_retry_candidates(
    context: OpExecutionContext,
    config: RetryRecordConfig,
    selection: RetrySelection,
    recording: RecordingEngineResource,
) -> RecordedRun:
    context.log.info(kv_fields("retry_start", {
        "candidate_urls": len(selection.candidates), "deadline_seconds": config.deadline_seconds,
        "max_workers": config.max_workers,
    }))

    def record(engine: Engine, run: RunState) -> Recorded:
        outcome = engine.retry.record_selection(selection, deadline_seconds=config.deadline_seconds,
                                                max_workers=config.max_workers, run=run, keep_url_outcomes=False)
        return Recorded(JobKind.RETRY, outcome.metadata(),
                        skipped=skipped_note("retry", outcome.skipped, outcome.job_lock_waited_s))

    return record_stage(context, recording, config.provider_concurrency, record,
                        min_interval=timedelta(minutes=selection.min_interval_minutes))


retry_urls = staged_graph(
    "retry_urls", RetryConfig, lambda: record_retry_candidates(select_retry_candidates()),
    "Re-attempts URLs that have not converged: select the due elements, record them, report. `ok` is never reopened.")
retry_job = one_node_job("retry_job", retry_urls, JobKind.RETRY, "Re-attempts URLs that have not converged yet.")


# --------------------------------------------------------------------------- schedule and sensor


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {s}" for s, n in counts.items())


@dataclass
class RetryCursor:
    """The last launch of retry_candidates_sensor: which selection (its digest) and when."""

    digest: str | None = None
    launched_at: datetime | None = None
    candidates: int = 0

    @classmethod
    def parse(cls, raw: str | None) -> "RetryCursor":
        if not raw:
            return cls()
        try:
            data = json.loads(raw)
            at = datetime.fromisoformat(data["launched_at"]) if data.get("launched_at") else None
            return cls(digest=data.get("digest"), launched_at=at, candidates=int(data.get("candidates", 0)))
        except (ValueError, KeyError, TypeError, AttributeError):
            return cls()  # an unreadable cursor only means "no launch remembered"

    def dump(self) -> str:
        return json.dumps({"digest": self.digest, "launched_at": self.launched_at.isoformat() if self.launched_at else None,
                           "candidates": self.candidates})


def active_retry_run(context: SensorEvaluationContext, job_name: str) -> str | None:
    """The status of a queued or running retry run, if any: never two at once."""
    records = context.instance.get_run_records(RunsFilter(job_name=job_name, statuses=ACTIVE_RUN_STATUSES), limit=1)
    return records[0].dagster_run.status.value.lower() if records else None


def evaluate_retry_candidates(
    store: SelectionStore, cursor: RetryCursor, now: datetime, *, enable_paid: bool, usable_platforms: Collection[Platform]
) -> RunRequest | SkipReason:
    """Launch retry_job when the retry job's own selection (the same query) finds due elements. The
    run key is the selection's digest: it changes whenever the set changes (every recording moves an
    element's `checked_at` and `due_at`), and an unchanged set is launched again once per back-off period, so a
    selection a run could not finish (locks held elsewhere) is not forgotten."""
    query = retry_query(now=now, min_interval=DEFAULT_MIN_INTERVAL, limit=DEFAULT_LIMIT,
                        enable_paid=enable_paid, usable_platforms=usable_platforms)
    found = select(store, query)
    takes = describe_default(enable_paid=enable_paid, usable_platforms=usable_platforms)
    if not found:
        return SkipReason(
            f"nothing is due: the default selection takes {takes}, and none of it is due by "
            f"{seconds(query.due_by)} (each element's back-off dates it when it is recorded)"
        )
    digest = found.digest
    if (
        cursor.digest == digest
        and cursor.launched_at is not None
        and now - cursor.launched_at < DEFAULT_MIN_INTERVAL
    ):
        return SkipReason(
            f"the same {len(found)} due element(s) ({_counts(by_status(found.candidates))}) were launched at "
            f"{seconds(cursor.launched_at)} "
            f"(selection {digest}); launching them again after {DEFAULT_MIN_INTERVAL_MINUTES} min if still due"
        )
    bucket = int(now.timestamp() // DEFAULT_MIN_INTERVAL.total_seconds())
    return RunRequest(
        run_key=f"retry:{digest}:{bucket}",
        run_config=RunConfig(ops={"retry_urls": RetryConfig()}),
        tags={"social_recording/candidate_urls": str(len(found)), **JobKind.RETRY.tag},
    )


def make_retry_candidates_sensor(job: JobDefinition, status: DefaultSensorStatus) -> SensorDefinition:
    @sensor(
        name="retry_candidates_sensor",
        job=job,
        minimum_interval_seconds=RETRY_SENSOR_INTERVAL_S,
        default_status=status,
        description="Launches retry_job when its default selection finds due elements (error and pending, "
        "skipped_paid when paid calls are on, unsupported recorded for want of a generator that now exists) "
        "and no retry run is queued or running. Cursor: the last selection launched (its fingerprint) and when.",
    )
    def retry_candidates_sensor(
        context: SensorEvaluationContext,
        store: StoreResource,
        platforms: PlatformsResource,
        policy: RecordingPolicyResource,
    ) -> SensorResult:
        active = active_retry_run(context, job.name)
        if active:
            reason = f"a {job.name} run is already {active} (one at a time); the next evaluation looks again"
            return sensor_answer(context.cursor, skip_reason=reason)
        cursor = RetryCursor.parse(context.cursor)
        now = datetime.now(UTC)
        result = evaluate_retry_candidates(store.get(), cursor, now, enable_paid=policy.enable_paid,
                                           usable_platforms=platforms.registry().usable_platforms())
        if isinstance(result, SkipReason):  # said on the tick (the sensor's page), not in the terminal
            return SensorResult(skip_reason=result, cursor=cursor.dump())
        count = int(result.tags.get("social_recording/candidate_urls", "0"))
        new_cursor = RetryCursor(digest=result.run_key.split(":")[1] if result.run_key else None, launched_at=now,
                                 candidates=count)
        context.log.info(f"launching retry_job for {count} due element(s); cursor -> {new_cursor.dump()}")
        return sensor_answer(new_cursor.dump(), [result])

    return retry_candidates_sensor


def definitions(settings: Settings) -> Definitions:
    """The retry job with its hourly schedule and its candidates sensor; merged by the builder."""
    schedule_status, sensor_status = default_status(settings.env)
    return Definitions(
        jobs=[retry_job],
        schedules=[utc_schedule("retry_schedule", retry_job, RETRY_CRON, schedule_status,
                                "Hourly retry with the default selection: the oldest due elements whose outcome a "
                                "retry can change under this configuration.",
                                run_config=RunConfig(ops={"retry_urls": RetryConfig()}))],
        sensors=[make_retry_candidates_sensor(retry_job, sensor_status)],
    )
