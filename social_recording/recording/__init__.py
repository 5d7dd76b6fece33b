"""The use cases: plain Python over the store and lock protocols, no Dagster."""

from social_recording.recording.candidates import CandidateSet, parse_retry_statuses, retry_query
from social_recording.recording.outcomes import EngineOutcome, TokenOutcome, TokenStatus, UrlOutcome
from social_recording.recording.processor import TokenProcessor
from social_recording.recording.reconcile import (
    ReconcileOutcome,
    ReconcileService,
    ReconcileWindow,
    WindowTarget,
)
from social_recording.recording.retry import RetryOutcome, RetrySelection, RetryService
from social_recording.recording.run_state import RunState, RunSummary
from social_recording.recording.sources import ProfileSource, RangeToken, TokenRangeSource
from social_recording.recording.url_recorder import URL_LOCK_TTL_S, URL_LOCK_WAIT_S, UrlRecorder
from social_recording.recording.writer import GraphWriter

__all__ = [
    "URL_LOCK_TTL_S",
    "URL_LOCK_WAIT_S",
    "CandidateSet",
    "EngineOutcome",
    "GraphWriter",
    "ProfileSource",
    "RangeToken",
    "ReconcileOutcome",
    "ReconcileService",
    "ReconcileWindow",
    "RetryOutcome",
    "RetrySelection",
    "RetryService",
    "RunState",
    "RunSummary",
    "TokenOutcome",
    "TokenProcessor",
    "TokenRangeSource",
    "TokenStatus",
    "UrlOutcome",
    "UrlRecorder",
    "WindowTarget",
    "parse_retry_statuses",
    "retry_query",
]
