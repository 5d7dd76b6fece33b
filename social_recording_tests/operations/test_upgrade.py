"""The upgrade rehearsal: a deployment of the previous release with runs in flight is upgraded to this
one the way compose does it — `drain` (which times out: the runs are still going), the containers
recreated past their stop grace period (the code server and every run process in it SIGKILLed), the
one-shot migrate step (`dagster instance migrate`, `python -m social_recording migrate`) on stores
the previous release wrote (previous_release.py), the services started, `resume`. Nothing may be
lost and no run may stay STARTED: the runs whose process died are failed by run monitoring at their
maximum runtime, and the catch-up and the retry sensor record their work. Natively, on the
deployment rehearsal's real PostgreSQL, redis-server, FerretDB and Dagster services.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from dagster import DagsterInstance

from social_recording.dagster_defs.stages import MAX_RUNTIME_TAG
from social_recording.domain.status import FetchStatus
from social_recording.domain.urls import to_canonical
from social_recording.operations.migrate import schema_version_of
from social_recording.store import open_store
from social_recording.store.mongo import SCHEMA_VERSION
from social_recording_tests.operations.previous_release import (
    PREVIOUS_MONGO_SCHEMA,
    data_migration_markers,
    instance_before_data_migrations,
    store_to_previous_schema,
)
from test_support.rehearsal import (
    BACKFILL_JOB,
    DEPLOY_DIR,
    M_BACKFILL,
    Q_SENSOR,
    REPO,
    REPO_SELECTOR,
    TERMINAL,
    Deployment,
    GraphQL,
    RunRecord,
    deployment,
    partition_statuses,
    postgres_password,
    process_env,
    runs,
    wait_location_loaded,
    wait_until,
    with_events,
)
from test_support.sandbox_env import token

pytestmark = [pytest.mark.integration, pytest.mark.mongo_server, pytest.mark.heavy(minutes=3.5)]

DAYS = 3
TOKENS_PER_DAY = 6
HOLD_FILE = "telegram-held"
"""While this file (in the test's directory) exists, every scenario token's Telegram URL goes
unanswered (the sandbox's `held_while`): the backfill's runs are mid-call from their first call until
the upgrade kills them, however slow or fast the machine; the test removes it once they are dead, so
the runs after the upgrade are answered at once."""
MAX_RUNTIME_S = 60
"""Every run the upgrade kills (the backfill's, and a retry run the retry sensor may have launched
meanwhile) is given this `dagster/max_runtime` once the daemon is stopped (the jobs' own is the 2 h
the health checks allow for, too long to wait for in a test), so run monitoring fails each dead run
the same way after the upgrade, and none before it, however long the steps before took."""
RECOVERY_TIMEOUT_S = 600.0
WORKSPACE = DEPLOY_DIR / "workspace.yaml"


def cli(args: list[str], env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, env=process_env(env), cwd=REPO, capture_output=True, text=True, timeout=timeout,
                          check=False)


def social_recording(command: str, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return cli([sys.executable, "-m", "social_recording", command, *args], env)


def scenario(today: datetime, hold: Path) -> tuple[list[str], list[dict[str, object]], dict[str, dict[str, object]],
                                                  set[str]]:
    days = [(today - timedelta(days=3 + i)).date().isoformat() for i in range(DAYS)]
    tokens = [token(f"RhU{d}{i}token", f"{day}T{8 + i:02d}:00:00Z", telegram=f"https://t.me/upgrade_d{d}t{i}")
              for d, day in enumerate(days) for i in range(TOKENS_PER_DAY)]
    urls = {to_canonical(str(t["telegram"])) for t in tokens}
    return days, tokens, {u: {"held_while": str(hold)} for u in urls}, urls


def shorten_max_runtime(home: Path, pg_env: Mapping[str, str], monkeypatch: pytest.MonkeyPatch,
                        run_ids: list[str]) -> None:
    """Give `run_ids` the test's short `dagster/max_runtime`, on the deployment's instance."""
    if not run_ids:
        return
    for key, value in pg_env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("DAGSTER_POSTGRES_PASSWORD", postgres_password(pg_env))
    with DagsterInstance.from_config(str(home)) as instance:
        for run_id in run_ids:
            instance.add_run_tags(run_id, {MAX_RUNTIME_TAG: str(MAX_RUNTIME_S)})


def in_progress(gql: GraphQL) -> list[RunRecord]:
    return [r for r in runs(gql, {}) if r.status not in TERMINAL]


def store_recorded(store_url: str, tokens: list[dict[str, object]]) -> dict[str, str] | None:
    """url -> status of every scenario token's element once every token is stored and none is left
    pending or waiting for a retry; None before."""
    store = open_store(store_url)
    try:
        addresses = [str(t["address"]) for t in tokens]
        if len(store.find_existing_addresses(addresses)) < len(addresses):
            return None
        statuses = {el.url: el.status.value for a in addresses if (doc := store.find_token(a))
                    for el in doc.social_urls}
    finally:
        store.close()
    waiting = {FetchStatus.PENDING.value, FetchStatus.ERROR.value}
    return None if waiting & set(statuses.values()) else statuses


def stop_for_upgrade(dep: Deployment) -> None:
    """`docker compose up -d` recreating the containers with runs still going past the grace period:
    the code server's container, with every run process in it, is killed; the daemon and the
    webserver stop."""
    user_code = dep.services["user_code"]
    assert user_code.proc is not None
    os.killpg(user_code.proc.pid, signal.SIGKILL)
    user_code.proc.wait(timeout=30)
    dep.services["daemon"].stop()
    dep.services["webserver"].stop()


def start_after_upgrade(dep: Deployment) -> None:
    dep.services["user_code"].start()
    dep.wait_healthy("user_code")
    dep.services["daemon"].start()
    dep.services["webserver"].start()
    dep.wait_healthy("webserver")
    dep.wait_healthy("daemon")


def test_upgrade_with_runs_in_flight_loses_nothing_and_leaves_no_run_started(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hold = tmp_path / HOLD_FILE
    hold.touch()
    days, tokens, targets, urls = scenario(datetime.now(UTC), hold)
    with deployment(tmp_path, tokens, datetime.fromisoformat(days[-1]).date(), targets) as dep:
        gql = GraphQL(dep.cfg.webserver_port)
        try:
            wait_location_loaded(gql, dep)
            code_env, daemon_env = dep.services["user_code"].env, dep.services["daemon"].env

            # The previous release at work: a backfill whose runs are mid-call.
            launched = gql(M_BACKFILL, params={
                "selector": {"partitionSetName": f"{BACKFILL_JOB}_partition_set", "repositorySelector": REPO_SELECTOR},
                "partitionNames": days,
            })["launchPartitionBackfill"]
            assert launched["__typename"] == "LaunchBackfillSuccess", launched

            def recording() -> list[RunRecord] | None:
                found = [with_events(gql, r) for r in runs(gql, {"tags": [{"key": "dagster/backfill",
                                                                          "value": launched["backfillId"]}]})]
                assert not [r.run_id for r in found if r.status in TERMINAL], "a run ended before the upgrade"
                started = [r for r in found if r.status == "STARTED"]
                busy = any(any(m.startswith("record_window ") for m in r.messages) for r in started)
                return started if len(started) == DAYS and busy else None

            in_flight = wait_until("every backfill run started, one mid-recording", recording, dep, 180)

            # 1. drain: schedules and sensors stop at once; the runs do not finish within its timeout.
            # Again until the stop held within the timeout (a sensor's tick in flight at the stop sets
            # it running again, and on a loaded machine that tick may outlast 3 s): drain then names the
            # runs still going, which the hold keeps going.
            attempts: list[subprocess.CompletedProcess[str]] = []

            def drain() -> subprocess.CompletedProcess[str] | None:
                attempts.append(social_recording("drain", "--timeout", "3", "--poll", "1", "--workspace",
                                                 str(WORKSPACE), env=daemon_env))
                return attempts[-1] if "still going" in attempts[-1].stderr else None

            drained = wait_until("drain to hold every schedule and sensor stopped", drain, dep, 300)
            assert all(a.returncode == 1 for a in attempts), [a.stdout + a.stderr for a in attempts]
            assert "sensor token_flow_sensor: stopped" in attempts[0].stdout
            assert "sensor reconcile_catch_up_sensor: stopped" in attempts[0].stdout
            assert in_flight
            sensor = gql(Q_SENSOR, selector={**REPO_SELECTOR, "sensorName": "token_flow_sensor"})["sensorOrError"]
            assert sensor["sensorState"]["status"] == "STOPPED", (drained.stdout, drained.stderr[-3000:])

            # 2. The upgrade, with those runs still in flight.
            killed = runs(gql, {"statuses": ["STARTED"]})
            assert {r.run_id for r in in_flight} <= {r.run_id for r in killed}, "a held run ended before the upgrade"
            for run in killed:
                assert run.run_id in drained.stderr  # drain named each run still going
            upgrade_started = time.monotonic()
            stop_for_upgrade(dep)
            shorten_max_runtime(dep.cfg.dagster_home, dep.cfg.postgres, monkeypatch, [r.run_id for r in killed])
            hold.unlink()  # the held calls died with their runs; from now on the sandbox answers at once
            store_to_previous_schema(dep.cfg.store_url)
            removed = instance_before_data_migrations(dep.cfg.postgres)
            assert schema_version_of(dep.cfg.store_url) == PREVIOUS_MONGO_SCHEMA and removed

            migrate_started = time.monotonic()
            # As compose's migrate service runs it: the entry point reads Dagster's password from its file.
            dagster_migrate = cli(["sh", str(DEPLOY_DIR / "entrypoint.sh"), "dagster", "instance", "migrate"],
                                  daemon_env)
            assert dagster_migrate.returncode == 0, dagster_migrate.stderr
            dagster_migrate_s = time.monotonic() - migrate_started
            store_migrate = social_recording("migrate", env=code_env)
            assert store_migrate.returncode == 0, store_migrate.stderr
            migrate_s = time.monotonic() - migrate_started
            assert f"migrated from schema version {PREVIOUS_MONGO_SCHEMA} to {SCHEMA_VERSION}" in store_migrate.stdout
            assert data_migration_markers(dep.cfg.postgres) >= removed
            store = open_store(dep.cfg.store_url)
            try:  # the counters the migration built from the data match a recount (nothing writes now)
                assert not store.reconcile_counts().differences
            finally:
                store.close()
            again = social_recording("migrate", env=code_env)
            assert again.returncode == 0 and "nothing to do" in again.stdout, again.stdout + again.stderr

            start_after_upgrade(dep)
            upgrade_s = time.monotonic() - upgrade_started
            resumed = social_recording("resume", "--workspace", str(WORKSPACE), env=daemon_env)
            assert resumed.returncode == 0, resumed.stderr
            assert "sensor reconcile_catch_up_sensor: running (its default)" in resumed.stdout

            # 3. Self-healing: the dead runs are failed, their work recorded, nothing left in progress.
            def recovered() -> dict[str, str] | None:
                if in_progress(gql):
                    return None
                if set(partition_statuses(gql).get(d) for d in days) != {"SUCCESS"}:
                    return None
                return store_recorded(dep.cfg.store_url, tokens)

            statuses = wait_until("the upgrade's lost work recorded", recovered, dep, RECOVERY_TIMEOUT_S, every=2)
            recovered_s = time.monotonic() - upgrade_started

            assert set(statuses) == urls and set(statuses.values()) == {"ok"}  # nothing lost
            for run in killed:
                (after,) = runs(gql, {"runIds": [run.run_id]})
                after = with_events(gql, after)
                assert after.status == "FAILURE", (after.status, after.messages[-5:])
                assert any("maximum runtime" in m for m in after.messages), after.messages[-5:]

            # 4. With nothing in flight, drain ends at once.
            drained = social_recording("drain", "--timeout", "60", "--workspace", str(WORKSPACE), env=daemon_env)
            assert drained.returncode == 0 and "drained" in drained.stdout, drained.stdout + drained.stderr
        finally:
            gql.close()
    line = (f"upgrade with {len(killed)} runs in flight: stop -> migrated -> services healthy {upgrade_s:.1f} s "
            f"(migrations {migrate_s:.1f} s: dagster instance migrate {dagster_migrate_s:.1f} s; load {os.getloadavg()[0]:.1f}); the killed runs failed at their max runtime and every token recorded "
            f"{recovered_s:.1f} s after the stop; lost: nothing ({len(statuses)} URLs ok)")
    print(line)
