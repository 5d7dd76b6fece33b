"""Table tests for the pure dedupe decision (seed 002 §5.3, U-3 … U-5)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from social_recording.domain.dedupe import DEDUPE_TTL, DedupeHit, decide
from social_recording.domain.models import SocialUrl
from social_recording.domain.status import FetchStatus as S
from social_recording.domain.urls import Platform

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
URL = "https://x.com/someone/status/1"


def el(status: S, ago: timedelta | None) -> SocialUrl:
    return SocialUrl(url=URL, status=status, attempted_at=None if ago is None else NOW - ago, attempts=1)


D = timedelta(days=1)


@pytest.mark.parametrize(
    ("candidates", "expected"),
    [
        ([], None),
        ([("A", el(S.ERROR, D))], None),
        ([("A", el(S.PENDING, None))], None),
        ([("A", el(S.BLOCKED, D))], None),  # only ok / not_found are reusable (U-5)
        ([("A", el(S.OK, D))], DedupeHit(S.OK, "A", NOW - D)),
        ([("A", el(S.NOT_FOUND, D))], DedupeHit(S.NOT_FOUND, "A", NOW - D)),
        # ok is preferred over not_found even when the not_found is newer
        ([("A", el(S.NOT_FOUND, D)), ("B", el(S.OK, 3 * D))], DedupeHit(S.OK, "B", NOW - 3 * D)),
        # the anchor is the newest attempted_at among candidates of the chosen status (U-3)
        ([("A", el(S.OK, 20 * D)), ("B", el(S.OK, 2 * D))], DedupeHit(S.OK, "B", NOW - 2 * D)),
        # an error's newer call does not move the clock: it confirmed nothing
        ([("A", el(S.OK, 20 * D)), ("B", el(S.ERROR, D))], None),
        # TTL boundary
        ([("A", el(S.OK, 13 * D + timedelta(hours=23)))], DedupeHit(S.OK, "A", NOW - 13 * D - timedelta(hours=23))),
        ([("A", el(S.OK, 14 * D))], None),
        ([("A", el(S.OK, 14 * D + timedelta(seconds=1)))], None),
        # no anchor at all (zero-call result, G-4): reused forever
        ([("A", el(S.OK, None))], DedupeHit(S.OK, "A", None)),
        # zero-call and anchored ok mixed: the anchor decides
        ([("A", el(S.OK, None)), ("B", el(S.OK, 30 * D))], None),
        # ties pick the smallest address, deterministically
        ([("C", el(S.OK, D)), ("B", el(S.OK, D))], DedupeHit(S.OK, "B", NOW - D)),
    ],
)
def test_decide(candidates: list[tuple[str, SocialUrl]], expected: DedupeHit | None) -> None:
    assert decide(Platform.X, candidates, NOW) == expected


@pytest.mark.parametrize("status", [S.OK, S.NOT_FOUND])
def test_telegram_never_hits(status: S) -> None:
    assert decide(Platform.TELEGRAM, [("A", el(status, D))], NOW) is None
    assert decide(Platform.TELEGRAM, [("A", el(status, None))], NOW) is None


def test_ttl_is_fourteen_days() -> None:
    assert timedelta(days=14) == DEDUPE_TTL
