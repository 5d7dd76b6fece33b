"""Value encodings shared by the backends: UTC datetimes, JSON with dates, de-duplicated URLs."""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from social_recording.domain.graph import SocialObject
from social_recording.domain.models import ensure_utc
from social_recording.domain.status import FetchStatus

_DATE_TAG = "$date"


def dt_to_text(value: datetime) -> str:
    """Fixed-width ISO-8601 UTC with microseconds, so text order is time order in SQLite."""
    return ensure_utc(value).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")


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


def json_dumps(value: Any) -> str:
    """JSON that keeps datetimes (tagged like Extended JSON), so a SQLite document reads back the
    same types a Mongo document does."""
    return json.dumps(value, default=_json_default, ensure_ascii=False, sort_keys=True)


def json_loads(text: str | None) -> Any:
    return None if text is None else json.loads(text, object_hook=_json_hook)


def unique_urls(urls: Iterable[str], address: str) -> list[str]:
    """A token never holds the same url twice (DESIGN §2): keep the first occurrence of each.

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


def status_query(
    statuses: Collection[FetchStatus], addresses: Sequence[str] | None, limit: int | None
) -> tuple[list[str], list[str] | None] | None:
    """The arguments of `find_tokens_by_url_statuses`, checked and normalised the same way for both
    backends: (sorted status values, de-duplicated addresses or None), or None when the answer is
    empty without a query (no status, limit 0 — which MongoDB would read as "no limit" —, or an
    empty address list)."""
    wanted = sorted({FetchStatus(s).value for s in statuses})
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0 or None, got {limit!r}")
    if not wanted or limit == 0 or (addresses is not None and not addresses):
        return None
    return wanted, None if addresses is None else list(dict.fromkeys(addresses))
