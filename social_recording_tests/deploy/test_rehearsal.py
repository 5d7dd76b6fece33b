"""The deployment rehearsal (see rehearsal.py): docker-compose.yml's Dagster services, started with
their own entry point on a real PostgreSQL, a real redis-server and the Mongo store on a FerretDB,
drive a backfill, the live sensor and the retry schedule to success through the webserver's GraphQL
API.

One deployment serves every assertion (starting it is most of the cost); timeouts are guards only.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from test_support.rehearsal import (
    REHEARSAL_TIMINGS,
    RehearsalReport,
    RunRecord,
    run_rehearsal,
)

pytestmark = [pytest.mark.integration, pytest.mark.mongo_server, pytest.mark.heavy(minutes=3)]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[RehearsalReport]:
    result = run_rehearsal(Path(tmp_path_factory.mktemp("rehearsal")))
    request.config.stash[REHEARSAL_TIMINGS] = result.timing_lines()
    yield result


def _urls_logged(run: RunRecord) -> set[str]:
    return {part.split("=", 1)[1] for line in run.url_lines for part in line.split() if part.startswith("url=")}


def test_backfill_runs_are_queued_launched_by_the_daemon_and_succeed(report: RehearsalReport) -> None:
    runs = sorted(report.backfill_runs, key=lambda r: r.tags["dagster/partition"])
    assert [r.tags["dagster/partition"] for r in runs] == report.scenario.partitions
    for run in runs:
        assert run.job == "reconcile_job"
        assert run.status == "SUCCESS", run.messages[-10:]
        # Through the run queue: enqueued by the backfill, dequeued and started by the daemon.
        assert run.event_types.index("RunEnqueuedEvent") < run.event_types.index("RunStartingEvent") \
            < run.event_types.index("RunStartEvent") < run.event_types.index("RunSuccessEvent")
        assert run.tags["social_recording/job"] == "reconcile"


def test_backfill_runs_log_one_line_per_url(report: RehearsalReport) -> None:
    for run in report.backfill_runs:
        expected = report.scenario.urls_by_partition[run.tags["dagster/partition"]]
        assert _urls_logged(run) == expected, run.url_lines


def test_prod_starts_the_token_flow_sensor_and_its_run_records_the_fresh_token(report: RehearsalReport) -> None:
    assert report.sensor_status == "RUNNING"  # SOCIAL_RECORDING_ENV=prod, as in docker-compose.yml
    assert report.sensor_runs, "the sensor launched no run"
    assert {r.job for r in report.sensor_runs} == {"live_tokens_job"}
    assert all(r.status == "SUCCESS" for r in report.sensor_runs)
    assert set().union(*(_urls_logged(r) for r in report.sensor_runs)) == report.scenario.fresh_urls


def test_bluesky_and_farcaster_record_each_outcome_in_the_deployment(report: RehearsalReport) -> None:
    """not_found, blocked (Bluesky: a taken-down account), rate limited and Neynar's credit answer (402),
    each recorded by the backfill's runs; ok by the other tokens and the fault phase's casts."""
    assert report.platform_statuses == report.scenario.platform_statuses


def test_the_retry_schedule_launches_a_retry_run_that_succeeds(report: RehearsalReport) -> None:
    assert len(report.schedule_runs) == 1
    run = report.schedule_runs[0]
    assert run.job == "retry_job" and run.status == "SUCCESS"
    assert run.tags["dagster/schedule_name"] == "retry_schedule"
    assert "RunEnqueuedEvent" in run.event_types  # queued like every run, then launched by the daemon


def test_the_rehearsal_leaves_nothing_running(report: RehearsalReport) -> None:
    assert report.leftover_pids == []  # services and every run process they started
    assert not report.redis_left
    assert not report.database_left
    assert not report.store_left


def test_a_terminated_run_is_canceled_and_its_partition_run_again_completes_it(report: RehearsalReport) -> None:
    terminated, rerun = report.terminated_run, report.rerun
    assert terminated.status == "CANCELED", terminated.messages[-10:]
    assert rerun.status == "SUCCESS", rerun.messages[-10:]
    # The termination cut the run: some URLs were left to the second run, which recorded only those.
    first, second = _urls_logged(terminated), _urls_logged(rerun)
    assert second, "the terminated run had already recorded everything: it was not cut"
    assert first.isdisjoint(second)
    assert first | second == report.scenario.slow_urls
    # Nothing lost, nothing pending, nothing asked twice: the tokens in flight were finished before
    # the run stopped, and the others were never started.
    assert report.slow_statuses == dict.fromkeys(report.scenario.slow_urls, "ok")
    counts = set(report.slow_requests.values())
    assert len(counts) == 1 and counts != {0}, report.slow_requests


def test_a_terminated_run_says_what_it_left_for_the_next_run(report: RehearsalReport) -> None:
    text = "\n".join(report.terminated_run.messages)
    assert "terminated" in text and "not started" in text, report.terminated_run.messages[-15:]


# --------------------------------------------------------------------------- the faults (rehearsal_faults.py)


def test_after_the_faults_every_partition_is_done_and_holds_its_tokens(report: RehearsalReport) -> None:
    faults, scenario = report.faults, report.scenario
    rehearsed = [*scenario.partitions, scenario.slow_partition, *faults.scenario.days]
    assert {d: faults.partition_status.get(d) for d in rehearsed} == dict.fromkeys(rehearsed, "SUCCESS")
    # Dagster showing a partition done while the store lacks tokens of its day: never, neither when
    # each fault partition was first done nor at the end.
    assert faults.done_with_work_left == []
    assert sorted(faults.statuses) == sorted(faults.scenario.urls)


def test_after_the_faults_no_element_is_pending_and_every_fault_url_is_ok(report: RehearsalReport) -> None:
    faults = report.faults
    assert faults.pending_left == []
    assert {a: set(els.values()) for a, els in faults.statuses.items()} == {a: {"ok"} for a in faults.scenario.urls}


def test_nothing_was_paid_twice_through_the_faults(report: RehearsalReport) -> None:
    faults = report.faults
    assert faults.redis_waits > 0  # the lock server's restart met runs at work
    assert faults.repeated == {}
    assert faults.paid_subjects > 0 and faults.paid_per_subject == 1.0


def test_no_run_succeeded_with_work_left_behind(report: RehearsalReport) -> None:
    assert report.faults.succeeded_with_work_left == []


def test_the_killed_run_failed_and_dagsters_run_retry_recorded_its_partition(report: RehearsalReport) -> None:
    faults = report.faults
    day_runs = faults.partition_runs[faults.scenario.killed_day]
    killed, *later = day_runs
    assert killed.run_id == faults.killed_run and killed.status == "FAILURE"
    # The code server reported the dead process; the daemon's run retry re-executed the run once the
    # dead run's window lock expired. Nothing else ran the partition: the catch-up sensor, which
    # leaves a failed run to Dagster's retries first, launched nothing.
    assert [(r.tags.get("dagster/parent_run_id"), r.status) for r in later] == [(killed.run_id, "SUCCESS")]
    assert faults.catch_up_ticks > 0 and faults.catch_up_runs == []
    # What the dead run left pending on its stored token is retry_job's (launched by its schedule
    # right after the kill; the run waits for the dead run's URL lock to expire).
    assert faults.retry_runs and {r.status for r in faults.retry_runs} == {"SUCCESS"}
    address, url = faults.left_pending
    assert faults.statuses[address][url] == "ok"
    assert any(line.startswith("url_outcome status=ok ") and f" url={url} " in line and f" token={address} " in line
               for r in faults.retry_runs for line in r.url_lines)


def test_the_backfill_completes_after_the_daemon_was_killed_mid_way(report: RehearsalReport) -> None:
    assert report.faults.backfill_status == "COMPLETED_SUCCESS"
    for day in report.faults.scenario.backfill_days:
        assert [r.status for r in report.faults.partition_runs[day]] == ["SUCCESS"], day
