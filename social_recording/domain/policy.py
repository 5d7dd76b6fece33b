"""The shared retry policy: one place decides final statuses, the attempt budget and the back-off
(when an element is next due: docs/architecture.md, "Back-off: one due time")."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from social_recording.domain.status import ABSORBING, FetchStatus

DEFAULT_MAX_ATTEMPTS = 5
"""Calls a failing URL may cost in total, across every token holding it, before it is `exhausted`."""

DEFAULT_AF_INVESTOR_THRESHOLD = 3
"""Alpha-finder investors who must have bought a token before it is recorded (the reconcile's floor)."""

DEFAULT_MIN_INTERVAL_MINUTES = 60
DEFAULT_MIN_INTERVAL = timedelta(minutes=DEFAULT_MIN_INTERVAL_MINUTES)
"""The back-off's base: after a recording with no failure streak (and after the first failed call),
the element is next due this long after it was recorded, and its URL may be called again this long
after its last call."""

DEFAULT_BACKOFF_GROWTH = 1.0
"""How much each further failed call of a URL's streak multiplies the wait (1: flat, every retry one
base interval after the last; 2: 1 h, 2 h, 4 h, ...). Set with SOCIAL_RECORDING_BACKOFF_GROWTH."""

DEFAULT_BACKOFF_MAX_MINUTES = 24 * 60
"""The longest wait a growing back-off reaches (SOCIAL_RECORDING_BACKOFF_MAX_MINUTES)."""

MAX_BACKOFF_GROWTH = 10.0
"""The largest growth accepted: past it the cap is reached by the third failure anyway."""


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


@dataclass(frozen=True)
class Backoff:
    """The back-off as one rule: how long after an anchor a URL with `streak` failed calls in a row is
    due again. The element's stored `due_at` is this rule anchored at its recording; the URL's next
    call is the same rule anchored at its last call, so a selected element finds its URL callable."""

    base: timedelta = DEFAULT_MIN_INTERVAL
    growth: float = DEFAULT_BACKOFF_GROWTH
    cap: timedelta = timedelta(minutes=DEFAULT_BACKOFF_MAX_MINUTES)

    def __post_init__(self) -> None:
        if self.base < timedelta(0):
            raise ValueError(f"the back-off base must be >= 0, got {self.base!r}")
        if not 1.0 <= self.growth <= MAX_BACKOFF_GROWTH:
            raise ValueError(f"the back-off growth must be between 1 and {MAX_BACKOFF_GROWTH:g}, got {self.growth!r}")
        if self.cap < self.base:
            raise ValueError(f"the back-off maximum ({self.cap}) must be at least its base ({self.base})")

    @classmethod
    def configured(cls, growth: float, max_minutes: int) -> Backoff:
        """The policy the settings describe (the base is fixed: DEFAULT_MIN_INTERVAL)."""
        return cls(growth=growth, cap=timedelta(minutes=max_minutes))

    def delay(self, streak: int) -> timedelta:
        """The wait after a recording or call that leaves `streak` failures in a row: the base for no
        streak and for the first failure, then `growth` times the previous wait, at most `cap`."""
        if streak < 0:
            raise ValueError(f"streak must be >= 0, got {streak}")
        if self.growth == 1.0 or streak <= 1:
            return self.base
        factor = self.growth ** min(streak - 1, 64)
        return min(self.cap, self.base * factor) if factor < 1e6 else self.cap

    def next_due(self, anchor: datetime, streak: int) -> datetime:
        """When an element recorded (or a URL called) at `anchor` with `streak` is due again."""
        return anchor + self.delay(streak)


DEFAULT_BACKOFF = Backoff()


def due_by(now: datetime, run_interval: timedelta, backoff: Backoff = DEFAULT_BACKOFF) -> datetime:
    """The "due by" a run asks for: `now`, moved earlier or later by how much the run's interval
    differs from the policy's base (a retry with `min_interval_minutes: 0` takes what is due within one
    base interval, one with a longer interval only what has been due that much longer). With the
    default flat back-off that is exactly "recorded at least `run_interval` ago". A moment at the end
    of the calendar (asking for everything) stays there."""
    try:
        return now + (backoff.base - run_interval)
    except OverflowError:
        return datetime.max.replace(tzinfo=now.tzinfo)


def backoff_passed(attempted_at: datetime | None, now: datetime, min_interval: timedelta) -> bool:
    """True when a URL may be called again under a flat back-off: never attempted (zero-call paths), or
    older than the interval. The engine asks `Backoff` (the streak's wait); this stays for scripts."""
    if attempted_at is None:
        return True
    return now - attempted_at >= min_interval
