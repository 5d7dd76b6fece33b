"""Assemble the plain-Python engine from the typed resources of one run (the use cases know no Dagster).

`RecordingEngineResource` is what the recording stages take: one typed resource that depends on the
shared ones (store, locks, tracker, platforms, policy), so each stage
declares it once instead of listing five resources and wiring them again.
"""

from dagster import ConfigurableResource, InitResourceContext, ResourceDependency
from pydantic import PrivateAttr

from social_recording.dagster_defs.resources import (
    LockManagerResource,
    PlatformsResource,
    RecordingPolicyResource,
    StoreResource,
    TrackerResource,
)
from social_recording.recording.engine import Engine
from social_recording.recording.engine import build_engine as build_recording_engine


def build_engine(
    *,
    store: StoreResource,
    locks: LockManagerResource,
    tracker: TrackerResource,
    platforms: PlatformsResource,
    policy: RecordingPolicyResource,
) -> Engine:
    """Wire one op's engine from the run's resources (cheap: every connection and client is the
    resource's, built once per run process)."""
    reader = tracker.profile_reader()
    return build_recording_engine(
        store.get(), locks.get(), platforms.registry(), reader, tracker=tracker.client(),
        enable_paid=policy.enable_paid, max_attempts=policy.max_attempts,
    )


class RecordingEngineResource(ConfigurableResource):
    """The recording engine of a run: the use cases (token processor, reconcile, retry) wired from the
    shared resources, built once per run process."""

    store: ResourceDependency[StoreResource]
    locks: ResourceDependency[LockManagerResource]
    tracker: ResourceDependency[TrackerResource]
    platforms: ResourceDependency[PlatformsResource]
    policy: ResourceDependency[RecordingPolicyResource]

    _engine: Engine | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        self.get()

    def get(self) -> Engine:
        if self._engine is None:
            self._engine = build_engine(
                store=self.store, locks=self.locks,
                tracker=self.tracker, platforms=self.platforms, policy=self.policy,
            )
        return self._engine
