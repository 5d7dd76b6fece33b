"""Small helpers shared by the platform generators: turning provider payloads into graph objects.

Why here: every generator has the same rules for outbound links (canonical, via `to_canonical`, bad
ones skipped), display URLs (exactly as received, seed 003), metrics (numbers only) and the zero-call
path (seed G-4). One implementation keeps the platforms from drifting apart.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from social_recording.domain.graph import GraphGroup, SocialContractError, SocialGraph, SocialObject, plan
from social_recording.domain.urls import Platform, to_canonical
from social_recording.platforms.base import ErrorCode, ExternalFetchError, GenerateResult

_URL_IN_TEXT = re.compile(r"https?://[^\s<>\"'`]+", re.IGNORECASE)
_TRAILING_PUNCT = ".,;:!?)]}>'\""


def zero_call_result(platform: Platform, url: str, subtype: str) -> GenerateResult:
    """A URL that names no fetchable object (search, intent, hashtag, ...): a one-content graph built
    from the URL alone, no request made (seed G-4). Its key derives from the URL, so it never goes stale."""
    content = SocialObject(
        platform=platform, platform_key=f"{platform.value}:{url}", subtype=subtype, fields={"url": url}
    )
    return GenerateResult(SocialGraph(groups=[GraphGroup(ref="root", content=content)]), attempted=False, requests=0)


def finish(groups: Callable[[], list[GraphGroup]], requests: int) -> GenerateResult:
    """Build the graph and check it with plan() before it leaves the generator, so a broken graph
    (e.g. a quote cycle, an item without an id) surfaces as SocialContractError carrying the truthful
    `attempted` (the request that fetched it was made)."""
    attempted = requests > 0
    graph = build_graph(groups, attempted=attempted)
    try:
        plan(graph)
    except SocialContractError as exc:
        raise SocialContractError(str(exc), attempted=attempted) from None
    return GenerateResult(graph=graph, attempted=attempted, requests=requests)


def links_in_text(text: object) -> list[str]:
    """http(s) links written in free text (bios, captions), trailing punctuation removed."""
    if not isinstance(text, str):
        return []
    return [m.group(0).rstrip(_TRAILING_PUNCT) for m in _URL_IN_TEXT.finditer(text)]


def canonical_outbound(candidates: Iterable[object]) -> list[str]:
    """Outbound links in canonical form, de-duplicated in first-seen order; values `to_canonical`
    rejects (ValueError) are skipped: a bad link in a bio must not fail the whole URL."""
    out: list[str] = []
    for raw in candidates:
        if not isinstance(raw, str) or not raw.strip():
            continue
        try:
            canonical = to_canonical(raw.strip())
        except ValueError:
            continue
        if canonical not in out:
            out.append(canonical)
    return out


def display_urls(candidates: Iterable[object]) -> list[str]:
    """Display URLs exactly as received (never canonicalised, seed 003); only non-empty strings,
    duplicates dropped."""
    out: list[str] = []
    for raw in candidates:
        if isinstance(raw, str) and raw and raw not in out:
            out.append(raw)
    return out


def first_str(*values: object) -> str | None:
    for v in values:
        if isinstance(v, str) and v:
            return v
    return None


def id_str(value: object) -> str | None:
    """A provider id as a string: ints are rendered, empty strings and other types give None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def to_number(value: object) -> float | None:
    """A metric value as float: numbers and numeric strings ("123", "1,234"); None for anything else."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value.replace(",", "").strip())
        except ValueError:
            return None
    return None


def pick_metrics(src: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, float]:
    """`{our_name: number}` for every provider field in `names` that holds a number."""
    out: dict[str, float] = {}
    for provider_name, ours in names.items():
        n = to_number(src.get(provider_name))
        if n is not None:
            out[ours] = n
    return out


def pick_fields(src: Mapping[str, Any], names: Sequence[str]) -> dict[str, Any]:
    """The listed display fields that are present and not null (JSON scalars / lists as received)."""
    return {n: src[n] for n in names if src.get(n) is not None}


def as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def build_graph(groups: Callable[[], list[GraphGroup]], *, attempted: bool = True) -> SocialGraph:
    """Run the graph construction; a provider item that cannot form valid objects (e.g. an empty id)
    is a contract break that fails identically forever -> SocialContractError (`invalid`)."""
    try:
        return SocialGraph(groups=groups())
    except SocialContractError as exc:
        raise SocialContractError(str(exc), attempted=attempted) from None
    except ValidationError as exc:
        raise SocialContractError(f"provider item does not form a valid graph: {exc.errors()[:1]}",
                                  attempted=attempted) from None


_BLOCKED_WORDS = ("private", "restricted", "banned", "suspended", "quarantined", "unavailable in your",
                  "not available in your")
"""Target-side words only: "blocked" / "login required" / "forbidden" usually describe the scraper being
turned away, which a later attempt may get past -> left unrecognised (UPSTREAM, retryable)."""
_MISSING_WORDS = ("not_found", "not found", "notfound", "no_items", "does not exist", "doesn't exist",
                  "no longer", "deleted", "removed", "missing", "404", "sorry, this page")
_RATE_WORDS = ("rate limit", "rate-limit", "ratelimit", "too many requests", "qps", "throttl")
_CREDIT_WORDS = ("credit", "insufficient balance", "usage hard limit", "quota", "payment required")


def classify_error_text(*texts: object) -> ErrorCode | None:
    """Map a provider's free-text error to an ErrorCode, or None when it says nothing we recognise.

    Order matters: rate limit and credit messages first (they are ours, not the target's), then
    "missing" before "private" ("Empty or private data" style messages name both; a missing target is
    the safer reading because the private case is indistinguishable to us anyway)."""
    joined = " ".join(t.lower() for t in texts if isinstance(t, str))
    if not joined:
        return None
    if any(w in joined for w in _RATE_WORDS):
        return ErrorCode.RATE_LIMITED
    if any(w in joined for w in _CREDIT_WORDS):
        return ErrorCode.CREDIT_EXHAUSTED
    if any(w in joined for w in _MISSING_WORDS):
        return ErrorCode.NOT_FOUND
    if any(w in joined for w in _BLOCKED_WORDS):
        return ErrorCode.TARGET_BLOCKED
    return None


def unrecognised_shape(platform: Platform, url: str) -> ExternalFetchError:
    """A canonical URL of this platform whose path names nothing we can fetch: not found, and no call
    made (a paid provider bills even empty answers)."""
    return ExternalFetchError(
        ErrorCode.NOT_FOUND, f"{platform.value}: URL shape names no fetchable object: {url}", attempted=False
    )
