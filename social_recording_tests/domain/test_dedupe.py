"""Table tests for the pure dedupe decision on a URL's state."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from social_recording.domain.dedupe import DEDUPE_TTL, DedupeHit, decide
from social_recording.domain.models import UrlState
from social_recording.domain.status import REUSABLE
from social_recording.domain.status import FetchStatus as S
from social_recording.domain.url_machine import fresh_answer
from social_recording.domain.urls import Platform
from social_recording.recording.attempt import rules_for

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
URL = "https://x.com/i/status/1"
D = timedelta(days=1)


def state(status: S, ago: timedelta | None, source: str | None = "A") -> UrlState:
    at = None if ago is None else NOW - ago
    answer = status if status in REUSABLE else None
    return UrlState(url=URL, platform="x", status=status, attempted_at=at, attempts=1, source_token=source,
                    answer=answer, answered_at=at if answer else None,
                    streak=1 if status in (S.ERROR, S.EXHAUSTED) else 0)


@pytest.mark.parametrize(
    ("url_state", "expected"),
    [
        (None, None),
        (state(S.ERROR, D), None),
        (state(S.PENDING, None), None),
        (state(S.EXHAUSTED, D), None),  # a spent budget is not an answer
        (state(S.UNSUPPORTED, None), None),
        (state(S.SKIPPED_PAID, None), None),
        (state(S.OK, D), DedupeHit(S.OK, "A", NOW - D)),
        (state(S.NOT_FOUND, D), DedupeHit(S.NOT_FOUND, None, NOW - D)),
        (state(S.BLOCKED, D), DedupeHit(S.BLOCKED, None, NOW - D)),
        (state(S.INVALID, D), DedupeHit(S.INVALID, None, NOW - D)),
        # TTL boundary: 1 s inside reuses, the boundary itself fetches
        (state(S.OK, DEDUPE_TTL - timedelta(seconds=1)), DedupeHit(S.OK, "A", NOW - DEDUPE_TTL + timedelta(seconds=1))),
        (state(S.OK, DEDUPE_TTL), None),
        (state(S.NOT_FOUND, DEDUPE_TTL + timedelta(seconds=1)), None),
        # an answer no call produced (a URL shape with nothing to fetch) has no anchor: reusable forever
        (state(S.OK, None), DedupeHit(S.OK, "A", None)),
        # ok without anyone's links to copy: fetch rather than record ok without a graph
        (state(S.OK, D, source=None), None),
    ],
)
def test_decide(url_state: UrlState | None, expected: DedupeHit | None) -> None:
    assert decide(url_state, NOW) == expected


def test_telegram_never_hits() -> None:
    rules = rules_for(Platform.TELEGRAM, max_attempts=5, min_interval=timedelta(hours=1))
    assert fresh_answer(state(S.OK, D), NOW, rules) is None
    x_rules = rules_for(Platform.X, max_attempts=5, min_interval=timedelta(hours=1))
    assert fresh_answer(state(S.OK, D), NOW, x_rules) == (S.OK, "A")


def test_ttl_is_fourteen_days() -> None:
    assert timedelta(days=14) == DEDUPE_TTL
