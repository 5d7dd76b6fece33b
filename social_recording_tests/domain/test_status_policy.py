"""Table tests for the FetchStatus sets and the shared retry policy."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from social_recording.domain.policy import backoff_passed, resolve_final_status
from social_recording.domain.status import (
    ABSORBING,
    REALTIME,
    RETRYABLE,
    REUSABLE,
    FetchStatus,
    parse_status,
)

S = FetchStatus


def test_sets_partition_the_statuses() -> None:
    assert {S.OK, S.NOT_FOUND, S.BLOCKED, S.INVALID, S.EXHAUSTED} == ABSORBING
    assert {S.ERROR, S.UNSUPPORTED, S.SKIPPED_PAID, S.PENDING} == RETRYABLE
    assert set(FetchStatus) == ABSORBING | RETRYABLE
    assert not ABSORBING & RETRYABLE


def test_realtime_and_reusable() -> None:
    assert {S.ERROR, S.PENDING} == REALTIME  # skipped_paid / unsupported are not reopened live
    assert {S.OK, S.NOT_FOUND, S.BLOCKED, S.INVALID} == REUSABLE  # every answer; never a spent budget
    assert REALTIME <= RETRYABLE and REUSABLE <= ABSORBING


def test_values_are_the_stored_strings() -> None:
    assert [s.value for s in FetchStatus] == [
        "ok", "not_found", "blocked", "invalid", "exhausted", "error", "unsupported", "skipped_paid", "pending",
    ]
    assert S("skipped_paid") is S.SKIPPED_PAID


def test_parse_status_names_the_bad_value() -> None:
    assert parse_status("error") is S.ERROR
    with pytest.raises(ValueError, match="'done'.*expected one of: ok, not_found"):
        parse_status("done")


@pytest.mark.parametrize(
    ("attempts", "status", "attempted", "max_attempts", "expected"),
    [
        # 1. absorbing statuses come back unchanged, whatever the count
        (0, S.OK, True, 5, S.OK),
        (4, S.OK, True, 5, S.OK),
        (9, S.NOT_FOUND, True, 5, S.NOT_FOUND),
        (4, S.BLOCKED, True, 5, S.BLOCKED),
        (4, S.INVALID, True, 5, S.INVALID),
        (4, S.INVALID, False, 5, S.INVALID),
        (7, S.EXHAUSTED, True, 5, S.EXHAUSTED),
        # 2. retryable and no external call: unchanged (why unsupported / skipped_paid never exhaust)
        (4, S.ERROR, False, 5, S.ERROR),
        (99, S.UNSUPPORTED, False, 5, S.UNSUPPORTED),
        (99, S.SKIPPED_PAID, False, 5, S.SKIPPED_PAID),
        (4, S.PENDING, False, 5, S.PENDING),
        # 3. attempted: attempts + 1 >= max -> exhausted
        (0, S.ERROR, True, 5, S.ERROR),
        (3, S.ERROR, True, 5, S.ERROR),
        (4, S.ERROR, True, 5, S.EXHAUSTED),
        (5, S.ERROR, True, 5, S.EXHAUSTED),
        (0, S.ERROR, True, 1, S.EXHAUSTED),
        (1, S.ERROR, True, 3, S.ERROR),
        (2, S.ERROR, True, 3, S.EXHAUSTED),
    ],
)
def test_resolve_final_status(
    attempts: int, status: FetchStatus, attempted: bool, max_attempts: int, expected: FetchStatus
) -> None:
    assert resolve_final_status(attempts, status, attempted, max_attempts) is expected


def test_resolve_final_status_default_max_is_five() -> None:
    assert resolve_final_status(3, S.ERROR, True) is S.ERROR
    assert resolve_final_status(4, S.ERROR, True) is S.EXHAUSTED


@pytest.mark.parametrize(("attempts", "max_attempts"), [(-1, 5), (0, 0)])
def test_resolve_final_status_rejects_bad_numbers(attempts: int, max_attempts: int) -> None:
    with pytest.raises(ValueError, match=str(attempts if attempts < 0 else max_attempts)):
        resolve_final_status(attempts, S.ERROR, True, max_attempts)


NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("attempted_at", "interval", "expected"),
    [
        (None, timedelta(minutes=60), True),  # zero-call paths always pass
        (NOW - timedelta(minutes=59, seconds=59), timedelta(minutes=60), False),
        (NOW - timedelta(minutes=60), timedelta(minutes=60), True),
        (NOW - timedelta(days=3), timedelta(minutes=60), True),
        (NOW, timedelta(0), True),  # 0 forces an immediate retry
        (NOW + timedelta(minutes=1), timedelta(minutes=60), False),  # clock skew: not yet
    ],
)
def test_backoff_passed(attempted_at: datetime | None, interval: timedelta, expected: bool) -> None:
    assert backoff_passed(attempted_at, NOW, interval) is expected
