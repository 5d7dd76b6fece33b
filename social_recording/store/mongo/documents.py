"""Stored documents to domain values and back. BSON keeps milliseconds, so stored times are truncated
to the millisecond (a URL state's answer time keeps the rest beside it); every datetime read back,
nested ones too, is tz-aware UTC (docs/architecture.md, "Mongo-protocol servers").
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from social_recording.domain.models import (
    OpenCall,
    PaidRequest,
    SocialUrl,
    UnresolvedValue,
    UrlState,
    ensure_utc,
)
from social_recording.domain.status import Cause, FetchStatus
from social_recording.store.base import Candidate, WaitingElement
from social_recording.store.mongo.schema import NEVER


def _opt_utc(value: datetime | None) -> datetime | None:
    return None if value is None else ensure_utc(value)


def _checked_out(value: datetime | None) -> datetime:
    return NEVER if value is None else ensure_utc(value)


def _checked_in(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    value = ensure_utc(value)
    return None if value <= NEVER else value


def _answered_at_out(value: datetime | None) -> dict[str, Any]:
    """A URL state's answer time to the microsecond: a BSON date keeps milliseconds, so the rest
    goes in `answered_at_us`. A failed call is counted in the streak only when it went out after the
    answer the state holds, and two calls of one URL can fall in one millisecond
    (docs/architecture.md, "Mongo-protocol servers")."""
    if value is None:
        return {"answered_at": None, "answered_at_us": None}
    value = ensure_utc(value)
    return {"answered_at": value, "answered_at_us": value.microsecond % 1000}


def _answered_at_in(doc: Mapping[str, Any]) -> datetime | None:
    value = _opt_utc(doc.get("answered_at"))
    rest = doc.get("answered_at_us")
    if value is None or not rest:  # a state written before the field: its millisecond
        return value
    return value + timedelta(microseconds=int(rest))  # a BSON date holds whole milliseconds


def _url(el: Mapping[str, Any]) -> SocialUrl:
    cause = el.get("cause")
    return SocialUrl(
        url=el["url"],
        status=FetchStatus(el["status"]),
        attempted_at=_opt_utc(el.get("attempted_at")),
        attempts=int(el.get("attempts", 0)),
        checked_at=_checked_in(el.get("checked_at")),
        due_at=_checked_in(el.get("due_at")),
        cause=Cause(cause) if cause else None,
        detail=el.get("detail"),
        fence=int(el.get("fence", 0)),
    )


def _open_call_out(call: OpenCall | None) -> dict[str, Any] | None:
    if call is None:
        return None
    return {"provider": call.provider, "subject": call.subject, "started_at": ensure_utc(call.started_at),
            "fence": call.fence, "unit_price_usd": call.unit_price_usd, "requests": call.requests, "new_spending": call.new_spending,
            "replaced": _open_call_out(call.replaced)}


def _open_call_in(doc: Mapping[str, Any], key: str = "open_call") -> OpenCall | None:
    """A URL state document's open call, with the uncounted ones it replaced (None: there is none)."""
    call = doc.get(key)
    if not (isinstance(call, dict) and call.get("provider") and call.get("started_at")):
        return None
    return OpenCall(provider=call["provider"], subject=call.get("subject") or doc["url"],
                    started_at=ensure_utc(call["started_at"]), fence=int(call.get("fence", 0)),
                    unit_price_usd=float(call.get("unit_price_usd", 0.0)), requests=int(call.get("requests", 1)),
                    new_spending=bool(call.get("new_spending", True)),
                    replaced=_open_call_in({"url": doc["url"], key: call.get("replaced")}, key))


def _state(doc: Mapping[str, Any]) -> UrlState:
    req = doc.get("request")
    request = None
    if isinstance(req, dict) and req.get("provider") and req.get("request_id") and req.get("submitted_at"):
        request = PaidRequest(
            provider=req["provider"], request_id=req["request_id"], submitted_at=ensure_utc(req["submitted_at"])
        )
    return UrlState(
        url=doc["url"],
        open_call=_open_call_in(doc),
        platform=doc.get("platform") or "unknown",
        status=FetchStatus(doc["status"]),
        attempted_at=_opt_utc(doc.get("attempted_at")),
        attempts=int(doc.get("attempts", 0)),
        source_token=doc.get("source_token"),
        fence=int(doc.get("fence", 0)),
        request=request,
        updated_at=_opt_utc(doc.get("updated_at")),
        answer=FetchStatus(doc["answer"]) if doc.get("answer") else None,
        answered_at=_answered_at_in(doc),
        streak=int(doc.get("streak", 0)),
        engine_failures=int(doc.get("engine_failures", 0)),
        version=int(doc.get("version", 0)),
    )


def _candidate(doc: Mapping[str, Any]) -> Candidate:
    return Candidate(
        address=doc["address"],
        url=doc["url"],
        status=FetchStatus(doc["status"]),
        attempts=int(doc.get("attempts", 0)),
        checked_at=_checked_in(doc.get("checked_at")),
        platform=doc.get("platform"),
        detail=doc.get("detail"),
        due_at=_checked_in(doc.get("due_at")),
    )


def _waiting(doc: Mapping[str, Any]) -> WaitingElement:
    checked = _checked_in(doc.get("checked_at"))
    cause = doc.get("cause")
    return WaitingElement(
        address=doc["address"],
        url=doc["url"],
        status=FetchStatus(doc["status"]),
        attempts=int(doc.get("attempts", 0)),
        since=checked if checked is not None else ensure_utc(doc["created_at"]),
        recorded=checked is not None,
        platform=doc.get("platform"),
        cause=Cause(cause) if cause else None,
        detail=doc.get("detail"),
        due=_checked_in(doc.get("due_at")),
    )


def _unresolved(doc: Mapping[str, Any]) -> UnresolvedValue:
    return UnresolvedValue(
        field=doc["field"],
        value=doc["value"],
        reason=doc.get("reason") or "",
        attempts=int(doc.get("attempts", 0)),
        checked_at=_checked_in(doc.get("checked_at")),
    )


def _unresolved_doc(v: UnresolvedValue) -> dict[str, Any]:
    return {"field": v.field, "value": v.value, "reason": v.reason, "attempts": v.attempts,
            "checked_at": _checked_out(v.checked_at)}


def _write_key(link_doc: Mapping[str, Any]) -> tuple[int, str]:
    """Which write a link document came from, in write order: (fence, write id); links stored before
    fences existed sort first."""
    return int(link_doc.get("fence", 0)), str(link_doc.get("write", ""))


def _fair_order(c: Candidate) -> tuple[datetime, str, str]:
    """Longest due first; never-recorded elements before all others; address and URL break ties."""
    return (_checked_out(c.due_at), c.address, c.url)
