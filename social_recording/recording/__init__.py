"""The use cases (DESIGN §4–§7): plain Python over the store and lock protocols, no Dagster."""

from social_recording.recording.gate import DedupeGate
from social_recording.recording.processor import TokenOutcome, TokenProcessor, TokenStatus
from social_recording.recording.reconcile import ReconcileOutcome, ReconcileService
from social_recording.recording.retry import RetryOutcome, RetryService
from social_recording.recording.sources import ProfileSource, RangeToken, TokenRangeSource
from social_recording.recording.url_recorder import (
    URL_LOCK_TTL_S,
    URL_LOCK_WAIT_S,
    EngineOutcome,
    RunState,
    UrlOutcome,
    UrlRecorder,
)
from social_recording.recording.writer import GraphWriter

__all__ = [
    "URL_LOCK_TTL_S",
    "URL_LOCK_WAIT_S",
    "DedupeGate",
    "EngineOutcome",
    "GraphWriter",
    "ProfileSource",
    "RangeToken",
    "ReconcileOutcome",
    "ReconcileService",
    "RetryOutcome",
    "RetryService",
    "RunState",
    "TokenOutcome",
    "TokenProcessor",
    "TokenRangeSource",
    "TokenStatus",
    "UrlOutcome",
    "UrlRecorder",
]
