"""The code location loads, validates, and keeps secrets out of every repr; dagster.yaml's limits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from dagster import DagsterInstance, EnvVar

from social_recording.dagster_defs.resources import (
    LockManagerResource,
    PlatformsResource,
    StoreResource,
    TrackerResource,
    UpstreamResource,
)

REPO = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent

SECRETS = {
    "SOCIAL_RECORDING_STORE_URL": "mongodb://produser:Mongo-S3cret-pw@127.0.0.1:1/social",
    "SOCIAL_RECORDING_LOCK_URL": "redis://:Redis-S3cret-pw@127.0.0.1:1/0",
    "SOCIAL_RECORDING_TRACKER_API_KEY": "tracker-key-S3cret",
    "TWITTERAPI_IO_KEY": "twitterapi-key-S3cret",
    "APIFY_TOKEN": "apify-token-S3cret",
    "YOUTUBE_API_KEY": "youtube-key-S3cret",
    "GITHUB_TOKEN": "github-token-S3cret",
    "URLSCAN_API_KEY": "urlscan-key-S3cret",
}
SECRET_PARTS = ("S3cret",)

PROBE = r"""
import json, socket, time
connects = []
_orig_connect = socket.socket.connect
def _record(self, address, *a, **k):
    connects.append(repr(address))
    raise OSError("test: no connection allowed while loading the code location")
socket.socket.connect = _record
socket.create_connection = lambda address, *a, **k: _record(None, address)

started = time.monotonic()
from social_recording.definitions import defs
from social_recording.settings import get_settings
jobs = [defs.resolve_job_def(n).name for n in ("reconcile_job", "retry_job", "live_tokens_job")]
schedules = [defs.resolve_schedule_def("retry_schedule").name]
sensors = [defs.resolve_sensor_def(n).name for n in ("retry_candidates_sensor", "token_flow_sensor")]
partitions = defs.resolve_job_def("reconcile_job").partitions_def
elapsed = time.monotonic() - started
print(json.dumps({
    "elapsed": elapsed, "connects": connects, "jobs": jobs, "schedules": schedules, "sensors": sensors,
    "first_partition": partitions.get_first_partition_key(),
    "resources": {k: repr(v) for k, v in defs.resources.items()},
    "settings": repr(get_settings()),
}))
"""


def _clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("SOCIAL_RECORDING_") and k not in SECRETS and k != "DAGSTER_HOME"}
    home = tmp_path / "dagster_home"
    home.mkdir(exist_ok=True)
    env["DAGSTER_HOME"] = str(home)
    env.update(extra)
    return env


def test_dagster_definitions_validate_passes(tmp_path: Path) -> None:
    env = _clean_env(tmp_path, SOCIAL_RECORDING_STORE_URL=f"sqlite:///{tmp_path / 'store.db'}")
    proc = subprocess.run(
        [str(VENV_BIN / "dagster"), "definitions", "validate", "-m", "social_recording.definitions"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Validation successful" in proc.stdout + proc.stderr
    assert not (tmp_path / "store.db").exists()  # validating opens no store


def test_production_settings_load_without_connecting_and_without_secrets(tmp_path: Path) -> None:
    env = _clean_env(
        tmp_path,
        SOCIAL_RECORDING_UPSTREAM="live",
        SOCIAL_RECORDING_TRACKER_URL="https://tracker.internal.example",
        SOCIAL_RECORDING_AF_GROUP_IDS="af-1, af-2",
        SOCIAL_RECORDING_ENABLE_PAID="true",
        SOCIAL_RECORDING_ENV="prod",
        **SECRETS,
    )
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["connects"] == []  # nothing reached for Mongo, Redis or the tracker at import
    assert out["jobs"] == ["reconcile_job", "retry_job", "live_tokens_job"]
    assert out["sensors"] == ["retry_candidates_sensor", "token_flow_sensor"]
    everything = proc.stdout + proc.stderr
    for secret in (*SECRETS.values(), "Mongo-S3cret-pw", "Redis-S3cret-pw"):
        assert secret not in everything
    assert "S3cret" not in everything
    resources = out["resources"]
    assert "SOCIAL_RECORDING_STORE_URL" in resources["store"]
    assert "SOCIAL_RECORDING_LOCK_URL" in resources["locks"]
    assert "SOCIAL_RECORDING_TRACKER_API_KEY" in resources["tracker"]
    for name in ("TWITTERAPI_IO_KEY", "APIFY_TOKEN", "YOUTUBE_API_KEY", "GITHUB_TOKEN", "URLSCAN_API_KEY"):
        assert name in resources["platforms"]
    assert "UpstreamResource" in resources["upstream"] and "Sandbox" not in resources["upstream"]
    assert "af-2" in resources["tracker"]


def test_resolved_resources_mask_secrets_in_repr() -> None:
    """Inside a run the EnvVars are resolved to values; the reprs still never show them."""
    upstream = UpstreamResource()
    shown = " ".join(repr(r) for r in (
        StoreResource(store_url="mongodb://u:S3cret@db.internal/social"),
        LockManagerResource(lock_url="redis://:S3cret@redis.internal:6379/0"),
        TrackerResource(upstream=upstream, tracker_url="https://t.example", api_key="S3cret", af_group_ids=["g"]),
        PlatformsResource(upstream=upstream, key_variables=["TWITTERAPI_IO_KEY", "APIFY_TOKEN"]),
    ))
    assert "S3cret" not in shown
    assert "u:***@db.internal" in shown and "api_key='***'" in shown
    assert repr(StoreResource(store_url=EnvVar("SOCIAL_RECORDING_STORE_URL"))) == \
        "StoreResource(store_url='SOCIAL_RECORDING_STORE_URL')"


def test_dagster_yaml_limits_retry_runs_to_one_and_reconcile_partitions(tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text((REPO / "dagster.yaml").read_text())
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    instance = DagsterInstance.get()
    try:
        queue = instance.get_concurrency_config().run_queue_config
        assert queue is not None
        limits = {(lim["key"], lim.get("value")): lim["limit"] for lim in queue.tag_concurrency_limits}
        assert limits[("social_recording/job", "retry")] == 1
        assert 1 < limits[("social_recording/job", "reconcile")] <= (queue.max_concurrent_runs or 10)
        assert type(instance.run_coordinator).__name__ == "QueuedRunCoordinator"
        # The ops log one line per URL; forwarding the engine's logger too would duplicate them.
        python_logs = yaml.safe_load((REPO / "dagster.yaml").read_text()).get("python_logs") or {}
        assert "managed_python_loggers" not in python_logs
    finally:
        instance.dispose()


def test_jobs_carry_the_tags_the_limits_use() -> None:
    from social_recording.dagster_defs.job_kind import JOB_TAG
    from social_recording.dagster_defs.jobs.live import live_tokens_job
    from social_recording.dagster_defs.jobs.reconcile import make_reconcile_job
    from social_recording.dagster_defs.jobs.retry import retry_job
    from social_recording.settings import DEFAULT_PARTITION_START

    reconcile = make_reconcile_job(DEFAULT_PARTITION_START)
    assert reconcile.tags[JOB_TAG] == "reconcile" and retry_job.tags[JOB_TAG] == "retry"
    assert live_tokens_job.tags[JOB_TAG] == "live"
    partitions = reconcile.partitions_def
    assert partitions is not None and partitions.get_first_partition_key() == DEFAULT_PARTITION_START.isoformat()
    assert partitions.timezone == "UTC"  # type: ignore[attr-defined]


def test_every_job_has_a_max_runtime_so_no_run_stays_started_forever(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """Run monitoring fails a run STARTED past its `dagster/max_runtime` (the longest run the health
    checks allow for): with the default launcher, a run whose process died with its code server would
    otherwise stay STARTED; the upgrade rehearsal (social_recording_tests/operations) sees it happen."""
    from social_recording.recording.health import LONGEST_RUN
    from test_support.sandbox_env import make_env

    defs = make_env(tmp_path, monkeypatch, []).defs()
    jobs = [j for j in defs.resolve_all_job_defs() if not j.name.startswith("__")]
    assert {j.name for j in jobs} == {"reconcile_job", "retry_job", "live_tokens_job", "health_check_job",
                                      "housekeeping_job"}
    for job in jobs:
        if job.name == "health_check_job":  # an asset job: its runs take the instance's default
            continue
        assert job.tags["dagster/max_runtime"] == str(int(LONGEST_RUN.total_seconds())), job.name


def test_resources_are_built_once_shared_and_closed_after(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from dagster import build_resources

    from test_support.sandbox_env import make_env

    env = make_env(tmp_path, monkeypatch, [])
    with build_resources(env.resources()) as res:
        store = res.store.get()
        assert res.recording.store.get() is store
        assert res.recording.get().store is store and res.recording.get().recorder.store is store
        assert res.tracker.upstream.transport() is res.platforms.upstream.transport() is res.upstream.transport()
        assert res.tracker.client() is res.tracker.client()
        assert res.platforms.registry() is res.platforms.registry()
        held = [res.store, res.locks, res.tracker, res.platforms, res.upstream]
    assert held[0]._opened is None  # closed on teardown
    assert held[1]._opened is None and held[2]._client is None and held[3]._registry is None
    assert held[4]._transport is None
