"""Assemble the plain-Python engine from the resources of one run (the use cases know no Dagster)."""

from dataclasses import dataclass
from typing import Any

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
    gate: DedupeGateResource,
    writer: GraphWriterResource,
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
        gate.get(),
        writer.get(),
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


ENGINE_RESOURCE_KEYS = frozenset(
    {"store", "locks", "dedupe_gate", "graph_writer", "tracker", "platforms", "policy"}
)
"""The run resources every op's engine is wired from (declared once, not per op signature)."""


def engine_for(context: Any) -> tuple[Engine, RecordingPolicyResource]:
    """The engine of one op from its context's resources (keys: ENGINE_RESOURCE_KEYS), and the
    policy resource the op reads its switches from."""
    r = context.resources
    policy: RecordingPolicyResource = r.policy
    engine = build_engine(
        store=r.store, locks=r.locks, gate=r.dedupe_gate, writer=r.graph_writer,
        tracker=r.tracker, platforms=r.platforms, policy=policy,
    )
    return engine, policy
