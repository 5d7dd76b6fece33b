"""What every job module shares: the run tags, the schedules' and sensors' default status, the
call-bound config of a recording stage, the recording stages' common opening and closing, and the
one report stage.

A job (jobs/<job>.py) is a graph of stages: one that reads or selects (writes nothing), one that
records (`record_stage`: the per-URL run log as the run's listener, the config's call bounds, the
engine; then the run's report to the assets, and the stage's own failure when its work was not
done), and `report`, whose output is the run's counters (docs/architecture.md, "Jobs"). The graph,
its one-node job and its schedule are built by job_shape.py.

No `from __future__ import annotations`: Dagster reads these annotations at decoration time.
"""

import contextlib
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from dagster import (
    Config,
    DefaultScheduleStatus,
    DefaultSensorStatus,
    Failure,
    MetadataValue,
    OpExecutionContext,
    Output,
    TableColumn,
    TableRecord,
    TableSchema,
    op,
)
from pydantic import Field, field_validator

from social_recording.dagster_defs.engine import RecordingEngineResource
from social_recording.dagster_defs.health_report import HealthInputs
from social_recording.dagster_defs.job_kind import JobKind
from social_recording.dagster_defs.reporting import RecordedRun, finish_recording, recorded_run, report_output
from social_recording.dagster_defs.run_log import RunLog, UrlLog, hold_event_connection
from social_recording.dagster_defs.termination import sigterm_terminates
from social_recording.domain.policy import DEFAULT_MIN_INTERVAL
from social_recording.locks.base import LockBackendUnavailable
from social_recording.recording.concurrency import (
    DEFAULT_PROVIDER_CONCURRENCY,
    MAX_PROVIDER_CONCURRENCY,
    check_provider_concurrency,
)
from social_recording.recording.engine import Engine
from social_recording.recording.health import LONGEST_RUN
from social_recording.recording.job_pool import DEFAULT_MAX_WORKERS, MAX_WORKERS_LIMIT
from social_recording.recording.outcomes import TokenOutcome
from social_recording.recording.run_state import RunState

# Dagster's own @sensor decorator passes its beta `owners` parameter to SensorDefinition and warns
# about itself on every load; nothing of ours uses `owners`.
warnings.filterwarnings("ignore", message="Parameter `owners` of initializer", category=Warning)

MAX_RUNTIME_TAG = "dagster/max_runtime"
RUN_TAGS = {
    "dagster/retry_on_asset_or_op_failure": "false",
    MAX_RUNTIME_TAG: str(int(LONGEST_RUN.total_seconds())),
}
"""Tags of every job's runs.

- Dagster's run retries (dagster.yaml `run_retries`) re-execute a run that failed for an
  infrastructure reason, never one whose stage failed: that failure is a recorded outcome (the
  tracker failed, a URL hit an engine failure) which re-running the same run would not change.
- A run still STARTED after the longest run the health checks allow for (`LONGEST_RUN`) is failed by
  run monitoring: with the default run launcher nothing else notices a run whose process died with
  its code server (a container recreated by an upgrade), and it would stay STARTED forever; failed,
  it is retried or caught up like any failed run (docs/operations.md, "Migrations and draining")."""

PREVIEW_ROWS = 100
"""Rows of the selection / window previews in a stage's metadata."""


def seconds(ts: datetime) -> str:
    """A moment as sensors and schedules name it in their skip reasons and logs."""
    return ts.isoformat(timespec="seconds")


def default_status(env: str) -> tuple[DefaultScheduleStatus, DefaultSensorStatus]:
    """Schedules and sensors start RUNNING only in prod: nothing spends money in dev by accident."""
    if env == "prod":
        return DefaultScheduleStatus.RUNNING, DefaultSensorStatus.RUNNING
    return DefaultScheduleStatus.STOPPED, DefaultSensorStatus.STOPPED


# --------------------------------------------------------------------------- config


def workers_field() -> Any:
    return Field(default=DEFAULT_MAX_WORKERS, ge=1, le=MAX_WORKERS_LIMIT,
                 description="Tokens recorded in parallel (each token's URLs run side by side).")


_PROVIDER_CONCURRENCY_HELP = (
    "Concurrent provider calls per provider account in this run (1.."
    f"{MAX_PROVIDER_CONCURRENCY}); providers not named keep their default: "
    + ", ".join(f"{p} {n}" for p, n in sorted(DEFAULT_PROVIDER_CONCURRENCY.items()))
    + ". The providers' request rates are enforced separately, across every run, by the shared limiter."
)


class CallBounds(Config):
    """The per-provider call bounds every recording stage takes (validated at launch). Each job's
    user-facing config is the union of its stages' configs, every field declared once, on the stage
    that uses it; the job's config mapping hands each stage its part (`stage_config`)."""

    provider_concurrency: dict[str, int] = Field(default_factory=dict, description=_PROVIDER_CONCURRENCY_HELP)

    @field_validator("provider_concurrency")
    @classmethod
    def _known_providers(cls, v: dict[str, int]) -> dict[str, int]:
        return check_provider_concurrency(v)


def stage_config(**values: Any) -> dict[str, Any]:
    """A stage's config without the unset (None) values: the stage's own defaults apply."""
    return {"config": {k: v for k, v in values.items() if v is not None}}


# --------------------------------------------------------------------------- stages


def preview(columns: tuple[str, ...], rows: list[dict[str, Any]]) -> Any:
    """A few rows of what a reading stage decided, as a table of its metadata."""
    schema = TableSchema(columns=[TableColumn(c, "string") for c in columns])
    return MetadataValue.table(records=[TableRecord({c: str(r.get(c, "")) for c in columns}) for r in rows],
                               schema=schema)


@contextlib.contextmanager
def lock_server_failures() -> Iterator[None]:
    """A lock server that stayed away past its outage bound fails the stage with its own words (the
    backend named, its password masked), not a stack of wrappers (docs/architecture.md, "Backend
    outages")."""
    try:
        yield
    except LockBackendUnavailable as exc:
        raise Failure(description=f"{exc}. The run stopped there; what it recorded before stays. Once the lock "
                                  "server answers, re-execute the run from this failure (reconcile_catch_up_sensor "
                                  "launches a reconcile partition again by itself).") from None


@dataclass(frozen=True)
class Recorded:
    """What a recording stage's use case returns to `record_stage`."""

    job: JobKind
    counters: Mapping[str, Any]
    tokens: Sequence[TokenOutcome] = ()
    skipped: str = ""
    tokens_total: int | None = None
    """Tokens handed to the recorder, when `tokens` holds only those worth a line (None: all of them)."""
    created: int | None = None
    """Tokens created in the store, likewise (None: counted from `tokens`)."""
    extra: Mapping[str, Any] = field(default_factory=dict)
    """Further metadata of the stage."""
    run_tags: Mapping[str, str] = field(default_factory=dict)
    """Tags set on the run (what a sensor reads of it), before the stage may fail."""


def record_stage(
    context: OpExecutionContext,
    recording: RecordingEngineResource,
    provider_concurrency: Mapping[str, int],
    record: Callable[[Engine, RunState], Recorded],
    *,
    min_interval: timedelta = DEFAULT_MIN_INTERVAL,
) -> RecordedRun:
    """The opening and closing every recording stage shares around `record(engine, run)`: a SIGTERM
    is a termination, a lock server gone past its bound fails the stage naming it, every URL
    outcome goes to the run log as an event of its own (the run's listener), the run's calls are
    bounded by `provider_concurrency`; then the run is reported to the assets and the stage fails if its work
    was not done (reporting.py)."""
    with sigterm_terminates(context), lock_server_failures():
        engine = recording.get()
        hold_event_connection(context.instance)
        with UrlLog(context.log) as url_log:
            log = RunLog(url_log)
            run = RunState(min_interval, listener=log)
            run.limit_calls(provider_concurrency)
            done = record(engine, run)
        recorded = recorded_run(done.job, done.counters, run, log, done.tokens, skipped=done.skipped,
                                extra=done.extra, tokens_total=done.tokens_total, created=done.created)
        finish_recording(context, recorded, engine.store, HealthInputs.of(recording.policy, recording.platforms),
                         run_tags=done.run_tags)
        return recorded


@op(description="Reports the run: its counters (what was recorded, converged, called, reused, left) and the "
                "per-URL table as the job's output. The recording stage before it has already observed the "
                "recorded data and failed the run if its work was not done.")
def report(context: OpExecutionContext, recorded: RecordedRun) -> Output[dict[str, Any]]:
    return report_output(context, recorded)
