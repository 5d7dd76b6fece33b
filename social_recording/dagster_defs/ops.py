"""The stages of the three jobs. Each is a thin shell over one step of a use case in `recording`.

- retry: select the due elements -> record them -> report;
- reconcile: read the partition's window (tracker range query, AF floor, tokens already stored) ->
  record its tokens -> report;
- live: record the launched batch -> report.

Every stage has a typed output (the selection or the window's targets; the recorded run's
counters and bounded table; the report's counters), so the UI shows what each step decided. The
recording stages write one run-log line per URL as it finishes (batched, see run_log.py), observe
the recorded data, and are the stages that fail when their work was not done (reporting.py); they
hand only counters to the report, never every URL outcome. Resources come in as typed parameters.

No `from __future__ import annotations`: Dagster reads these annotations at decoration time.
"""

import contextlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

from dagster import (
    Failure,
    MetadataValue,
    OpExecutionContext,
    Output,
    TableColumn,
    TableRecord,
    TableSchema,
    TimeWindow,
    op,
)

from social_recording.dagster_defs.config import (
    LiveBatchConfig,
    RecordWindowConfig,
    RetryRecordConfig,
    RetrySelectConfig,
    WindowConfig,
)
from social_recording.dagster_defs.engine import RecordingEngineResource
from social_recording.dagster_defs.jobs.health import HealthInputs
from social_recording.dagster_defs.partitions import PartitionKeyError, check_partition_key
from social_recording.dagster_defs.reporting import (
    RecordedRun,
    finish_recording,
    recorded_run,
    report,
    skipped_note,
)
from social_recording.dagster_defs.resources import (
    RecordingPolicyResource,
)
from social_recording.dagster_defs.run_log import RunLog, UrlLog
from social_recording.dagster_defs.termination import sigterm_terminates
from social_recording.locks.base import LockBackendUnavailable
from social_recording.recording.candidates import by_status
from social_recording.recording.log_line import kv_fields
from social_recording.recording.outcomes import TokenOutcome, TokenStatus
from social_recording.recording.reconcile import ReconcileWindow
from social_recording.recording.retry import RetrySelection
from social_recording.recording.run_state import RunState

PREVIEW_ROWS = 100
"""Rows of the selection / window previews in a stage's metadata."""


def partition_window(context: OpExecutionContext) -> TimeWindow:
    """The partition's UTC day, refusing a key outside reconcile_job's partitions (a day before the
    first, a day that has not begun, no day at all) before any request: a run launched outside the
    UI's partition picker can carry any `dagster/partition` tag."""
    partitions_def = context.job_def.partitions_def
    assert partitions_def is not None, "partition_window is only used by reconcile_job"
    try:
        key = check_partition_key(partitions_def, context.partition_key)
    except PartitionKeyError as exc:
        raise Failure(description=str(exc)) from None
    window = context.partition_time_window
    if window.end > datetime.now(UTC):
        context.log.warning(f"partition {key} is not over yet: tokens traded later today are recorded by a "
                            "later run of this partition")
    return window


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


def _preview(columns: tuple[str, ...], rows: list[dict[str, Any]]) -> Any:
    schema = TableSchema(columns=[TableColumn(c, "string") for c in columns])
    return MetadataValue.table(records=[TableRecord({c: str(r.get(c, "")) for c in columns}) for r in rows],
                               schema=schema)


# --------------------------------------------------------------------------- reconcile


@op(description="Reads the partition's UTC day from the tracker: the tokens traded that day with enough AF "
                "investors, minus those already stored. Writes nothing; a tracker failure fails the run here.")
def read_reconcile_window(
    context: OpExecutionContext,
    config: WindowConfig,
    recording: RecordingEngineResource,
    policy: RecordingPolicyResource,
) -> Output[ReconcileWindow]:
    with sigterm_terminates(context):
        window = partition_window(context)
        min_af = config.min_af_count or policy.af_investor_threshold
        context.log.info(kv_fields("reconcile_start", {
            "partition": context.partition_key, "start": window.start.isoformat(), "end": window.end.isoformat(),
            "min_af_count": min_af,
        }))
        read = recording.get().reconcile.read_window(window.start, window.end, partition_key=context.partition_key,
                                                     min_af_count=min_af)
        counters = {"scanned": read.scanned, "filtered": read.filtered, "already_seen": read.already_seen,
                    "targets": len(read.targets), "malformed": len(read.malformed_items), "min_af_count": min_af}
        context.log.info(kv_fields("window_read", {"partition": context.partition_key, **counters}))
        metadata: dict[str, Any] = {k: MetadataValue.int(v) for k, v in counters.items()}
        metadata["targets_preview"] = _preview(("address", "symbol"), [
            {"address": t.address, "symbol": t.symbol or ""} for t in read.targets[:PREVIEW_ROWS]])
        if read.malformed_items:
            metadata["malformed_items"] = MetadataValue.md("\n".join(f"- `{m}`" for m in read.malformed_items[:200]))
        return Output(read, metadata=metadata)


@op(description="Records the window's tokens under the partition's job lock (tokens stored since the window "
                "was read are skipped), one run-log line per URL, then observes the recorded data; fails when a "
                "token could not be read, a URL hit an engine failure or work was left behind (re-executing "
                "from this failure records what is left).")
def record_window_tokens(
    context: OpExecutionContext,
    config: RecordWindowConfig,
    window: ReconcileWindow,
    recording: RecordingEngineResource,
) -> RecordedRun:
    with sigterm_terminates(context), lock_server_failures():
        engine = recording.get()
        context.log.info(kv_fields("record_window", {
            "partition": window.partition_key, "targets": len(window.targets), "limit": config.limit,
            "deadline_seconds": config.deadline_seconds, "max_workers": config.max_workers,
        }))
        with UrlLog(context.log) as url_log:
            log = RunLog(url_log)
            run = RunState(listener=log)
            run.limit_calls(config.provider_concurrency)
            outcome = engine.reconcile.record_window(
                window, limit=config.limit, deadline_seconds=config.deadline_seconds,
                max_workers=config.max_workers, run=run, keep_url_outcomes=False,
            )
        extra: dict[str, Any] = {}
        if outcome.malformed_items:
            extra["malformed_items"] = MetadataValue.md("\n".join(f"- `{m}`" for m in outcome.malformed_items[:200]))
        recorded = recorded_run("reconcile", outcome.metadata(), run, log, outcome.tokens,
                                skipped=skipped_note(f"reconcile of {window.partition_key}", outcome.skipped,
                                                     outcome.job_lock_waited_s), extra=extra)
        finish_recording(context, recorded, engine.store, HealthInputs.of(recording.policy, recording.platforms))
        return recorded


@op(description="Reports the reconcile run: its counters and the per-URL table as the job's output.")
def report_reconcile(context: OpExecutionContext, recorded: RecordedRun) -> Output[dict[str, Any]]:
    return report(context, recorded)


# --------------------------------------------------------------------------- retry


@op(description="Selects the due elements to re-attempt: oldest first, past the back-off, at most `limit`; "
                "by default only what a retry can change under this configuration. Reads the store only.")
def select_retry_candidates(
    context: OpExecutionContext,
    config: RetrySelectConfig,
    recording: RecordingEngineResource,
) -> Output[RetrySelection]:
    with sigterm_terminates(context):
        statuses = config.fetch_statuses()
        selection = recording.get().retry.select_due(
            statuses=statuses,
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
        metadata["candidates_preview"] = _preview(("token", "url", "status", "attempts", "checked_at"), [
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
    with sigterm_terminates(context), lock_server_failures():
        engine = recording.get()
        context.log.info(kv_fields("retry_start", {
            "candidate_urls": len(selection.candidates), "deadline_seconds": config.deadline_seconds,
            "max_workers": config.max_workers,
        }))
        with UrlLog(context.log) as url_log:
            log = RunLog(url_log)
            run = RunState(timedelta(minutes=selection.min_interval_minutes), listener=log)
            run.limit_calls(config.provider_concurrency)
            outcome = engine.retry.record_selection(selection, deadline_seconds=config.deadline_seconds,
                                                    max_workers=config.max_workers, run=run, keep_url_outcomes=False)
        recorded = recorded_run("retry", outcome.metadata(), run, log,
                                skipped=skipped_note("retry", outcome.skipped, outcome.job_lock_waited_s))
        finish_recording(context, recorded, engine.store, HealthInputs.of(recording.policy, recording.platforms))
        return recorded


@op(description="Reports the retry run: its counters (converged, remaining, ...) and the per-URL table as the "
                "job's output.")
def report_retry(context: OpExecutionContext, recorded: RecordedRun) -> Output[dict[str, Any]]:
    return report(context, recorded)


# --------------------------------------------------------------------------- live


def live_counters(results: list[TokenOutcome], by_status: dict[str, int]) -> dict[str, Any]:
    counters: dict[str, Any] = {
        "tokens": len(results),
        "created": sum(1 for r in results if r.created),
        "dropped_values": sum(len(r.dropped) for r in results),
        "unresolved_values": sum(r.unresolved for r in results),
        **{f"tokens_{s.value}": sum(1 for r in results if r.status is s) for s in TokenStatus},
    }
    counters.update({f"urls_{k}": v for k, v in sorted(by_status.items())})
    return counters


@op(description="Records a batch of freshly traded tokens launched by token_flow_sensor (a stored token only "
                "reopens pending and error URLs past their back-off), one run-log line per URL, then observes the "
                "recorded data; fails when a token could not be read (the sensor's cursor has passed it), a URL "
                "hit an engine failure or work was left behind.")
def record_live_tokens(
    context: OpExecutionContext,
    config: LiveBatchConfig,
    recording: RecordingEngineResource,
) -> RecordedRun:
    with sigterm_terminates(context), lock_server_failures():
        engine = recording.get()
        tokens = list(dict((t.address, t) for t in config.tokens).values())  # one unit per address
        context.log.info(kv_fields("live_start", {"tokens": len(tokens), "max_workers": config.max_workers}))
        with UrlLog(context.log) as url_log:
            log = RunLog(url_log)
            run = RunState(listener=log)
            run.limit_calls(config.provider_concurrency)
            results = engine.processor.record_batch([(t.address, t.symbol or None) for t in tokens], run,
                                                    max_workers=min(config.max_workers, max(1, len(tokens))))
        recorded = recorded_run("live", live_counters(results, run.status_counts()), run, log, results)
        finish_recording(context, recorded, engine.store, HealthInputs.of(recording.policy, recording.platforms))
        return recorded


@op(description="Reports the live run: its counters and the per-URL table as the job's output.")
def report_live(context: OpExecutionContext, recorded: RecordedRun) -> Output[dict[str, Any]]:
    return report(context, recorded)
