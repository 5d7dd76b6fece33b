"""Build the code location from settings: resources per environment, jobs, schedule, sensors.

A value that is set in the environment is handed to Dagster as an `EnvVar` (so the UI shows the
variable's name, never a password inside a URL or an API key); defaults are plain values.
"""

from __future__ import annotations

import os
from typing import Any

from dagster import Definitions, EnvVar

from social_recording.dagster_defs.jobs import live_tokens_job, make_reconcile_job, retry_job
from social_recording.dagster_defs.resources import (
    DedupeGateResource,
    GraphWriterResource,
    LockManagerResource,
    PlatformsResource,
    RecordingPolicyResource,
    StoreResource,
    TrackerResource,
    UpstreamResource,
)
from social_recording.dagster_defs.sensors import (
    default_status,
    make_retry_candidates_sensor,
    make_retry_schedule,
    make_token_flow_sensor,
)
from social_recording.settings import PREFIX, Settings


def _env_or(name: str, default: Any) -> Any:
    """EnvVar(name) when the variable is set, else the default value."""
    return EnvVar(name) if os.environ.get(name) else default


def _secret(name: str) -> Any:
    return EnvVar(name) if os.environ.get(name) else None


def build_resources(settings: Settings) -> dict[str, Any]:
    store = StoreResource(store_url=_env_or(f"{PREFIX}STORE_URL", settings.store_url))
    locks = LockManagerResource(lock_url=_env_or(f"{PREFIX}LOCK_URL", settings.effective_lock_url))
    upstream = UpstreamResource(
        mode=settings.upstream,
        sandbox_scenario=str(settings.sandbox_scenario) if settings.sandbox_scenario else None,
        sandbox_ledger=str(settings.effective_ledger),
    )
    tracker = TrackerResource(
        upstream=upstream,
        tracker_url=settings.tracker_url,
        api_key=_secret(f"{PREFIX}TRACKER_API_KEY"),
        af_group_ids=list(settings.af_group_ids),
    )
    platforms = PlatformsResource(
        upstream=upstream,
        twitterapi_io_key=_secret("TWITTERAPI_IO_KEY"),
        apify_token=_secret("APIFY_TOKEN"),
        youtube_api_key=_secret("YOUTUBE_API_KEY"),
        github_token=_secret("GITHUB_TOKEN"),
        urlscan_api_key=_secret("URLSCAN_API_KEY"),
    )
    return {
        "store": store,
        "locks": locks,
        "dedupe_gate": DedupeGateResource(store=store),
        "graph_writer": GraphWriterResource(store=store),
        "upstream": upstream,
        "tracker": tracker,
        "platforms": platforms,
        "policy": RecordingPolicyResource(
            enable_paid=settings.enable_paid,
            max_attempts=settings.max_attempts,
            af_investor_threshold=settings.af_investor_threshold,
        ),
    }


def build_definitions(settings: Settings) -> Definitions:
    schedule_status, sensor_status = default_status(settings.env)
    reconcile_job = make_reconcile_job(settings.partition_start)
    return Definitions(
        jobs=[reconcile_job, retry_job, live_tokens_job],
        schedules=[make_retry_schedule(retry_job, schedule_status)],
        sensors=[
            make_retry_candidates_sensor(retry_job, sensor_status),
            make_token_flow_sensor(live_tokens_job, sensor_status),
        ],
        resources=build_resources(settings),
    )
