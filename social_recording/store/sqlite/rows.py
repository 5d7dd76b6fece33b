"""Rows to domain values and back: what each `q_*` statement's columns become, and the fair order of
candidates (oldest first, never-recorded first, ties by address and URL).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from social_recording.domain.graph import ObjectKind
from social_recording.domain.models import OpenCall, PaidRequest, SocialUrl, TokenLink, UrlState
from social_recording.domain.status import Cause, FetchStatus
from social_recording.store._codec import dt_from_text, dt_to_text, opt_dt_from_text
from social_recording.store.base import Candidate, WaitingElement
from social_recording.store.sqlite.schema import NEVER


def _checked_text(value: datetime | None) -> str:
    return NEVER if value is None else dt_to_text(value)


def _checked_dt(value: str | None) -> datetime | None:
    return None if not value else dt_from_text(value)


def _url_from_row(row: Sequence[Any]) -> SocialUrl:
    _address, url, status, attempted_at, attempts, checked_at, cause, detail, fence, due_at = row
    return SocialUrl(
        url=url,
        status=FetchStatus(status),
        attempted_at=opt_dt_from_text(attempted_at),
        attempts=attempts,
        checked_at=_checked_dt(checked_at),
        due_at=_checked_dt(due_at),
        cause=Cause(cause) if cause else None,
        detail=detail,
        fence=fence,
    )


def _state_from_row(row: Sequence[Any]) -> UrlState:
    (url, platform, status, attempted_at, attempts, source_token, fence, provider, request_id, submitted_at,
     updated_at, answer, answered_at, streak, engine_failures, version, open_call) = row
    request = None
    if provider and request_id and submitted_at:
        request = PaidRequest(provider=provider, request_id=request_id, submitted_at=dt_from_text(submitted_at))
    return UrlState(
        url=url,
        platform=platform,
        status=FetchStatus(status),
        attempted_at=opt_dt_from_text(attempted_at),
        attempts=attempts,
        source_token=source_token,
        fence=fence,
        request=request,
        open_call=None if not open_call else OpenCall.model_validate_json(open_call),
        updated_at=opt_dt_from_text(updated_at),
        answer=FetchStatus(answer) if answer else None,
        answered_at=opt_dt_from_text(answered_at),
        streak=streak,
        engine_failures=engine_failures,
        version=version,
    )


def _candidate_from_row(row: Sequence[Any]) -> Candidate:
    address, url, status, attempts, checked_at, platform, detail, due_at = row
    return Candidate(address, url, FetchStatus(status), attempts, _checked_dt(checked_at), platform, detail,
                     _checked_dt(due_at))


def _waiting_from_row(row: Sequence[Any]) -> WaitingElement:
    address, url, status, attempts, checked_at, created_at, platform, cause, detail, due_at = row
    recorded = bool(checked_at)
    return WaitingElement(
        address=address,
        url=url,
        status=FetchStatus(status),
        attempts=attempts,
        since=dt_from_text(checked_at if recorded else created_at),
        recorded=recorded,
        platform=platform,
        cause=Cause(cause) if cause else None,
        detail=detail,
        due=dt_from_text(due_at) if due_at else None,
    )


def _link_from_row(r: Sequence[Any]) -> TokenLink:
    return TokenLink(
        token_address=r[0],
        object=ObjectKind(r[1]),
        object_id=r[2],
        entry_url=r[3],
        platform=r[4],
        subtype=r[5],
        link_depth=r[6],
        created_at=dt_from_text(r[7]),
    )


def _link_row(link: TokenLink) -> tuple[Any, ...]:
    return (
        link.token_address,
        link.object.value,
        link.object_id,
        link.entry_url,
        link.platform,
        link.subtype,
        link.link_depth,
        dt_to_text(link.created_at),
    )


def _fair_order(c: Candidate) -> tuple[str, str, str]:
    """Longest due first; never-recorded elements before all others; address and URL break ties."""
    return (NEVER if c.due_at is None else dt_to_text(c.due_at), c.address, c.url)
