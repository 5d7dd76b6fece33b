"""What a recording stage leaves when its URLs are done, and the report stage that shows it.

At the end of every recording stage `finish_recording` logs what an operator must see (every tracker
value that was dropped, once; tokens not recorded; lost locks), hands the run's counters to
`report_to_assets`, and only then fails the stage itself when a token could not be read at all, a
URL ended in an engine failure, or work was left behind because a lock was held elsewhere or a
backend did not answer (the job lock held for the whole wait, tokens locked out after the run's
second look, URLs `locked` or `deferred`): a green run would hide work that the live sensor's cursor
has already passed, and mark a partition done that is not (docs/architecture.md, "Runs tell the
truth"). The stage that did the work is the one that fails, so re-executing the run from failure
runs it again on what its first stage fixed. `report` is the last stage of every job: the run's
counters and the bounded per-URL table as its output.
"""

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dagster import Failure, MetadataValue, OpExecutionContext, Output, TableColumn, TableRecord, TableSchema

from social_recording.dagster_defs.health_report import HealthInputs, report_health
from social_recording.dagster_defs.run_log import LEFT_BEHIND, OutcomeRows, RunLog
from social_recording.dagster_defs.spend import report_spend
from social_recording.domain.models import utcnow
from social_recording.recording.health import RunFigures
from social_recording.recording.job_pool import JOB_LOCK_TTL_S
from social_recording.recording.log_line import kv_fields
from social_recording.recording.outcomes import TokenOutcome, TokenStatus, Written
from social_recording.recording.processor import TOKEN_LOCK_WAIT_S
from social_recording.recording.run_state import RunState, RunSummary
from social_recording.store.base import Store

OUTCOME_COLUMNS = ("status", "platform", "url", "token", "call", "why", "waited_ms", "took_ms")
"""The per-URL table's columns, in the order of the per-URL run-log line (run_log.table_row)."""
_COLUMN_TYPES = {"waited_ms": "float", "took_ms": "float"}
MARKDOWN_COLUMNS = ("status", "platform", "url", "token", "call", "why")
"""The markdown copy of the table: the URL a link, no timings (readable in the metadata's viewer)."""
OUTCOME_SCHEMA = TableSchema(columns=[TableColumn(c, _COLUMN_TYPES.get(c, "string")) for c in OUTCOME_COLUMNS])
MAX_DROPPED_ROWS = 200
"""Dropped tracker values listed in the metadata (each one is in the run log)."""
SHOWN_IN_FAILURE = 10

_NOT_RECORDED = (TokenStatus.NO_PROFILE, TokenStatus.MALFORMED)
_WORTH_REPORTING = (*_NOT_RECORDED, TokenStatus.FAILED, TokenStatus.LOST)


@dataclass(frozen=True)
class RecordedRun:
    """What a recording stage hands to its report stage: counters, never every URL outcome."""

    job: str
    """retry | reconcile | live."""
    counters: dict[str, Any]
    """The use case's counters (flat: names to numbers or short text)."""
    summary: RunSummary
    """The run's URL counters: by status, converged, calls made, reused, paid requests."""
    table: OutcomeRows
    tokens_total: int = 0
    """Tokens handed to the recorder (0 for retry, whose unit is the URL)."""
    tokens: tuple[TokenOutcome, ...] = ()
    """Only the tokens worth a line: not recorded, failed, lost, or with dropped values."""
    lost_examples: tuple[str, ...] = ()
    defect_examples: tuple[str, ...] = ()
    skipped: str = ""
    """Why nothing was recorded (another run holds the job lock), with what to do about it."""
    written: dict[Written, int] = field(default_factory=dict)
    """The store's collections the run wrote to: URL recordings (and tokens created) per collection."""
    left_behind: tuple[str, ...] = ()
    """What the run did not do because a lock was held elsewhere or a backend did not answer, one
    reason each (empty when nothing was left): the report fails the run with them."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Further metadata of the stage (for example, malformed tracker items)."""


def recorded_run(
    job: str,
    counters: Mapping[str, Any],
    run: RunState,
    log: RunLog,
    tokens: Sequence[TokenOutcome] = (),
    *,
    skipped: str = "",
    extra: Mapping[str, Any] | None = None,
    tokens_total: int | None = None,
    created: int | None = None,
) -> RecordedRun:
    """Keep what the report needs of a finished recording stage; URL outcomes are already counted.
    `tokens_total` and `created` count the tokens when `tokens` holds only those worth a line (a
    reconcile window's, docs/architecture.md, "Run memory")."""
    worth = tuple(t for t in tokens if t.dropped or t.status in _WORTH_REPORTING)
    summary = run.summary()
    written = Counter(summary.written)
    written[Written.TOKEN_URLS] += created if created is not None else sum(1 for t in tokens if t.created)
    return RecordedRun(
        job=job,
        counters=dict(counters),
        summary=summary,
        table=log.rows(),
        tokens_total=tokens_total if tokens_total is not None else len(tokens),
        tokens=worth,
        lost_examples=tuple(log.lost_examples),
        defect_examples=tuple(log.defect_examples),
        skipped=skipped,
        written=dict(written),
        left_behind=left_behind(summary, tokens, skipped, tuple(log.left_examples)),
        extra=dict(extra or {}),
    )


def left_behind(summary: RunSummary, tokens: Sequence[TokenOutcome], skipped: str,
                examples: Sequence[str]) -> tuple[str, ...]:
    """One reason per kind of work the run left because a lock was held elsewhere or a backend did
    not answer."""
    reasons = [skipped] if skipped else []
    locked_out = [t.address for t in tokens if t.status is TokenStatus.LOCKED_OUT]
    if locked_out:
        reasons.append(f"{len(locked_out)} token(s) not recorded: another worker held their lock, still after the "
                       f"run's second look waited {TOKEN_LOCK_WAIT_S:g} s for it ({', '.join(locked_out[:SHOWN_IN_FAILURE])})")
    counts = {str(s): n for s in LEFT_BEHIND if (n := summary.by_status.get(str(s), 0))}
    if counts:
        reasons.append(f"{sum(counts.values())} URL(s) left as they were "
                       f"({', '.join(f'{n} {s}' for s, n in counts.items())}): {'; '.join(examples)}")
    return tuple(reasons)


def skipped_note(what: str, outcome_skipped: str | None, waited_s: float) -> str:
    """The reason given by a run that found its job lock held by another run for its whole wait."""
    if not outcome_skipped:
        return ""
    return (f"{what} skipped ({outcome_skipped}): another run held this job's lock for the whole {waited_s:.0f} s "
            f"wait, so it is alive (a crashed run's lock expires within {JOB_LOCK_TTL_S:g} s of its last renewal) "
            "and records this work; this run recorded nothing")


def report_to_assets(context: OpExecutionContext, store: Store, health: HealthInputs, recorded: RecordedRun) -> None:
    """Where a run's counters reach the store's assets: the assets it wrote to are materialized, all
    of them observed and the health checks evaluated into this run (`report_health`, which never
    raises). Called once by every recording stage, after its URLs are recorded and before it fails
    for tokens or URLs it could not record."""
    run_summary = recorded.summary
    figures = RunFigures(
        urls=run_summary.urls,
        converged=run_summary.converged,
        calls_made=run_summary.attempted,
        calls_reused=run_summary.reused,
        paid_calls=run_summary.paid_requests,
    )
    report_health(context, store, health, figures, job=recorded.job, written=recorded.written)
    if run_summary.paid_requests or run_summary.budget_held:
        report_spend(context, store, health.budgets, utcnow(), held=run_summary.budget_held)


def _typed(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return MetadataValue.text(str(value))
    if isinstance(value, int):
        return MetadataValue.int(value)
    if isinstance(value, float):
        return MetadataValue.float(value)
    return MetadataValue.text(str(value))


def outcome_metadata(recorded: RecordedRun) -> dict[str, Any]:
    """Counters as typed metadata, URL status counts, and the bounded per-URL table."""
    meta: dict[str, Any] = {key: _typed(value) for key, value in recorded.counters.items()}
    summary = recorded.summary
    meta["url_status_counts"] = MetadataValue.json(dict(summary.by_status))
    meta["urls_called"] = MetadataValue.int(summary.attempted)
    meta["urls_reused"] = MetadataValue.int(summary.reused)
    meta["urls_converged"] = MetadataValue.int(summary.converged)
    meta["paid_requests"] = MetadataValue.int(summary.paid_requests)
    meta["urls_held_by_budget"] = MetadataValue.int(summary.budget_held)
    table = recorded.table
    meta["url_outcomes"] = MetadataValue.table(records=[TableRecord(r) for r in table.rows], schema=OUTCOME_SCHEMA)
    if table.rows:
        meta["url_outcomes_md"] = MetadataValue.md(outcomes_markdown(table.rows))
    meta["url_outcomes_shown"] = MetadataValue.text(table.caption())
    if table.total > len(table.rows):
        meta["url_outcomes_truncated"] = MetadataValue.int(table.total - len(table.rows))
    dropped = [f"{t.address}: {d}" for t in recorded.tokens for d in t.dropped]
    if dropped:
        meta["dropped_values_list"] = MetadataValue.md(
            "\n".join(f"- `{line}`" for line in dropped[:MAX_DROPPED_ROWS])
            + (f"\n- … {len(dropped) - MAX_DROPPED_ROWS} more" if len(dropped) > MAX_DROPPED_ROWS else "")
        )
    for key, value in recorded.extra.items():
        meta[key] = value
    return meta


def _md_cell(column: str, value: object) -> str:
    text = str(value).replace("|", "\\|").replace("\n", " ")
    if column == "url" and text.startswith(("http://", "https://")):
        return f"[{text}]({text.replace(' ', '%20').replace(')', '%29')})"
    return text


def outcomes_markdown(rows: Sequence[Mapping[str, object]]) -> str:
    """The per-URL table as markdown: the URL a link, each row one line."""
    lines = ["| " + " | ".join(MARKDOWN_COLUMNS) + " |", "|" + "---|" * len(MARKDOWN_COLUMNS)]
    lines += ["| " + " | ".join(_md_cell(c, r.get(c, "")) for c in MARKDOWN_COLUMNS) + " |" for r in rows]
    return "\n".join(lines)


def finish_recording(context: OpExecutionContext, recorded: RecordedRun, store: Store, health: HealthInputs,
                     run_tags: Mapping[str, str] | None = None) -> None:
    """The end of a recording stage: log, hand the counters to the assets, tag the run with
    `run_tags` (what a sensor reads of it), then fail this stage if it must fail (its metadata: the
    counters and the per-URL table)."""
    if recorded.skipped:
        context.log.warning(recorded.skipped)
    for t in recorded.tokens:
        for d in t.dropped:
            # A placeholder ("TBA", "-") is noise; anything that looked like a link is a possible loss.
            level = context.log.info if d.placeholder else context.log.warning
            level(f"dropped tracker value {t.address}: {d}")
        if t.status in _NOT_RECORDED:
            context.log.warning(kv_fields("token_not_recorded", {"token": t.address, "status": t.status.value,
                                                                "detail": t.detail}))
        elif t.status in (TokenStatus.FAILED, TokenStatus.LOST):
            context.log.warning(kv_fields("token_outcome", {"token": t.address, "status": t.status.value,
                                                           "detail": t.detail}))
    context.log.info(kv_fields(f"{recorded.job}_done", recorded.counters))
    if recorded.summary.budget_held:
        context.log.warning(kv_fields("urls_held_by_spend_budget", {
            "urls": recorded.summary.budget_held,
            "why": "their paid request was not sent: they wait as skipped_paid (zero calls) for the retry job after "
                   "the budget resets (see provider_spend and its spend_within_budget check)"}))
    if recorded.summary.lost:
        context.log.warning(
            f"{recorded.summary.lost} URL(s) met a lost lock (nothing paid twice: writes are fenced); the next run "
            "completes what was not written: " + ", ".join(recorded.lost_examples)
        )
    try:
        report_to_assets(context, store, health, recorded)
    except Exception as exc:  # the report of what was recorded must not hide the recording itself
        context.log.warning(f"report_to_assets failed: {type(exc).__name__}: {exc}")
    if run_tags:
        try:
            context.instance.add_run_tags(context.run_id, dict(run_tags))
        except Exception as exc:
            context.log.warning(f"could not tag the run with {', '.join(run_tags)}: {type(exc).__name__}: {exc}")
    failure = failure_of(recorded)
    if failure:
        raise Failure(description=failure, metadata=outcome_metadata(recorded))


def failure_of(recorded: RecordedRun) -> str:
    """Why the recording stage fails, or "" when its work is done."""
    failed = [t for t in recorded.tokens if t.status is TokenStatus.FAILED]
    if failed:
        shown = "; ".join(f"{t.address}: {t.detail}" for t in failed[:SHOWN_IN_FAILURE])
        return (f"{len(failed)} of {recorded.tokens_total} token(s) failed and were not recorded ({shown}). The "
                "others were recorded; re-executing the run from this failure records the tokens not stored yet.")
    if recorded.summary.engine_failures:
        shown = "; ".join(recorded.defect_examples)
        return (f"{recorded.summary.engine_failures} URL(s) ended in an engine failure: a defect of ours or a store "
                f"or lock backend that stayed unavailable, not the provider's answer ({shown}). Everything else "
                "was recorded; see the error lines in the run log. Their attempts were not counted: once fixed, "
                "the retry job picks them up after their back-off (or run retry_job with min_interval_minutes: 0).")
    if recorded.left_behind:
        return ("This run left work behind, so it is not marked done: " + " | ".join(recorded.left_behind) + ". "
                "Nothing was lost: those tokens and URLs are as they were, and everything else was recorded. "
                "Re-executing the run from this failure records them (waiting for the locks again), and so does "
                "the next run: for a reconcile partition reconcile_catch_up_sensor launches it again, the retry "
                "job picks up the URLs.")
    return ""


def report_output(context: OpExecutionContext, recorded: RecordedRun) -> Output[dict[str, Any]]:
    """The run's counters as the job's output, with the URL status counts and the per-URL table."""
    context.log.info(f"{recorded.job} run: {recorded.summary.urls} URL outcome(s), "
                     f"{recorded.summary.converged} converged, {recorded.summary.attempted} called, "
                     f"{recorded.summary.reused} reused")
    return Output(dict(recorded.counters), metadata=outcome_metadata(recorded))
