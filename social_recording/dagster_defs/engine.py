"""The recording engine of a run, as one typed resource (the use cases know no Dagster).

`RecordingEngineResource` depends on the shared resources (store, locks, tracker, platforms, policy)
and hands them to `recording.engine.build_engine`, the one place the engine is wired, so every stage
declares one resource instead of listing five and wiring them again.
"""

from pathlib import Path

from dagster import ConfigurableResource, InitResourceContext, ResourceDependency
from pydantic import PrivateAttr

from social_recording.dagster_defs.resources import (
    LockManagerResource,
    PlatformsResource,
    RecordingPolicyResource,
    StoreResource,
    TrackerResource,
)
from social_recording.recording.answer_spool import AnswerSpool
from social_recording.recording.engine import Engine, build_engine


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
        """Cheap after the first call: every connection and client is the shared resources'."""
        if self._engine is None:
            self._engine = build_engine(
                self.store.get(), self.locks.get(), self.platforms.registry(), self.tracker.profile_reader(),
                tracker=self.tracker.client(), enable_paid=self.policy.enable_paid,
                max_attempts=self.policy.max_attempts, backoff=self.policy.backoff(),
                spend_budgets=self.platforms.budgets(),
                spool=AnswerSpool(Path(self.policy.spool_dir)) if self.policy.spool_dir else None,
            )
        return self._engine
