"""backup and restore, natively: the demo scenario recorded into the deployment's stores (the Mongo
store on FerretDB, Dagster's instance on PostgreSQL with deploy/dagster.yaml), dumped with
`python -m social_recording backup`, both stores wiped (the database dropped), loaded back with
`restore`: `status` and the Dagster run history read the same as before. On the SQLite store, the
same round trip, and a restore never overwrites a store that holds data without --force."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg2
import pytest
from dagster import DagsterInstance, RunsFilter

from social_recording.dagster_defs.definitions_builder import build_definitions
from social_recording.sandbox.scenario import DEMO_SCENARIO_PATH, load_scenario
from social_recording.settings import load_settings
from social_recording.status import read_report, render_text
from social_recording.store import open_store
from test_support.mongo_server import MongoServer
from test_support.rehearsal import INSTANCE_CONFIG, postgres_database, process_env

pytestmark = pytest.mark.heavy

REPO = Path(__file__).resolve().parents[2]
NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
"""`status` is read at one fixed moment, so two readings compare line by line."""
QUIET = {"loggers": {"console": {"config": {"log_level": "ERROR"}}}}
TIMINGS: list[str] = []


def cli(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "social_recording", *args], env=process_env(env), cwd=REPO,
                          capture_output=True, text=True, timeout=600, check=False)


def status_text(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> str:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return render_text(read_report(load_settings(), now=NOW))


def pg_password(env: dict[str, str]) -> str:
    """The Dagster role's password, given as a value or as a file (as compose's secret)."""
    if env.get("DAGSTER_POSTGRES_PASSWORD_FILE"):
        return Path(env["DAGSTER_POSTGRES_PASSWORD_FILE"]).read_text().strip()
    return env["DAGSTER_POSTGRES_PASSWORD"]


def wipe_postgres(env: dict[str, str]) -> None:
    """Every table and sequence of Dagster's database dropped, as Dagster's own role (which owns them)."""
    conn = psycopg2.connect(host=env["DAGSTER_POSTGRES_HOST"], port=env["DAGSTER_POSTGRES_PORT"],
                            user=env["DAGSTER_POSTGRES_USER"], password=pg_password(env),
                            dbname=env["DAGSTER_POSTGRES_DB"], connect_timeout=5)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
            for (table,) in cur.fetchall():
                cur.execute(f'DROP TABLE IF EXISTS "{table}" CASCADE')
            cur.execute("SELECT count(*) FROM information_schema.tables WHERE table_schema = 'public'")
            assert cur.fetchone() == (0,)
    finally:
        conn.close()


def run_history(instance: DagsterInstance) -> list[tuple[Any, ...]]:
    """Every run with its status, tags, times and its event log (type and message of each event)."""
    out = []
    for record in instance.get_run_records(RunsFilter(), ascending=True):
        run = record.dagster_run
        events = [(e.dagster_event_type, e.user_message) for e in instance.all_logs(run.run_id)]
        out.append((run.run_id, run.job_name, run.status, dict(run.tags), record.start_time, record.end_time, events))
    return out


def record_demo(env: dict[str, str], home: Path, monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """The demo's backfill (every day of the bundled scenario) and one retry, in-process on the instance."""
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    if env.get("DAGSTER_POSTGRES_PASSWORD_FILE"):  # this process opens the instance too
        monkeypatch.setenv("DAGSTER_POSTGRES_PASSWORD", pg_password(env))
    scenario = load_scenario(DEMO_SCENARIO_PATH)
    days = sorted({t.last_transfer_at.date() for t in scenario.tokens})
    defs = build_definitions(load_settings().model_copy(update={"partition_start": days[0]}))
    with DagsterInstance.from_config(str(home)) as instance:
        for day in days:
            assert defs.resolve_job_def("reconcile_job").execute_in_process(
                partition_key=day.isoformat(), instance=instance, run_config=QUIET).success
        defs.resolve_job_def("retry_job").execute_in_process(
            instance=instance, run_config={**QUIET, "ops": {"retry_urls": {"config": {"min_interval_minutes": 0}}}})
        return run_history(instance)


@pytest.fixture()
def deployment_env(tmp_path: Path, mongo_server: MongoServer) -> Iterator[dict[str, str]]:
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(INSTANCE_CONFIG, home / "dagster.yaml")
    with postgres_database() as pg, mongo_server.scratch_db() as db:
        yield {**pg, "DAGSTER_HOME": str(home), "SOCIAL_RECORDING_STORE_URL": mongo_server.with_db(db),
               "SOCIAL_RECORDING_LOCK_URL": f"sqlite:///{tmp_path / 'locks.db'}",
               "SOCIAL_RECORDING_UPSTREAM": "sandbox", "SOCIAL_RECORDING_ENABLE_PAID": "true",
               "SOCIAL_RECORDING_SANDBOX_LEDGER": str(tmp_path / "ledger.jsonl")}


@pytest.mark.integration
def test_backup_wipe_restore_gives_the_same_status_and_run_history(
        deployment_env: dict[str, str], tmp_path: Path, mongo_server: MongoServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    env = deployment_env
    home = Path(env["DAGSTER_HOME"])
    history = record_demo(env, home, monkeypatch)
    # The restore recounts the store's counters from its documents; on FerretDB the runs' racing
    # counter moves lose increments (INC_NOT_ATOMIC, a difference from MongoDB, where this repairs
    # nothing), so the figures to compare are the store's own, repaired before the backup.
    store = open_store(env["SOCIAL_RECORDING_STORE_URL"])
    try:
        assert not store.reconcile_counts().unrepaired
    finally:
        store.close()
    before = status_text(env, monkeypatch)
    assert len(history) == 9 and "0 tokens" not in before

    started = time.monotonic()
    done = cli("backup", str(tmp_path / "backup"), env=env)
    took_backup = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert "dagster.pgdump" in done.stdout and pg_password(env) not in done.stdout + done.stderr

    # Wipe: the store's database and Dagster's database are gone.
    store_db = env["SOCIAL_RECORDING_STORE_URL"].rsplit("/", 1)[1]
    client = mongo_server.client()
    try:
        client.drop_database(store_db)
    finally:
        client.close()
    wipe_postgres(env)

    started = time.monotonic()
    done = cli("restore", str(tmp_path / "backup"), env=env)
    took_restore = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    TIMINGS.append(f"demo store on FerretDB + PostgreSQL: backup {took_backup:.1f} s, restore {took_restore:.1f} s "
                   "(CLI wall time)")
    print(TIMINGS[-1])

    assert status_text(env, monkeypatch) == before
    with DagsterInstance.from_config(str(home)) as instance:
        assert run_history(instance) == history

    # A second restore onto the restored stores is refused and changes nothing; --force replaces them.
    again = cli("restore", str(tmp_path / "backup"), env=env)
    assert again.returncode == 2 and "--force" in again.stderr, again.stderr
    forced = cli("restore", "--force", str(tmp_path / "backup"), env=env)
    assert forced.returncode == 0, forced.stderr
    assert status_text(env, monkeypatch) == before
    with DagsterInstance.from_config(str(home)) as instance:
        assert run_history(instance) == history


def test_sqlite_store_round_trip_and_no_overwrite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    source = tmp_path / "store.db"
    env = {"DAGSTER_HOME": str(home), "SOCIAL_RECORDING_STORE_URL": f"sqlite:///{source}",
           "SOCIAL_RECORDING_UPSTREAM": "sandbox", "SOCIAL_RECORDING_ENABLE_PAID": "true",
           "SOCIAL_RECORDING_SANDBOX_LEDGER": str(tmp_path / "ledger.jsonl")}
    record_demo(env, home, monkeypatch)
    before = status_text(env, monkeypatch)
    done = cli("backup", str(tmp_path / "backup"), env=env)
    assert done.returncode == 0, done.stderr
    assert "not on PostgreSQL" in done.stdout
    assert cli("backup", str(tmp_path / "backup"), env=env).returncode == 1  # never into a used directory

    restored = {**env, "SOCIAL_RECORDING_STORE_URL": f"sqlite:///{tmp_path / 'restored' / 'store.db'}"}
    done = cli("restore", str(tmp_path / "backup"), env=restored)
    assert done.returncode == 0, done.stderr
    assert status_text(restored, monkeypatch).split("\n", 1)[1] == before.split("\n", 1)[1]

    # The source store holds data: restoring onto it is refused, and it is left as it was.
    mtime = os.stat(source).st_mtime_ns
    refused = cli("restore", str(tmp_path / "backup"), env=env)
    assert refused.returncode == 2 and "holds data" in refused.stderr and "--force" in refused.stderr
    assert os.stat(source).st_mtime_ns == mtime
    # A directory that is no backup is named as such.
    missing = cli("restore", str(tmp_path), env=restored)
    assert missing.returncode == 1 and "manifest.json" in missing.stderr
