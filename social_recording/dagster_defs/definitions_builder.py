"""Build the code location from settings: the resources (the sandbox or the real upstream, chosen
here and nowhere else), the recorded data as assets, and the jobs (one module each in `jobs/`, with
their schedules and sensors). Secrets reach Dagster as `EnvVar`s or variable names, never values;
nothing connects here.
"""

import os
from typing import Any

from dagster import Definitions, EnvVar

from social_recording.dagster_defs.assets import ASSET_SPECS
from social_recording.dagster_defs.engine import RecordingEngineResource
from social_recording.dagster_defs.jobs import health, housekeeping, live, reconcile, retry
from social_recording.dagster_defs.recovery import make_stranded_runs_sensor
from social_recording.dagster_defs.resources import (
    LockManagerResource,
    PlatformsResource,
    RecordingPolicyResource,
    StoreResource,
    TrackerResource,
    UpstreamResource,
)
from social_recording.dagster_defs.sandbox_upstream import SandboxUpstreamResource
from social_recording.dagster_defs.spend import PROVIDER_SPEND_SPEC
from social_recording.dagster_defs.stages import default_status
from social_recording.settings import PREFIX, Settings


def _env_or(name: str, value: Any) -> Any:
    """EnvVar(name) when the variable is set (non-empty), else the (default) value itself."""
    return EnvVar(name) if os.environ.get(name, "").strip() else value


def _secret(name: str) -> Any:
    return EnvVar(name) if os.environ.get(name, "").strip() else None


def upstream_resource(settings: Settings) -> UpstreamResource:
    """The one place that chooses between the real internet and the sandbox: two resources answering
    the same questions (transport, DNS, waits, rates, keys, tracker, ledger)."""
    if settings.upstream == "sandbox":
        return SandboxUpstreamResource(
            sandbox_scenario=str(settings.effective_scenario), sandbox_ledger=str(settings.effective_ledger)
        )
    return UpstreamResource()


def build_resources(settings: Settings) -> dict[str, Any]:
    """The top-level resources. Each is a partial resource with every value given
    (`configure_at_launch`), so that the resources depending on another one (the gate and the writer
    on the store, the tracker and the platforms on the upstream, the recording engine on all of them)
    share the one initialised instance instead of building their own connections."""
    store = StoreResource.configure_at_launch(store_url=_env_or(f"{PREFIX}STORE_URL", settings.store_url))
    chosen = upstream_resource(settings)
    upstream = type(chosen).configure_at_launch(**chosen.model_dump(exclude_unset=True))
    locks = LockManagerResource.configure_at_launch(
        lock_url=_env_or(f"{PREFIX}LOCK_URL", settings.effective_lock_url)
    )
    tracker = TrackerResource.configure_at_launch(
        upstream=upstream,
        tracker_url=settings.tracker_url,
        api_key=_secret(f"{PREFIX}TRACKER_API_KEY"),
        af_group_ids=list(settings.af_group_ids),
    )
    platforms = PlatformsResource.configure_at_launch(
        upstream=upstream,
        key_variables=sorted(settings.provider_keys),
        rate_limit_url=_env_or(f"{PREFIX}LOCK_URL", settings.effective_lock_url),
        rate_limits=dict(settings.rate_limits),
        spend_budgets=dict(settings.spend_budgets),
    )
    policy = RecordingPolicyResource.configure_at_launch(
        enable_paid=settings.enable_paid,
        max_attempts=settings.max_attempts,
        backoff_growth=settings.backoff_growth,
        backoff_max_minutes=settings.backoff_max_minutes,
        af_investor_threshold=settings.af_investor_threshold,
        max_exhausted_per_hour=settings.max_exhausted_per_hour,
        spool_dir=str(settings.effective_spool_dir),
    )
    return {
        "store": store,
        "locks": locks,
        "upstream": upstream,
        "tracker": tracker,
        "platforms": platforms,
        "policy": policy,
        "recording": RecordingEngineResource(
            store=store, locks=locks,
            tracker=tracker, platforms=platforms, policy=policy,
        ),
    }


def build_definitions(settings: Settings) -> Definitions:
    """The code location: the recorded data as assets, the resources, and each job's own definitions
    (its job, schedule, sensors and checks, from its module in `jobs/`)."""
    _, sensor_status = default_status(settings.env)
    return Definitions.merge(
        Definitions(
            assets=[*ASSET_SPECS, PROVIDER_SPEND_SPEC],
            sensors=[make_stranded_runs_sensor(sensor_status)],
            resources=build_resources(settings),
        ),
        reconcile.definitions(settings),
        retry.definitions(settings),
        live.definitions(settings),
        health.definitions(settings),
        housekeeping.definitions(settings),
    )
