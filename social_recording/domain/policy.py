"""The shared retry policy: one place decides final statuses, the attempt budget and the back-off."""

from __future__ import annotations

from datetime import datetime, timedelta

from social_recording.domain.status import ABSORBING, FetchStatus

DEFAULT_MAX_ATTEMPTS = 5
"""Calls a failing URL may cost in total, across every token holding it, before it is `exhausted`."""

DEFAULT_AF_INVESTOR_THRESHOLD = 3
"""Alpha-finder investors who must have bought a token before it is recorded (the reconcile's floor)."""

DEFAULT_MIN_INTERVAL_MINUTES = 60
DEFAULT_MIN_INTERVAL = timedelta(minutes=DEFAULT_MIN_INTERVAL_MINUTES)
"""The back-off between two recordings of one element, and between two calls of one URL: the live
path, the retry job and the sensor all measure it the same way, from the last recording."""


DEFAULT_MAX_EXHAUSTED_PER_HOUR = 25
"""Elements allowed to become `exhausted` per hour before the growth check warns (configurable with
SOCIAL_RECORDING_MAX_EXHAUSTED_PER_HOUR). A dead link exhausts after five calls spread over hours,
so a steady trickle is normal; a burst is a provider outage or a bug spending budgets."""


def resolve_final_status(
    current_attempts: int,
    status: FetchStatus,
    attempted: bool,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
) -> FetchStatus:
    """Decide the status to store after one invocation.

    1. absorbing -> unchanged; 2. retryable and no external call -> unchanged (why unsupported and
    skipped_paid never exhaust); 3. attempts + 1 >= max_attempts -> exhausted.
    """
    if max_attempts < 1:
        raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
    if current_attempts < 0:
        raise ValueError(f"current_attempts must be >= 0, got {current_attempts}")
    if status in ABSORBING:
        return status
    if not attempted:
        return status
    if current_attempts + 1 >= max_attempts:
        return FetchStatus.EXHAUSTED
    return status


def backoff_passed(attempted_at: datetime | None, now: datetime, min_interval: timedelta) -> bool:
    """True when a URL may be called again: never attempted (zero-call paths), or older than the interval."""
    if attempted_at is None:
        return True
    return now - attempted_at >= min_interval
