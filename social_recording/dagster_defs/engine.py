"""Assemble the plain-Python engine from the typed resources of one run (the use cases know no Dagster).

`RecordingEngineResource` is what the recording stages take: one typed resource that depends on the
shared ones (store, locks, dedupe gate, graph writer, tracker, platforms, policy), so each stage
declares it once instead of listing seven resources and wiring them again.
"""

from dataclasses import dataclass

from dagster import ConfigurableResource, InitResourceContext, ResourceDependency
from pydantic import PrivateAttr

from social_recording.dagster_defs.resources import (
    DedupeGateResource,
    GraphWriterResource,
    LockManagerResource,
    PlatformsResource,
    RecordingPolicyResource,
    StoreResource,
    TrackerResource,
)
from social_recording.recording.processor import TokenProcessor
from social_recording.recording.reconcile import ReconcileService
from social_recording.recording.retry import RetryService
from social_recording.recording.url_recorder import UrlRecorder


@dataclass(frozen=True)
class Engine:
    processor: TokenProcessor
    reconcile: ReconcileService
    retry: RetryService


def build_engine(
    *,
    store: StoreResource,
    locks: LockManagerResource,
    dedupe_gate: DedupeGateResource,
    graph_writer: GraphWriterResource,
    tracker: TrackerResource,
    platforms: PlatformsResource,
    policy: RecordingPolicyResource,
) -> Engine:
    """Wire one op's engine from the run's resources (cheap: every connection and client is the
    resource's, built once per run process). The same URL recorder serves every path, so per-URL
    results are recorded the same way whichever op runs."""
    the_store = store.get()
    the_locks = locks.get()
    recorder = UrlRecorder(
        the_store,
        the_locks,
        dedupe_gate.get(),
        graph_writer.get(),
        platforms.registry(),
        enable_paid=policy.enable_paid,
        max_attempts=policy.max_attempts,
    )
    processor = TokenProcessor(the_store, the_locks, tracker.profile_reader(), recorder)
    return Engine(
        processor=processor,
        reconcile=ReconcileService(the_store, the_locks, tracker.client(), processor),
        retry=RetryService(the_store, the_locks, processor),
    )


class RecordingEngineResource(ConfigurableResource):
    """The recording engine of a run: the use cases (token processor, reconcile, retry) wired from the
    shared resources, built once per run process."""

    store: ResourceDependency[StoreResource]
    locks: ResourceDependency[LockManagerResource]
    dedupe_gate: ResourceDependency[DedupeGateResource]
    graph_writer: ResourceDependency[GraphWriterResource]
    tracker: ResourceDependency[TrackerResource]
    platforms: ResourceDependency[PlatformsResource]
    policy: ResourceDependency[RecordingPolicyResource]

    _engine: Engine | None = PrivateAttr(default=None)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        self.get()

    def get(self) -> Engine:
        if self._engine is None:
            self._engine = build_engine(
                store=self.store, locks=self.locks, dedupe_gate=self.dedupe_gate, graph_writer=self.graph_writer,
                tracker=self.tracker, platforms=self.platforms, policy=self.policy,
            )
        return self._engine
