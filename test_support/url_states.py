"""Test helper: a URL state's next values from the few fields a test cares about."""

from __future__ import annotations

from datetime import datetime

from social_recording.domain.status import REUSABLE, FetchStatus
from social_recording.domain.url_machine import NextState


def state_write(
    status: FetchStatus,
    attempts: int,
    attempted_at: datetime | None,
    source_token: str | None = None,
    *,
    streak: int | None = None,
) -> NextState:
    """The state the engine would write after a call at `attempted_at` that brought `status`: an answer
    is anchored at that call; a failure counts `attempts` as its streak unless `streak` says otherwise."""
    answer = status if status in REUSABLE else None
    if streak is None:
        streak = attempts if status in (FetchStatus.ERROR, FetchStatus.EXHAUSTED) else 0
    return NextState(
        status=status,
        answer=answer,
        answered_at=attempted_at if answer is not None else None,
        source_token=source_token,
        streak=streak,
        attempted_at=attempted_at,
        attempts=attempts,
        engine_failures=0,
        request=None,
    )
