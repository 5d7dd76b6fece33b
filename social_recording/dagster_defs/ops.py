"""The three ops. Each is a thin shell: build the engine, call one use case, report what happened.

Every op logs one structured line per URL and attaches its counters plus a table of per-URL
outcomes to its output, so a backfill's runs show in the UI what each partition recorded, reused,
skipped and why (DESIGN §7 "Run logs").
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from dagster import (
    MetadataValue,
    OpExecutionContext,
    Output,
    TableColumn,
    TableRecord,
    TableSchema,
    op,
)

from social_recording.dagster_defs.config import ReconcileConfig, RecordTokensConfig, RetryConfig
from social_recording.dagster_defs.engine import build_engine
from social_recording.dagster_defs.resources import (
    DedupeGateResource,
    GraphWriterResource,
    LockManagerResource,
    PlatformsResource,
    RecordingPolicyResource,
    StoreResource,
    TrackerResource,
)
from social_recording.recording.url_recorder import RunState, UrlOutcome

OUTCOME_COLUMNS = ("token", "url", "platform", "status", "attempted", "reused", "waited_ms", "took_ms", "detail")
MAX_TABLE_ROWS = 500

_SCHEMA = TableSchema(
    columns=[
        TableColumn("token", "string"),
        TableColumn("url", "string"),
        TableColumn("platform", "string"),
        TableColumn("status", "string"),
        TableColumn("attempted", "bool"),
        TableColumn("reused", "bool"),
        TableColumn("waited_ms", "float"),
        TableColumn("took_ms", "float"),
        TableColumn("detail", "string"),
    ]
)


def outcome_row(o: UrlOutcome) -> dict[str, Any]:
    return {
        "token": o.token,
        "url": o.url,
        "platform": str(o.platform) if o.platform is not None else "",
        "status": str(o.status),
        "attempted": bool(o.attempted),
        "reused": bool(o.reused),
        "waited_ms": round(float(o.waited_ms), 1),
        "took_ms": round(float(o.took_ms), 1),
        "detail": o.detail or "",
    }


def log_outcomes(context: OpExecutionContext, outcomes: Iterable[UrlOutcome]) -> None:
    """One structured line per URL (key=value, greppable)."""
    for o in outcomes:
        row = outcome_row(o)
        context.log.info("url_outcome " + " ".join(f"{k}={row[k]}" for k in OUTCOME_COLUMNS))


def outcome_metadata(counters: Mapping[str, Any], outcomes: Sequence[UrlOutcome]) -> dict[str, Any]:
    status_counts = Counter(str(o.status) for o in outcomes)
    meta: dict[str, Any] = {}
    for key, value in counters.items():
        if isinstance(value, bool) or value is None:
            meta[key] = MetadataValue.text(str(value))
        elif isinstance(value, int | float):
            meta[key] = value
        else:
            meta[key] = MetadataValue.text(str(value))
    meta["url_status_counts"] = MetadataValue.json(dict(sorted(status_counts.items())))
    meta["urls_reused"] = sum(1 for o in outcomes if o.reused)
    meta["urls_called"] = sum(1 for o in outcomes if o.attempted)
    rows = [TableRecord(outcome_row(o)) for o in outcomes[:MAX_TABLE_ROWS]]
    meta["url_outcomes"] = MetadataValue.table(records=rows, schema=_SCHEMA)
    if len(outcomes) > MAX_TABLE_ROWS:
        meta["url_outcomes_truncated"] = len(outcomes) - MAX_TABLE_ROWS
    return meta


RESOURCE_KEYS = dict(
    store="store",
    locks="locks",
    gate="dedupe_gate",
    writer="graph_writer",
    tracker="tracker",
    platforms="platforms",
    policy="policy",
)


@op(description="Record tokens of the partition's day that we never saw (token axis, DESIGN §7).")
def reconcile_window(
    context: OpExecutionContext,
    config: ReconcileConfig,
    store: StoreResource,
    locks: LockManagerResource,
    dedupe_gate: DedupeGateResource,
    graph_writer: GraphWriterResource,
    tracker: TrackerResource,
    platforms: PlatformsResource,
    policy: RecordingPolicyResource,
) -> Output[dict[str, Any]]:
    window = context.partition_time_window
    engine = build_engine(
        store=store, locks=locks, gate=dedupe_gate, writer=graph_writer,
        tracker=tracker, platforms=platforms, policy=policy,
    )
    min_af = config.min_af_count or policy.af_investor_threshold
    context.log.info(
        f"reconcile partition={context.partition_key} window=[{window.start.isoformat()}, "
        f"{window.end.isoformat()}) min_af_count={min_af} limit={config.limit} "
        f"deadline_seconds={config.deadline_seconds} max_workers={config.max_workers}"
    )
    outcome = engine.reconcile.reconcile(
        window.start,
        window.end,
        partition_key=context.partition_key,
        min_af_count=min_af,
        limit=config.limit,
        deadline_seconds=config.deadline_seconds,
        max_workers=config.max_workers,
    )
    counters = outcome.counters()
    log_outcomes(context, outcome.url_outcomes)
    context.log.info("reconcile done " + " ".join(f"{k}={v}" for k, v in counters.items()))
    return Output(counters, metadata=outcome_metadata(counters, outcome.url_outcomes))


@op(description="Re-attempt URLs that are not converged (URL axis, DESIGN §7). `ok` is never reopened.")
def retry_urls(
    context: OpExecutionContext,
    config: RetryConfig,
    store: StoreResource,
    locks: LockManagerResource,
    dedupe_gate: DedupeGateResource,
    graph_writer: GraphWriterResource,
    tracker: TrackerResource,
    platforms: PlatformsResource,
    policy: RecordingPolicyResource,
) -> Output[dict[str, Any]]:
    engine = build_engine(
        store=store, locks=locks, gate=dedupe_gate, writer=graph_writer,
        tracker=tracker, platforms=platforms, policy=policy,
    )
    statuses = config.fetch_statuses()
    context.log.info(
        f"retry statuses={[s.value for s in statuses]} token_addresses={config.token_addresses} "
        f"limit={config.limit} min_interval_minutes={config.min_interval_minutes}"
    )
    outcome = engine.retry.retry(
        statuses=statuses,
        token_addresses=config.token_addresses,
        limit=config.limit,
        min_interval_minutes=config.min_interval_minutes,
        deadline_seconds=config.deadline_seconds,
        max_workers=config.max_workers,
    )
    counters = outcome.counters()
    log_outcomes(context, outcome.url_outcomes)
    context.log.info("retry done " + " ".join(f"{k}={v}" for k, v in counters.items()))
    return Output(counters, metadata=outcome_metadata(counters, outcome.url_outcomes))


@op(description="Record a batch of freshly traded tokens launched by token_flow_sensor (live path).")
def record_tokens(
    context: OpExecutionContext,
    config: RecordTokensConfig,
    store: StoreResource,
    locks: LockManagerResource,
    dedupe_gate: DedupeGateResource,
    graph_writer: GraphWriterResource,
    tracker: TrackerResource,
    platforms: PlatformsResource,
    policy: RecordingPolicyResource,
) -> Output[dict[str, Any]]:
    engine = build_engine(
        store=store, locks=locks, gate=dedupe_gate, writer=graph_writer,
        tracker=tracker, platforms=platforms, policy=policy,
    )
    run = RunState()
    tokens = list(config.tokens)
    context.log.info(f"live batch of {len(tokens)} tokens")

    def one(ref: Any) -> Any:
        return engine.processor.record(ref.address, ref.symbol or None, run)

    with ThreadPoolExecutor(max_workers=min(config.max_workers, max(1, len(tokens)))) as pool:
        results = list(pool.map(one, tokens))
    outcomes = [o for r in results for o in r.url_outcomes]
    token_status = Counter(str(r.status) for r in results)
    counters: dict[str, Any] = {"tokens": len(tokens), **{f"tokens_{k}": v for k, v in sorted(token_status.items())}}
    log_outcomes(context, outcomes)
    context.log.info("live done " + " ".join(f"{k}={v}" for k, v in counters.items()))
    return Output(counters, metadata=outcome_metadata(counters, outcomes))
