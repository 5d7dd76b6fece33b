"""The run process holds one PostgreSQL connection for its event writes (docs/architecture.md, "The
run log"): a run of per-URL events must not open a connection per event. On the local PostgreSQL,
with the production instance file (deploy/dagster.yaml)."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

import pytest
from dagster import DagsterInstance, job, op
from sqlalchemy import event

from social_recording.dagster_defs.run_log import hold_event_connection
from test_support.postgres_server import admin_params, create_database, drop_database

REPO = Path(__file__).resolve().parents[2]
EVENTS = 30
CONNECTS: dict[str, int] = {}


def _write_events(context, held: bool) -> None:  # type: ignore[no-untyped-def]
    if held:
        hold_event_connection(context.instance)
    engine = context.instance.event_log_storage._engine  # noqa: SLF001 - what the test looks at
    seen = {"n": 0}
    event.listen(engine, "connect", lambda *_: seen.__setitem__("n", seen["n"] + 1))
    for i in range(EVENTS):
        context.log.info(f"url_outcome status=ok n={i}")
    CONNECTS["held" if held else "default"] = seen["n"]


@op
def held_op(context) -> None:  # type: ignore[no-untyped-def]
    _write_events(context, True)


@op
def default_op(context) -> None:  # type: ignore[no-untyped-def]
    _write_events(context, False)


@job
def held_job() -> None:
    held_op()


@job
def default_job() -> None:
    default_op()


@pytest.fixture()
def postgres_instance(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> DagsterInstance:
    database = f"sr_runlog_{uuid.uuid4().hex[:10]}"
    create_database(database)
    admin = admin_params()
    for key, value in {"HOST": admin["host"], "PORT": admin["port"], "USER": admin["user"],
                       "PASSWORD": admin["password"], "DB": database}.items():
        monkeypatch.setenv(f"DAGSTER_POSTGRES_{key}", str(value))
    shutil.copy(REPO / "deploy" / "dagster.yaml", tmp_path / "dagster.yaml")
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    try:
        with DagsterInstance.get() as instance:
            yield instance  # type: ignore[misc]
    finally:
        drop_database(database)


def test_a_run_writes_its_events_on_one_held_connection(postgres_instance: DagsterInstance) -> None:
    assert os.environ["DAGSTER_HOME"]
    default = default_job.execute_in_process(instance=postgres_instance)
    assert default.success and CONNECTS["default"] == EVENTS  # Dagster's default: a connection per event
    held = held_job.execute_in_process(instance=postgres_instance)
    assert held.success and CONNECTS["held"] <= 1
    logged = [e for e in postgres_instance.all_logs(held.run_id) if e.user_message.startswith("url_outcome ")]
    assert len(logged) == EVENTS  # every event stored, in order
    assert [e.user_message.split("n=")[1] for e in logged] == [str(i) for i in range(EVENTS)]
