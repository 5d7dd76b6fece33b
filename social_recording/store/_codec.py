"""What both backends share: UTC datetimes, JSON with dates, de-duplicated URLs, checked metrics, and
the one-time backfill of per-URL states from elements stored before URL states existed."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from social_recording.domain.graph import ObjectKind, SocialObject
from social_recording.domain.models import UrlState, ensure_utc
from social_recording.domain.status import REUSABLE, Cause, FetchStatus
from social_recording.domain.urls import Platform, platform_of

_DATE_TAG = "$date"


def dt_to_text(value: datetime) -> str:
    """Fixed-width ISO-8601 UTC with microseconds, so text order is time order in SQLite. `isoformat`
    writes the same text as the `strftime` pattern below in half its time (a URL write formats eight
    times), except for years before 1000, which `strftime` does not pad."""
    utc = value if value.tzinfo is UTC else ensure_utc(value)
    if utc.year >= 1000:
        return utc.isoformat(timespec="microseconds")
    return utc.strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")


def dt_from_text(value: str) -> datetime:
    return datetime.fromisoformat(value).astimezone(UTC)


def opt_dt_to_text(value: datetime | None) -> str | None:
    return None if value is None else dt_to_text(value)


def opt_dt_from_text(value: str | None) -> datetime | None:
    return None if value is None else dt_from_text(value)


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime):
        return {_DATE_TAG: dt_to_text(value)}
    if isinstance(value, set | frozenset | tuple):
        return list(value)
    raise TypeError(f"cannot store a value of type {type(value).__name__} in a JSON column: {value!r}")


def _json_hook(obj: dict[str, Any]) -> Any:
    if len(obj) == 1 and _DATE_TAG in obj and isinstance(obj[_DATE_TAG], str):
        return dt_from_text(obj[_DATE_TAG])
    return obj


_ENCODER = json.JSONEncoder(default=_json_default, ensure_ascii=False, sort_keys=True)
"""One encoder for every document (it keeps no state between calls): `json.dumps` with these options
makes a new one per call, 1.6 of its 7 us."""


def json_dumps(value: Any) -> str:
    """JSON that keeps datetimes (tagged like Extended JSON), so a SQLite document reads back the
    same types a Mongo document does."""
    return _ENCODER.encode(value)


def json_loads(text: str | None) -> Any:
    return None if text is None else json.loads(text, object_hook=_json_hook)


def unique_urls(urls: Iterable[str], address: str) -> list[str]:
    """A token never holds the same url twice: keep the first occurrence of each.

    An empty or non-string URL is our caller's bug; it is rejected naming the token, not stored.
    """
    out: list[str] = []
    seen: set[str] = set()
    for url in urls:
        if not isinstance(url, str) or not url.strip():
            raise ValueError(f"token {address!r}: social url must be a non-empty string, got {url!r}")
        if url not in seen:
            seen.add(url)
            out.append(url)
    return out


def checked_metrics(metrics: Mapping[str, float], object_id: str) -> dict[str, float]:
    """Metric values must be finite numbers: NaN/inf would be stored as NULL or compare oddly."""
    out: dict[str, float] = {}
    for name, value in metrics.items():
        if not isinstance(name, str) or not name:
            raise ValueError(f"object {object_id!r}: metric name must be a non-empty string, got {name!r}")
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ValueError(f"object {object_id!r}: metric {name!r} must be a finite number, got {value!r}")
        out[name] = float(value)
    return out


OBJECT_COLLECTIONS: dict[str, str] = {"content": "contents", "account": "accounts", "venue": "venues"}
"""ObjectKind value -> collection / table name (a fixed map: never a name built from input)."""


def object_collection(kind: ObjectKind | str) -> str:
    """The collection (Mongo) or table (SQLite) of an object kind; an unknown kind is a ValueError naming it."""
    try:
        return OBJECT_COLLECTIONS[ObjectKind(kind).value]
    except ValueError:
        raise ValueError(f"unknown object kind {kind!r}; expected one of {sorted(OBJECT_COLLECTIONS)}") from None


def object_body(obj: SocialObject) -> dict[str, Any]:
    """Everything of a SocialObject except its identity columns (platform, platform_key, subtype).

    Metrics live in `metrics` (first point only), not on the object row.
    """
    return {
        "fields": dict(obj.fields),
        "outbound_urls": list(obj.outbound_urls),
        "media_urls": list(obj.media_urls),
        "avatar_url": obj.avatar_url,
        "icon_url": obj.icon_url,
    }


_EMPTY_BODY = SocialObject(platform=Platform.WEB, platform_key="-", subtype="-")


def stored_body(row: Mapping[str, Any]) -> dict[str, Any]:
    """An object body as read back, every field of `object_body` present: a Mongo-protocol server may
    leave the null and empty ones of an insert-only upsert out of the document (docs/architecture.md,
    "Mongo-protocol servers")."""
    return {key: row[key] if row.get(key) is not None else empty for key, empty in object_body(_EMPTY_BODY).items()}


def platform_or_none(url: str) -> str | None:
    """The platform stored beside an element (queried by the retry selection); None for a URL that
    is not canonical (our bug upstream; the recorder isolates it)."""
    try:
        return platform_of(url).value
    except ValueError:
        return None


LEGACY_CAUSES: dict[FetchStatus, Cause] = {
    FetchStatus.UNSUPPORTED: Cause.NO_GENERATOR,
    FetchStatus.SKIPPED_PAID: Cause.PAID_DISABLED,
}
"""The cause given to elements stored before causes existed: back then `unsupported` only ever meant
"no generator for the platform" and `skipped_paid` "paid calls switched off". Without it the default
retry selection, which reopens `unsupported` only when the missing generator was the cause, would
never reach them again."""


def legacy_cause(status: FetchStatus | str) -> Cause | None:
    return LEGACY_CAUSES.get(FetchStatus(status))


_STATE_PRIORITY: tuple[FetchStatus, ...] = (
    FetchStatus.OK,
    FetchStatus.NOT_FOUND,
    FetchStatus.BLOCKED,
    FetchStatus.INVALID,
    FetchStatus.EXHAUSTED,
    FetchStatus.ERROR,
)
"""Which holder's status speaks for a URL when states are rebuilt from elements: an answer beats a
spent budget, which beats a transient failure."""


def backfill_url_states(
    elements: Iterable[tuple[str, str, FetchStatus, datetime | None, int]],
) -> list[UrlState]:
    """Per-URL states from (address, url, status, attempted_at, attempts) elements of a store written
    before URL states existed: the best status among the holders, its newest call as the anchor, the
    most calls any holder counted, and (for ok) the holder whose links stand for the answer. URLs that
    no call ever decided (pending, skipped, unsupported) get no state."""
    by_url: dict[str, list[tuple[str, FetchStatus, datetime | None, int]]] = {}
    for address, url, status, attempted_at, attempts in elements:
        by_url.setdefault(url, []).append((address, FetchStatus(status), attempted_at, attempts))
    states: list[UrlState] = []
    for url, holders in sorted(by_url.items()):
        decided = [h for h in holders if h[1] in REUSABLE or h[2] is not None]
        best = next((s for s in _STATE_PRIORITY if any(h[1] is s for h in decided)), None)
        if best is None:
            continue
        chosen = sorted((h for h in decided if h[1] is best), key=lambda h: h[0])
        anchor = max((h[2] for h in chosen if h[2] is not None), default=None)
        # The anchor's holder (the smallest address on a tie); any holder when no call decided it.
        source = next(h[0] for h in chosen if h[2] == anchor)
        states.append(
            UrlState(
                url=url,
                platform=platform_or_none(url) or "unknown",
                status=best,
                attempted_at=anchor,
                attempts=max(h[3] for h in holders),
                source_token=source if best is FetchStatus.OK else None,
            )
        )
    return states


def url_state_fields_from_v2(
    status: FetchStatus, attempted_at: datetime | None, attempts: int
) -> tuple[FetchStatus | None, datetime | None, int]:
    """(answer, answered_at, streak) for a URL state written before the state machine, which kept only
    the last status and a lifetime call count. A reusable status is the answer, anchored at its call;
    a failing one counts every recorded call as its streak (the history that would tell answered calls
    apart is gone, and over-counting never buys a call; an operator re-opens a wrongly spent budget by
    naming `exhausted` in a retry)."""
    if status in REUSABLE:
        return status, attempted_at, 0
    if status in (FetchStatus.ERROR, FetchStatus.EXHAUSTED):
        return None, None, attempts
    return None, None, 0


def held_back_counts(query: Any, status: FetchStatus, platform: str | None, cause: str | None) -> bool:
    """Whether an element of a few tokens' held-back elements counts for `query` (a CandidateQuery):
    `unsupported` only where the query narrows it to platforms whose cause was "no generator"."""
    if status is not FetchStatus.UNSUPPORTED or query.unsupported_platforms is None:
        return True
    return platform in query.unsupported_platforms and cause == Cause.NO_GENERATOR.value


def waiting_parts(statuses: Iterable[FetchStatus], unsupported_platforms: Iterable[str] | None) -> list[
    tuple[FetchStatus, str | None]
]:
    """The (status, platform) ranges the retry selection and a `waiting_elements` query read, one
    index range each: `unsupported` narrowed to `unsupported_platforms` (when given) becomes one range
    per platform; every other status is one range, whatever the platform."""
    parts: list[tuple[FetchStatus, str | None]] = []
    for status in sorted(set(statuses)):
        if status is FetchStatus.UNSUPPORTED and unsupported_platforms is not None:
            parts += [(status, platform) for platform in sorted(set(unsupported_platforms))]
        else:
            parts.append((status, None))
    return parts
