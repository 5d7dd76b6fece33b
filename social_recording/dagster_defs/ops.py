"""The three ops. Each is a thin shell: build the engine, call one use case, report what happened.

Every op logs one structured line per URL to the run log *as the URL finishes* (the engine counts
each outcome in its RunState; `OpRunState` hooks that count) and attaches its counters plus a table
of per-URL outcomes to its output, so a backfill's runs show in the UI what each partition
recorded, reused, skipped and why (DESIGN §7 "Run logs").

No `from __future__ import annotations`: Dagster reads these annotations at decoration time.
"""

import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
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
    op,
)

from social_recording.dagster_defs.checks import report_health
from social_recording.dagster_defs.config import ReconcileConfig, RecordTokensConfig, RetryConfig, TokenRef
from social_recording.dagster_defs.engine import ENGINE_RESOURCE_KEYS, engine_for
from social_recording.domain.policy import DEFAULT_MIN_INTERVAL
from social_recording.recording.job_pool import JOB_LOCK_TTL_S
from social_recording.recording.outcomes import EngineOutcome, TokenOutcome, TokenStatus, UrlOutcome
from social_recording.recording.run_state import RunState

OUTCOME_COLUMNS = ("token", "url", "platform", "status", "attempted", "reused", "waited_ms", "took_ms", "detail")
MAX_TABLE_ROWS = 500
"""The UI table stays readable; the counters always cover every URL."""

_COLUMN_TYPES = {"attempted": "bool", "reused": "bool", "waited_ms": "float", "took_ms": "float"}
OUTCOME_SCHEMA = TableSchema(columns=[TableColumn(c, _COLUMN_TYPES.get(c, "string")) for c in OUTCOME_COLUMNS])
_WARN = (EngineOutcome.FAILED, EngineOutcome.INVALID_URL, EngineOutcome.LOST)


def kv_line(event: str, fields: Mapping[str, Any]) -> str:
    """`event key=value ...`; values with spaces or quotes are quoted (greppable, one line)."""
    parts = [event]
    for key, value in fields.items():
        text = "" if value is None else str(value)
        if not text or any(c.isspace() for c in text) or '"' in text:
            text = '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'
        parts.append(f"{key}={text}")
    return " ".join(parts)


class OpRunState(RunState):
    """The engine's per-run state, plus one run-log line per URL the moment its outcome is counted.

    The engine calls `note` exactly once per URL outcome (from its worker threads), so this gives
    the live per-URL log without the engine knowing Dagster. A logging failure never disturbs
    recording.
    """

    def __init__(self, context: OpExecutionContext, min_interval: timedelta = DEFAULT_MIN_INTERVAL) -> None:
        super().__init__(min_interval)
        self._context_log = context.log
        self._log_lock = threading.Lock()
        self.logged = 0

    def note(self, outcome: UrlOutcome) -> None:
        super().note(outcome)
        try:
            line = kv_line("url_outcome", outcome.as_row())
            with self._log_lock:
                if outcome.status in _WARN:
                    self._context_log.warning(line)
                else:
                    self._context_log.info(line)
                self.logged += 1
        except Exception:  # pragma: no cover - the run log must never break a recording
            pass


def table_row(outcome: UrlOutcome) -> dict[str, str | int | float | bool | None]:
    """The engine's log-safe row (URL credentials removed), typed for a Dagster table."""
    row: dict[str, str | int | float | bool | None] = {}
    for key, value in outcome.as_row().items():
        row[key] = value if isinstance(value, str | int | float | bool) or value is None else str(value)
    return row


def outcome_metadata(counters: Mapping[str, Any], outcomes: Sequence[UrlOutcome]) -> dict[str, Any]:
    """Counters as typed metadata, URL status counts, and the per-URL table (capped)."""
    meta: dict[str, Any] = {}
    for key, value in counters.items():
        if isinstance(value, bool) or value is None:
            meta[key] = MetadataValue.text(str(value))
        elif isinstance(value, int):
            meta[key] = MetadataValue.int(value)
        elif isinstance(value, float):
            meta[key] = MetadataValue.float(value)
        else:
            meta[key] = MetadataValue.text(str(value))
    meta["url_status_counts"] = MetadataValue.json(dict(sorted(Counter(str(o.status) for o in outcomes).items())))
    meta["urls_called"] = MetadataValue.int(sum(1 for o in outcomes if o.attempted))
    meta["urls_reused"] = MetadataValue.int(sum(1 for o in outcomes if o.reused))
    rows = [TableRecord(table_row(o)) for o in outcomes[:MAX_TABLE_ROWS]]
    meta["url_outcomes"] = MetadataValue.table(records=rows, schema=OUTCOME_SCHEMA)
    if len(outcomes) > MAX_TABLE_ROWS:
        meta["url_outcomes_truncated"] = MetadataValue.int(len(outcomes) - MAX_TABLE_ROWS)
    return meta


MAX_DROPPED_ROWS = 200


def _report(
    context: OpExecutionContext,
    name: str,
    counters: dict[str, Any],
    outcomes: Sequence[UrlOutcome],
    tokens: Sequence[TokenOutcome] = (),
    run: RunState | None = None,
) -> Output[dict[str, Any]]:
    """Log the counters and every token-level loss an operator must see, attach everything as output
    metadata, and FAIL the run when a token failed outright (tracker down, backend error): a green
    run would hide tokens that the live sensor's cursor has already passed (re-execute the run).
    The recorded-data assets are observed and the health checks evaluated first, failure or not
    (`report_health` never raises)."""
    report_health(context, context.resources.store.get(), run)
    for t in tokens:
        for d in t.dropped:
            # A placeholder ("TBA", "-") is noise; anything that looked like a link is a possible loss.
            level = context.log.info if d.placeholder else context.log.warning
            level(f"dropped tracker value {t.address}: {d}")
        if t.status in (TokenStatus.NO_PROFILE, TokenStatus.MALFORMED):
            context.log.warning(kv_line("token_not_recorded", {"token": t.address, "status": t.status.value,
                                                               "detail": t.detail}))
    dropped = [f"{t.address}: {d}" for t in tokens for d in t.dropped]
    context.log.info(kv_line(f"{name}_done", counters))
    metadata = outcome_metadata(counters, outcomes)
    if dropped:
        metadata["dropped_values_list"] = MetadataValue.md(
            "\n".join(f"- `{line}`" for line in dropped[:MAX_DROPPED_ROWS])
            + (f"\n- … {len(dropped) - MAX_DROPPED_ROWS} more" if len(dropped) > MAX_DROPPED_ROWS else "")
        )
    lost = [o for o in outcomes if o.lease_lost or o.status is EngineOutcome.LOST]
    if lost:
        context.log.warning(
            f"{len(lost)} URL(s) met a lost lock (nothing paid twice: writes are fenced); the next run "
            "completes what was not written: " + ", ".join(f"{o.token}:{o.platform}" for o in lost[:10])
        )
    failed = [t for t in tokens if t.status is TokenStatus.FAILED]
    if failed:
        shown = "; ".join(f"{t.address}: {t.detail}" for t in failed[:10])
        raise Failure(
            description=(
                f"{len(failed)} of {len(tokens)} token(s) failed and were not recorded ({shown}). "
                "The others were recorded; re-executing this run records the failed ones."
            ),
            metadata=metadata,
        )
    defects = [o for o in outcomes if o.engine_failure]
    if defects:
        shown = "; ".join(f"{o.token} {o.platform}: {o.detail}" for o in defects[:10])
        raise Failure(
            description=(
                f"{len(defects)} URL(s) ended in an engine failure, a defect of ours, not the provider's "
                f"({shown}). Everything else was recorded; see the error lines in the run log."
            ),
            metadata=metadata,
        )
    return Output(counters, metadata=metadata)


def partition_window(context: OpExecutionContext) -> Any:
    """The partition's UTC day, refusing a key that is no day of ours or a day that has not begun
    (a run launched outside the UI's partition picker can carry any tag)."""
    key = context.partition_key
    try:
        window = context.partition_time_window
    except Exception as exc:
        raise Failure(description=f"partition key {key!r} is not a YYYY-MM-DD day of reconcile_job: "
                                  f"{type(exc).__name__}") from None
    now = datetime.now(UTC)
    if window.start >= now:
        raise Failure(description=f"partition {key} has not begun yet (it starts {window.start.isoformat()})")
    if window.end > now:
        context.log.warning(f"partition {key} is not over yet: tokens traded later today are recorded by a "
                            "later run of this partition")
    return window


@op(
    description="Record tokens of the partition's UTC day that we never saw (token axis, DESIGN §7).",
    required_resource_keys=ENGINE_RESOURCE_KEYS,
)
def reconcile_window(
    context: OpExecutionContext,
    config: ReconcileConfig,
) -> Output[dict[str, Any]]:
    window = partition_window(context)
    engine, policy = engine_for(context)
    min_af = config.min_af_count or policy.af_investor_threshold
    context.log.info(kv_line("reconcile_start", {
        "partition": context.partition_key, "start": window.start.isoformat(), "end": window.end.isoformat(),
        "min_af_count": min_af, "limit": config.limit, "deadline_seconds": config.deadline_seconds,
        "max_workers": config.max_workers,
    }))
    run = OpRunState(context)
    outcome = engine.reconcile.reconcile(
        window.start,
        window.end,
        partition_key=context.partition_key,
        min_af_count=min_af,
        limit=config.limit,
        deadline_seconds=config.deadline_seconds,
        max_workers=config.max_workers,
        run=run,
    )
    if outcome.skipped:
        context.log.warning(
            f"reconcile of {context.partition_key} skipped: {outcome.skipped}. Another run holds this "
            f"partition's job lock; if that run crashed, its lock expires within {int(JOB_LOCK_TTL_S)} s "
            "(it is auto-extended only while its holder lives): re-run the partition after that."
        )
    return _report(context, "reconcile", dict(outcome.metadata()), outcome.url_outcomes, outcome.tokens, run)


@op(
    description="Re-attempt URLs that are not converged (URL axis, DESIGN §7). `ok` is never reopened.",
    required_resource_keys=ENGINE_RESOURCE_KEYS,
)
def retry_urls(
    context: OpExecutionContext,
    config: RetryConfig,
) -> Output[dict[str, Any]]:
    engine, _ = engine_for(context)
    statuses = config.fetch_statuses()
    context.log.info(kv_line("retry_start", {
        "statuses": "default" if statuses is None else ",".join(s.value for s in statuses),
        "token_addresses": len(config.token_addresses or []),
        "limit": config.limit, "min_interval_minutes": config.min_interval_minutes,
        "deadline_seconds": config.deadline_seconds, "max_workers": config.max_workers,
    }))
    run = OpRunState(context, timedelta(minutes=config.min_interval_minutes))
    outcome = engine.retry.retry(
        statuses=statuses,
        token_addresses=config.token_addresses,
        limit=config.limit,
        min_interval_minutes=config.min_interval_minutes,
        deadline_seconds=config.deadline_seconds,
        max_workers=config.max_workers,
        run=run,
    )
    if outcome.skipped:
        context.log.warning(
            f"retry skipped: {outcome.skipped}. Another retry run holds the job lock; if that run crashed, "
            f"its lock expires within {int(JOB_LOCK_TTL_S)} s and the next scheduled retry proceeds."
        )
    return _report(context, "retry", dict(outcome.metadata()), outcome.url_outcomes, run=run)


def live_counters(results: Sequence[TokenOutcome], outcomes: Sequence[UrlOutcome]) -> dict[str, Any]:
    by_status = Counter(r.status.value for r in results)
    counters: dict[str, Any] = {
        "tokens": len(results),
        "created": sum(1 for r in results if r.created),
        "dropped_values": sum(len(r.dropped) for r in results),
        "unresolved_values": sum(r.unresolved for r in results),
        **{f"tokens_{s.value}": by_status.get(s.value, 0) for s in TokenStatus},
    }
    counters.update({f"urls_{k}": v for k, v in sorted(Counter(str(o.status) for o in outcomes).items())})
    return counters


@op(
    description="Record a batch of freshly traded tokens launched by token_flow_sensor (live path).",
    required_resource_keys=ENGINE_RESOURCE_KEYS,
)
def record_tokens(
    context: OpExecutionContext,
    config: RecordTokensConfig,
) -> Output[dict[str, Any]]:
    engine, _ = engine_for(context)
    tokens = list(dict((t.address, t) for t in config.tokens).values())  # one unit per address
    context.log.info(kv_line("live_start", {"tokens": len(tokens), "max_workers": config.max_workers}))
    run = OpRunState(context)

    def one(ref: TokenRef) -> TokenOutcome:
        return engine.processor.record(ref.address, ref.symbol or None, run)

    with ThreadPoolExecutor(max_workers=min(config.max_workers, max(1, len(tokens))),
                            thread_name_prefix="live") as pool:
        results = list(pool.map(one, tokens))
    for r in results:
        if r.status in (TokenStatus.FAILED, TokenStatus.LOST):
            context.log.warning(kv_line("token_outcome", {"token": r.address, "status": r.status.value,
                                                          "detail": r.detail}))
    outcomes = [o for r in results for o in r.urls]
    return _report(context, "live", live_counters(results, outcomes), outcomes, results, run)
