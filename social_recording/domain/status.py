"""FetchStatus and its sets: the split is "can a retry change this?" (seed 004 §1.2, 000 L-7, L-15)."""

from __future__ import annotations

from enum import StrEnum


class FetchStatus(StrEnum):
    """The last outcome of one social URL of one token (DESIGN §2)."""

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
"""What the live path reopens for a token it already has (L-8: skipped_paid is not reopened)."""

REUSABLE: frozenset[FetchStatus] = frozenset({FetchStatus.OK, FetchStatus.NOT_FOUND})
"""What the dedupe gate may hand to another token (seed 002 U-5)."""

assert ABSORBING.isdisjoint(RETRYABLE) and frozenset(FetchStatus) == ABSORBING | RETRYABLE


def parse_status(value: str) -> FetchStatus:
    """Parse a status name with an error that lists the valid names."""
    try:
        return FetchStatus(value)
    except ValueError:
        valid = ", ".join(s.value for s in FetchStatus)
        raise ValueError(f"unknown FetchStatus {value!r}; expected one of: {valid}") from None
