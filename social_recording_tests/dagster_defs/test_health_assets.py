"""The recorded data as assets and its health checks: in-process runs on the sandbox, then the
instance's event history (observations, check evaluations) read back like the UI reads it."""

from __future__ import annotations

import sqlite3
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from dagster import (
    AssetCheckEvaluation,
    AssetCheckKey,
    AssetCheckSeverity,
    AssetKey,
    DagsterEventType,
    DagsterInstance,
    DefaultScheduleStatus,
    ExecuteInProcessResult,
    serialize_value,
)

from social_recording.dagster_defs.assets import (
    ACCOUNTS,
    ASSET_SPECS,
    CONTENTS,
    METRICS,
    TOKEN_LINKS,
    TOKEN_SOCIAL_URLS,
    TRACKER_TOKENS,
    VENUES,
)
from social_recording.dagster_defs.health_report import check_names
from social_recording.dagster_defs.jobs.health import HEALTH_JOB
from social_recording.dagster_defs.spend import PROVIDER_SPEND
from social_recording.domain.graph import ObjectKind
from social_recording.domain.models import TokenProfile, utcnow
from social_recording.domain.status import ABSORBING, FetchStatus
from social_recording.recording.health import (
    COUNTS_MATCH,
    EXHAUSTED_GROWTH,
    PAID_ONCE,
    RETRY_CYCLE,
    STARVED_AFTER,
    STARVED_RETRIES,
    STUCK_PENDING,
    STUCK_PENDING_AFTER,
)
from social_recording.sandbox.ledger import POLL_PREFIXES, Ledger
from social_recording.store import open_store
from social_recording.store.base import ElementWrite, UrlWrite
from test_support.sandbox_env import (
    SandboxEnv,
    log_lines,
    make_env,
    output_metadata,
    token,
)

A = "TokAlpha1111111111111111111111111111111111"
B = "TokBeta22222222222222222222222222222222222"
SEEDED = "TokSeeded333333333333333333333333333333333"

FLAKY_TWEET = "https://x.com/i/status/1000000000000000001"
ERROR_VIDEO = "https://youtube.com/watch?v=Err0rVideo1"
OK_TWEET = "https://x.com/i/status/1000000000000000002"
GH = "https://github.com/seededorg/seeded"

TOKENS = [
    token(A, "2026-11-10T03:00:00Z", twitter=FLAKY_TWEET, website="https://youtu.be/Err0rVideo1",
          telegram="https://t.me/alphachat"),
    token(B, "2026-11-10T15:30:00Z", twitter=OK_TWEET, website="https://github.com/betaorg/beta",
          discord="https://discord.gg/beta"),
]
TARGETS = {FLAKY_TWEET: "flaky:2", ERROR_VIDEO: "error"}
SECRETS = {"TWITTERAPI_IO_KEY": "twitterapi-key-S3cret", "APIFY_TOKEN": "apify-token-S3cret",
           "YOUTUBE_API_KEY": "youtube-key-S3cret", "GITHUB_TOKEN": "github-token-S3cret",
           "URLSCAN_API_KEY": "urlscan-key-S3cret"}
RETRY_FAST = {"ops": {"retry_urls": {"config": {"min_interval_minutes": 0}}}}


@pytest.fixture()
def env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SandboxEnv:
    return make_env(tmp_path, monkeypatch, TOKENS, TARGETS, extra=SECRETS)


def observations(instance: DagsterInstance, key: AssetKey, run_id: str | None = None) -> list[dict[str, Any]]:
    """Every observation of `key` (oldest first), as {figure: value}, optionally of one run."""
    records = instance.fetch_observations(key, limit=100, ascending=True).records
    return [
        {k: v.value for k, v in r.asset_observation.metadata.items()}
        for r in records
        if r.asset_observation is not None and (run_id is None or r.run_id == run_id)
    ]


def evaluations(instance: DagsterInstance, run_id: str) -> dict[str, AssetCheckEvaluation]:
    """The check evaluations logged by one run, by check name."""
    out: dict[str, AssetCheckEvaluation] = {}
    for entry in instance.all_logs(run_id):
        event = entry.dagster_event
        if event is not None and isinstance(event.event_specific_data, AssetCheckEvaluation) and (
                event.event_specific_data.asset_key == TOKEN_SOCIAL_URLS):  # provider_spend's: test_spend_assets.py
            out[event.event_specific_data.check_name] = event.event_specific_data
    return out


def latest_evaluations(instance: DagsterInstance, names: list[str]) -> dict[str, AssetCheckEvaluation]:
    """The latest evaluation of each named check, as the asset page shows it."""
    out: dict[str, AssetCheckEvaluation] = {}
    for name in names:
        history = instance.event_log_storage.get_asset_check_execution_history(
            AssetCheckKey(TOKEN_SOCIAL_URLS, name), limit=1)
        if history and history[0].event is not None and history[0].event.dagster_event is not None:
            data = history[0].event.dagster_event.event_specific_data
            if isinstance(data, AssetCheckEvaluation):
                out[name] = data
    return out


def materialized(instance: DagsterInstance, run_id: str) -> dict[AssetKey, int]:
    """The assets one run reported as materialized, with their `writes_this_run`."""
    return {e.dagster_event.asset_key: e.dagster_event.event_specific_data.materialization.metadata[
                "writes_this_run"].value
            for e in instance.all_logs(run_id, of_type=DagsterEventType.ASSET_MATERIALIZATION)
            if e.dagster_event is not None and e.dagster_event.asset_key is not None
            and e.dagster_event.asset_key != PROVIDER_SPEND}  # spend, not a collection: test_spend_assets.py


def figures(evaluation: AssetCheckEvaluation) -> dict[str, Any]:
    return {k: v.value for k, v in evaluation.metadata.items()}


def run_health(env: SandboxEnv, instance: DagsterInstance) -> ExecuteInProcessResult:
    result = env.defs().resolve_job_def(HEALTH_JOB).execute_in_process(instance=instance)
    assert result.success  # a failing check never fails a run
    return result


def test_the_store_collections_are_assets_with_lineage_and_checks(env: SandboxEnv) -> None:
    graph = env.defs().resolve_asset_graph()
    parents = {k: {p for p in graph.get(k).parent_keys} for k in graph.get_all_asset_keys()}
    assert parents == {
        TRACKER_TOKENS: set(),
        TOKEN_SOCIAL_URLS: {TRACKER_TOKENS},
        CONTENTS: {TOKEN_SOCIAL_URLS},
        ACCOUNTS: {TOKEN_SOCIAL_URLS},
        VENUES: {TOKEN_SOCIAL_URLS},
        METRICS: {CONTENTS, ACCOUNTS, VENUES},
        TOKEN_LINKS: {TOKEN_SOCIAL_URLS, CONTENTS, ACCOUNTS, VENUES},
        PROVIDER_SPEND: {TOKEN_SOCIAL_URLS},
    }
    assert all(spec.description and spec.group_name == "social_recording" for spec in ASSET_SPECS)
    checks = {c.name for c in graph.get(TOKEN_SOCIAL_URLS).check_keys}
    assert checks == {STUCK_PENDING, STARVED_RETRIES, EXHAUSTED_GROWTH, PAID_ONCE, COUNTS_MATCH}


def test_live_upstream_has_no_ledger_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    make_env(tmp_path, monkeypatch, [], extra={"SOCIAL_RECORDING_UPSTREAM": "live",
                                               "SOCIAL_RECORDING_TRACKER_URL": "https://tracker.invalid",
                                               "SOCIAL_RECORDING_AF_GROUP_IDS": "g1"})
    from social_recording.dagster_defs.definitions_builder import build_definitions
    from social_recording.settings import load_settings

    graph = build_definitions(load_settings()).resolve_asset_graph()
    assert {c.name for c in graph.get(TOKEN_SOCIAL_URLS).check_keys} == set(check_names(sandbox=False, hourly=True))
    assert PAID_ONCE not in check_names(sandbox=False, hourly=True)


def test_a_run_observes_every_asset_and_evaluates_the_checks(env: SandboxEnv) -> None:
    instance = DagsterInstance.ephemeral()
    result = env.defs().resolve_job_def("reconcile_job").execute_in_process(
        partition_key="2026-11-10", instance=instance)
    assert result.success
    run_meta = output_metadata(result, "reconcile_window")
    store = open_store(env.store_url)
    try:
        counts = store.status_counts().by_status()
        objects = {kind: store.count_objects(kind) for kind in ObjectKind}
        metric_points, links, tokens = store.count_metrics(), store.count_links(), store.status_counts().tokens
    finally:
        store.close()

    (urls,) = observations(instance, TOKEN_SOCIAL_URLS, result.run_id)
    assert {s: urls[f"urls_{s.value}"] for s in FetchStatus} == counts  # all nine, zero included
    assert urls["urls_exhausted"] == 0 and urls["urls_ok"] == 4 and urls["urls_error"] == 2  # the invite is ok
    assert urls["urls_total"] == 6 and urls["tokens"] == tokens == 2
    assert urls["urls_not_converged"] == counts[FetchStatus.ERROR] + counts[FetchStatus.UNSUPPORTED]
    # The run's own figures: the same as its output metadata, and as the ledger's paid requests.
    table = run_meta["url_outcomes"].records
    assert urls["urls_processed_this_run"] == len(table) == 6
    assert urls["calls_made_this_run"] == run_meta["urls_called"]
    assert urls["calls_reused_this_run"] == run_meta["urls_reused"]
    assert urls["urls_converged_this_run"] == sum(1 for r in table if r.data["status"] in set(ABSORBING))
    paid = [e for e in env.ledger() if e.paid and not e.subject.startswith(POLL_PREFIXES)]
    assert urls["paid_calls_this_run"] == len(paid) == 2  # the two tweets
    assert urls["urls_by_platform"]["youtube"] == {"error": 1}

    assert observations(instance, CONTENTS, result.run_id) == [{"objects": objects[ObjectKind.CONTENT]}]
    assert observations(instance, ACCOUNTS, result.run_id) == [{"objects": objects[ObjectKind.ACCOUNT]}]
    assert observations(instance, VENUES, result.run_id) == [{"objects": objects[ObjectKind.VENUE]}]
    assert observations(instance, METRICS, result.run_id) == [{"metric_points": metric_points}]
    assert observations(instance, TOKEN_LINKS, result.run_id) == [{"links": links}]
    assert objects[ObjectKind.CONTENT] >= 1 and links >= 1 and metric_points >= 1

    checks = evaluations(instance, result.run_id)
    assert set(checks) == set(check_names(sandbox=True))
    assert all(c.passed for c in checks.values()), {n: c.description for n, c in checks.items()}
    assert figures(checks[PAID_ONCE]) == {
        "paid_requests": 2, "distinct_paid_subjects": 2, "paid_requests_per_subject": 1.0,
        "paid_requests_per_subject_with_retries": 1.0, "retries_after_failure": 0, "paid_again_after_answer": 0}
    assert figures(checks[STUCK_PENDING])["elements"] == 0
    assert figures(checks[EXHAUSTED_GROWTH])["exhausted"] == 0
    # ... and they are the checks' latest executions, as the asset page shows them.
    latest = latest_evaluations(instance, check_names(sandbox=True))
    assert set(latest) == set(checks) and all(e.passed for e in latest.values())


def test_a_run_materializes_the_assets_it_wrote_and_only_those(env: SandboxEnv) -> None:
    """The catalog shows data as materialized by the run that wrote it (never "Never materialized"
    for data just written), and a run that wrote nothing to an asset does not claim it."""
    instance = DagsterInstance.ephemeral()
    defs = env.defs()
    reconcile = defs.resolve_job_def("reconcile_job").execute_in_process(partition_key="2026-11-10",
                                                                         instance=instance)
    assert reconcile.success
    wrote = materialized(instance, reconcile.run_id)
    assert set(wrote) == {TOKEN_SOCIAL_URLS, CONTENTS, ACCOUNTS, VENUES, METRICS, TOKEN_LINKS}
    # each carries the figures of its observation, so the asset page's latest metadata shows them
    latest = instance.get_latest_materialization_event(TOKEN_SOCIAL_URLS)
    assert latest is not None and latest.asset_materialization is not None
    figures = {k: v.value for k, v in latest.asset_materialization.metadata.items()}
    (urls,) = observations(instance, TOKEN_SOCIAL_URLS, reconcile.run_id)
    assert figures == {**urls, "writes_this_run": 8} and figures["urls_ok"] == 4
    assert wrote[TOKEN_SOCIAL_URLS] == 6 + 2  # every URL recording, and the two tokens created
    assert wrote[TOKEN_LINKS] == 4  # the four ok URLs
    for key in wrote:
        assert instance.get_latest_materialization_event(key) is not None
    assert instance.get_latest_materialization_event(TRACKER_TOKENS) is None  # read, never written

    # A retry of the two errors, both failing again: only their elements were written.
    retry = defs.resolve_job_def("retry_job").execute_in_process(
        run_config={"ops": {"retry_urls": {"config": {"statuses": ["error"], "min_interval_minutes": 0}}}},
        instance=instance)
    assert retry.success and retry.output_for_node("retry_urls")["processed"] == 2
    assert materialized(instance, retry.run_id) == {TOKEN_SOCIAL_URLS: 2}
    # A run with nothing to record writes nothing.
    idle = defs.resolve_job_def("retry_job").execute_in_process(instance=instance)
    assert idle.success and idle.output_for_node("retry_urls")["processed"] == 0
    assert materialized(instance, idle.run_id) == {}


def test_retries_plot_convergence_run_after_run(env: SandboxEnv) -> None:
    instance = DagsterInstance.ephemeral()
    defs = env.defs()
    assert defs.resolve_job_def("reconcile_job").execute_in_process(partition_key="2026-11-10",
                                                                    instance=instance).success
    retry = defs.resolve_job_def("retry_job")
    for _ in range(4):
        assert retry.execute_in_process(run_config=RETRY_FAST, instance=instance).success
    series = observations(instance, TOKEN_SOCIAL_URLS)
    assert len(series) == 5
    assert [s["urls_error"] for s in series] == [2, 2, 1, 1, 0]
    assert [s["urls_ok"] for s in series] == [4, 4, 5, 5, 5]
    assert [s["urls_exhausted"] for s in series] == [0, 0, 0, 0, 1]
    assert [s["urls_converged_this_run"] for s in series][1:] == [0, 1, 0, 1]
    assert [s["calls_made_this_run"] for s in series][1:] == [2, 2, 1, 1]
    assert [s["paid_calls_this_run"] for s in series] == [2, 1, 1, 0, 0]  # the flaky tweet: 503, 503, ok
    # Its two retries spent its call budget; nothing was paid twice for an answer.
    paid = latest_evaluations(instance, [PAID_ONCE])[PAID_ONCE]
    assert paid.passed
    assert {k: v.value for k, v in paid.metadata.items()}["retries_after_failure"] == 2


def _seed_store(env: SandboxEnv, seed: Any) -> None:
    store = open_store(env.store_url)
    try:
        seed(store)
    finally:
        store.close()


def test_a_stuck_pending_element_fails_its_check_but_never_the_run(env: SandboxEnv) -> None:
    old = utcnow() - STUCK_PENDING_AFTER - timedelta(minutes=10)
    _seed_store(env, lambda s: s.create_pending_token(TokenProfile(address=SEEDED, urls=[GH]), now=old))
    instance = DagsterInstance.ephemeral()

    result = env.defs().resolve_job_def("reconcile_job").execute_in_process(
        partition_key="2026-11-10", instance=instance)

    assert result.success
    stuck = evaluations(instance, result.run_id)[STUCK_PENDING]
    assert not stuck.passed and stuck.severity == AssetCheckSeverity.ERROR
    assert figures(stuck)["elements"] == 1
    (row,) = figures(stuck)["examples"].records
    assert (row.data["token"], row.data["url"], row.data["status"]) == (SEEDED, GH, "pending")
    assert "never recorded" in row.data["waiting_since"]
    assert any("health check no_stuck_pending (error) failed" in line
               for line in log_lines(instance, result.run_id, "health check"))
    # The hourly check agrees, and the retry (which takes never-recorded elements first) clears it.
    health = run_health(env, instance)
    assert not evaluations(instance, health.run_id)[STUCK_PENDING].passed
    assert env.defs().resolve_job_def("retry_job").execute_in_process(instance=instance).success
    assert evaluations(instance, run_health(env, instance).run_id)[STUCK_PENDING].passed


def test_an_old_due_error_starves(env: SandboxEnv) -> None:
    now = utcnow()

    def seed(store: Any) -> None:
        store.create_pending_token(TokenProfile(address=SEEDED, urls=[GH]), now=now - 10 * RETRY_CYCLE)
        at = now - STARVED_AFTER - timedelta(minutes=5)
        assert store.apply_url_write(UrlWrite(
            address=SEEDED, url=GH, platform="github", fence=1, now=at,
            element=ElementWrite(FetchStatus.ERROR, 1, at, at, detail="HTTP 503 from github"),
        )).result.applied

    _seed_store(env, seed)
    instance = DagsterInstance.ephemeral()

    checks = evaluations(instance, run_health(env, instance).run_id)

    starved = checks[STARVED_RETRIES]
    assert not starved.passed and starved.severity == AssetCheckSeverity.WARN
    (row,) = figures(starved)["examples"].records
    assert (row.data["token"], row.data["url"], row.data["detail"], row.data["attempts"]) == (
        SEEDED, GH, "HTTP 503 from github", 1)
    assert figures(starved)["oldest_hours"] >= STARVED_AFTER / timedelta(hours=1)
    assert checks[STUCK_PENDING].passed  # recorded, so not stuck: late, which is a warning
    # The health job observes the store too (no run figures: it recorded nothing).
    (urls,) = observations(instance, TOKEN_SOCIAL_URLS)
    assert urls["urls_error"] == 1 and "calls_made_this_run" not in urls


def test_exhausted_growth_past_the_bound_warns(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = make_env(tmp_path, monkeypatch, TOKENS, TARGETS, extra={
        "SOCIAL_RECORDING_MAX_EXHAUSTED_PER_HOUR": "0", "SOCIAL_RECORDING_MAX_ATTEMPTS": "1"})
    instance = DagsterInstance.ephemeral()
    baseline = run_health(env, instance)  # an empty store: 0 exhausted observed
    assert evaluations(instance, baseline.run_id)[EXHAUSTED_GROWTH].passed

    result = env.defs().resolve_job_def("reconcile_job").execute_in_process(
        partition_key="2026-11-10", instance=instance)

    assert result.success
    growth = evaluations(instance, result.run_id)[EXHAUSTED_GROWTH]
    assert not growth.passed and growth.severity == AssetCheckSeverity.WARN
    # One call each is the whole budget: the erroring video and the flaky tweet exhaust at once.
    assert figures(growth)["exhausted"] == figures(growth)["growth"] == 2
    assert figures(growth)["allowed"] == 0.0


def test_the_hourly_job_reports_and_repairs_drifted_counters(env: SandboxEnv) -> None:
    """A run's report stage reads the counters and never recounts; the hourly job recounts, reports
    what differed and repairs it, and its observation shows the repaired figures."""
    instance = DagsterInstance.ephemeral()
    run = env.defs().resolve_job_def("reconcile_job").execute_in_process(partition_key="2026-11-10",
                                                                          instance=instance)
    assert run.success and COUNTS_MATCH not in evaluations(instance, run.run_id)
    with sqlite3.connect(env.store_url.removeprefix("sqlite:///")) as conn:  # drift made by hand
        assert conn.execute("UPDATE store_counts SET n = n + 3 WHERE key = 'urls|x|ok'").rowcount == 1
    conn.close()
    drifted = env.defs().resolve_job_def("reconcile_job").execute_in_process(partition_key="2026-11-10",
                                                                              instance=instance)
    (shown,) = observations(instance, TOKEN_SOCIAL_URLS, drifted.run_id)
    assert shown["urls_ok"] == 7  # what the counters say until the recount: 4 ok, plus the drift

    health = run_health(env, instance)

    counts = evaluations(instance, health.run_id)[COUNTS_MATCH]
    assert not counts.passed and counts.severity == AssetCheckSeverity.WARN
    assert "urls|x|ok kept 4, recounted 1" in (counts.description or "")
    assert {k: v for k, v in figures(counts).items() if k != "recount_seconds"} == {
        "counters_differing": 1, "counters_repaired": 1, "drift": 3}
    (repaired,) = observations(instance, TOKEN_SOCIAL_URLS, health.run_id)
    assert repaired["urls_ok"] == 4
    again = evaluations(instance, run_health(env, instance).run_id)[COUNTS_MATCH]
    assert again.passed and figures(again)["counters_differing"] == 0


def test_a_repeated_paid_subject_fails_the_ledger_check(env: SandboxEnv) -> None:
    ledger = Ledger(env.ledger_path)
    for _ in range(2):  # answered, then paid for again
        ledger.append(service="urlscan", method="POST", url="https://urlscan.io/api/v1/scan/",
                      subject="https://coin.example/?session=S3cret-session", status=200, paid=True)
    ledger.append(service="urlscan", method="GET", url="https://urlscan.io/api/v1/result/1/",
                  subject="result:1", status=200, paid=True)  # a poll: never a repeat
    instance = DagsterInstance.ephemeral()

    paid = evaluations(instance, run_health(env, instance).run_id)[PAID_ONCE]

    assert not paid.passed and paid.severity == AssetCheckSeverity.ERROR
    assert figures(paid)["paid_requests_per_subject"] == 2.0 and figures(paid)["paid_again_after_answer"] == 1
    assert "urlscan https://coin.example/?session=*** x2" in figures(paid)["repeated_paid_subjects"]
    assert "S3cret" not in serialize_value(paid)


def test_a_broken_health_report_never_fails_the_run(env: SandboxEnv) -> None:
    env.ledger_path.write_text("not a ledger line\n")  # the ledger check cannot read it
    instance = DagsterInstance.ephemeral()

    result = env.defs().resolve_job_def("reconcile_job").execute_in_process(
        partition_key="2026-11-10", instance=instance)

    assert result.success
    assert log_lines(instance, result.run_id, "health report skipped: LedgerFormatError")
    assert set(env.statuses()) == {A, B}  # the data is recorded all the same


def test_no_secret_reaches_the_event_log(env: SandboxEnv) -> None:
    instance = DagsterInstance.ephemeral()
    defs = env.defs()
    runs = [defs.resolve_job_def("reconcile_job").execute_in_process(partition_key="2026-11-10", instance=instance),
            defs.resolve_job_def("retry_job").execute_in_process(run_config=RETRY_FAST, instance=instance),
            run_health(env, instance)]
    for result in runs:
        assert result.success
        for entry in instance.all_logs(result.run_id):
            text = serialize_value(entry)
            assert not any(secret in text for secret in SECRETS.values()), entry.user_message


def test_health_schedule_is_hourly_and_prod_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from social_recording.dagster_defs.definitions_builder import build_definitions
    from social_recording.settings import load_settings

    for name, running in (("dev", False), ("stage", False), ("prod", True)):
        make_env(tmp_path, monkeypatch, [], extra={"SOCIAL_RECORDING_ENV": name})
        defs = build_definitions(load_settings())
        schedule = defs.resolve_schedule_def("health_schedule")
        assert schedule.job_name == HEALTH_JOB and schedule.execution_timezone == "UTC"
        assert (schedule.default_status == DefaultScheduleStatus.RUNNING) is running
        minute, hour, *rest = schedule.cron_schedule.split()
        assert minute.isdigit() and hour == "*" and rest == ["*", "*", "*"]
        # The starvation bound counts retry cycles of the hourly retry schedule.
        retry_cron = defs.resolve_schedule_def("retry_schedule").cron_schedule
        assert retry_cron == "0 * * * *" and timedelta(hours=1) == RETRY_CYCLE


def test_observation_series_counts_match_a_counter(env: SandboxEnv) -> None:
    """URLs by status in an observation add up to the total, run after run."""
    instance = DagsterInstance.ephemeral()
    assert env.defs().resolve_job_def("reconcile_job").execute_in_process(partition_key="2026-11-10",
                                                                          instance=instance).success
    (urls,) = observations(instance, TOKEN_SOCIAL_URLS)
    by_status = Counter({s.value: urls[f"urls_{s.value}"] for s in FetchStatus})
    assert sum(by_status.values()) == urls["urls_total"]
