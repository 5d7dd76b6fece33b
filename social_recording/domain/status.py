"""FetchStatus and its sets: the split is "can a retry change this?" (docs/architecture.md, "Statuses")."""

from __future__ import annotations

from enum import StrEnum


class FetchStatus(StrEnum):
    """The last outcome of one social URL of one token."""

    OK = "ok"
    NOT_FOUND = "not_found"
    BLOCKED = "blocked"
    INVALID = "invalid"
    EXHAUSTED = "exhausted"
    ERROR = "error"
    UNSUPPORTED = "unsupported"
    SKIPPED_PAID = "skipped_paid"
    PENDING = "pending"


ABSORBING: frozenset[FetchStatus] = frozenset(
    {FetchStatus.OK, FetchStatus.NOT_FOUND, FetchStatus.BLOCKED, FetchStatus.INVALID, FetchStatus.EXHAUSTED}
)
"""Only an explicit retry naming them (never ok) leaves these."""

RETRYABLE: frozenset[FetchStatus] = frozenset(
    {FetchStatus.ERROR, FetchStatus.UNSUPPORTED, FetchStatus.SKIPPED_PAID, FetchStatus.PENDING}
)
"""The retry job's default candidates."""

REALTIME: frozenset[FetchStatus] = frozenset({FetchStatus.ERROR, FetchStatus.PENDING})
"""What the live path reopens for a token it already has (skipped_paid and unsupported wait for the retry job)."""

REUSABLE: frozenset[FetchStatus] = frozenset(
    {FetchStatus.OK, FetchStatus.NOT_FOUND, FetchStatus.BLOCKED, FetchStatus.INVALID}
)
"""What the dedupe gate may hand to another token within the TTL: every answer the provider gave
about the target itself. `exhausted` is not an answer, only a budget spent."""

assert ABSORBING.isdisjoint(RETRYABLE) and frozenset(FetchStatus) == ABSORBING | RETRYABLE


class Cause(StrEnum):
    """Why an element holds a status without a call having decided it: what would have to change for
    a retry to do better. The retry selection skips elements whose cause the configuration has not
    removed (docs/architecture.md, "Retry selection")."""

    NO_GENERATOR = "no_generator"
    """No generator can run for the platform here (none exists, or its provider key is not set)."""
    UNPARSEABLE = "unparseable"
    """The URL's shape names nothing the platform's generator can read; only a code change helps."""
    PAID_DISABLED = "paid_disabled"
    """A paid platform while paid calls are switched off."""
    CREDIT_EXHAUSTED = "credit_exhausted"
    """The provider account said its credit or quota is gone earlier in the run (that account only)."""
    BACKOFF = "backoff"
    """Another holder of the URL called it recently (or in this run) and got a transient failure:
    this one adopted that answer instead of paying again inside the back-off window."""
    OWNERSHIP = "ownership"
    """The URL lock could not be confirmed right before a paid call: nothing was sent."""
    RATE_LIMIT = "rate_limit"
    """The provider's shared rate (or a wait it asked for) would have held the request too long: not
    sent, tried again after the back-off."""
    SPEND_BUDGET = "spend_budget"
    """The account's spend budget for the UTC day or month was used up: the paid request was not sent
    (`skipped_paid`, picked up again by the default retry selection once the budget resets)."""
    ENGINE_FAILURE = "engine_failure"
    """Our own code failed before any request: counted per URL, and `exhausted` once the count reaches
    the budget, so a defect is never selected forever."""


def parse_status(value: str) -> FetchStatus:
    """Parse a status name with an error that lists the valid names."""
    try:
        return FetchStatus(value)
    except ValueError:
        valid = ", ".join(s.value for s in FetchStatus)
        raise ValueError(f"unknown FetchStatus {value!r}; expected one of: {valid}") from None
