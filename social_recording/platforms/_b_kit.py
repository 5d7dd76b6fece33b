"""Small helpers shared by the youtube, github, telegram and web generators (Platforms B).

Why a kit: the four generators share the same bookkeeping rules and they must not drift apart —
`attempted` is derived from the requests really sent (DESIGN §4: reported, never guessed), zero-call
URLs succeed without a request (seed G-4), outbound links go through `to_canonical` while display
URLs (avatars, thumbnails, screenshots) are stored exactly as received (seed 003), and every graph is
checked by `plan()` before it leaves the generator, so a broken graph surfaces as `invalid` carrying
the right `attempted` flag.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from social_recording.domain.graph import (
    GraphGroup,
    SocialContractError,
    SocialGraph,
    SocialObject,
    plan,
)
from social_recording.domain.urls import CanonicalUrl, Platform, parse_canonical, to_canonical
from social_recording.platforms.base import ErrorCode, ExternalFetchError, GenerateResult
from social_recording.platforms.http import ProviderHttp

ROOT_REF = "root"

M = TypeVar("M", bound=BaseModel)

_URL_IN_TEXT = re.compile(r"https?://[^\s<>\"'`]+", re.IGNORECASE)
_TRAILING_PUNCT = ".,;:!?)]}>'\""


def parse_for(url: str, platform: Platform) -> CanonicalUrl:
    """`parse_canonical(url)` (raises NonCanonicalUrl on non-canonical input: never fixed here), plus
    a check that the router sent this generator a URL of its own platform (a router bug otherwise)."""
    parsed = parse_canonical(url)
    if parsed.platform != platform:
        raise ValueError(f"{platform.value} generator received a {parsed.platform.value} URL: {url!r}")
    return parsed


def zero_call(platform: Platform, parsed: CanonicalUrl, subtype: str, **fields: Any) -> GenerateResult:
    """A URL that carries no fetchable object (search pages, feeds, hashtags…): the graph is built
    from the URL alone, no request is made, `attempted` is False (seed G-4). The key is the URL
    itself, which is why such results are reusable forever (seed 002 §5.3: no anchor)."""
    content = SocialObject(
        platform=platform,
        platform_key=f"{platform.value}:{parsed.url}",
        subtype=subtype,
        fields={"url": parsed.url, **fields},
    )
    graph = SocialGraph(groups=[GraphGroup(ref=ROOT_REF, content=content)])
    return finish(graph, requests=0)


def no_call_error(code: ErrorCode, message: str) -> ExternalFetchError:
    """A failure decided from the URL or the configuration alone: no request was made."""
    return ExternalFetchError(code, message, attempted=False)


def fetch_error(code: ErrorCode, message: str, http: ProviderHttp) -> ExternalFetchError:
    """A failure decided after talking to the provider: `attempted` says whether a request was sent."""
    return ExternalFetchError(code, message, attempted=http.requests_made > 0)


def finish(graph: SocialGraph, *, requests: int) -> GenerateResult:
    """Validate the graph with `plan()` (the writer's own contract check) and wrap it.

    A violation is raised as SocialContractError carrying the truthful `attempted` flag.
    """
    attempted = requests > 0
    try:
        plan(graph)
    except SocialContractError as exc:
        raise SocialContractError(str(exc), attempted=attempted) from None
    return GenerateResult(graph=graph, attempted=attempted, requests=requests)


def parse_payload(model: type[M], data: Any, service: str, http: ProviderHttp) -> M:
    """Validate a provider payload; a shape we cannot read is an upstream fault (retryable), and the
    message names the fields only (never payload values)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        where = ", ".join(".".join(str(p) for p in err["loc"]) or "<root>" for err in exc.errors()[:5])
        raise fetch_error(ErrorCode.UPSTREAM, f"unexpected {service} payload shape ({where})", http) from None


def to_float(value: Any) -> float | None:
    """A metric as a float: numbers and numeric strings (YouTube sends "123"); anything else -> None."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return None
        try:
            return float(text)
        except ValueError:
            return None
    return None


def metrics(values: Mapping[str, Any]) -> dict[str, float]:
    """Metric name -> float, dropping the ones the provider did not send (e.g. hidden likeCount)."""
    out: dict[str, float] = {}
    for name, raw in values.items():
        number = to_float(raw)
        if number is not None:
            out[name] = number
    return out


def urls_in_text(*texts: str | None) -> list[str]:
    """Raw http(s) links found in free text, trailing punctuation trimmed, in order of appearance."""
    found: list[str] = []
    for text in texts:
        if not text:
            continue
        for match in _URL_IN_TEXT.finditer(text):
            found.append(match.group(0).rstrip(_TRAILING_PUNCT))
    return found


def website_link(value: str | None) -> str | None:
    """A profile's website field as a raw link: GitHub's `blog` is often written without a scheme
    ("example.com"); the browser (and GitHub's own UI) reads it as https."""
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    if "://" not in text:
        text = "https://" + text
    return text


def canonical_links(raws: Iterable[str | None]) -> list[str]:
    """Each raw link through `to_canonical`; the ones it rejects are skipped; duplicates dropped."""
    out: list[str] = []
    for raw in raws:
        if not raw:
            continue
        try:
            canonical = to_canonical(raw)
        except ValueError:
            continue
        if canonical not in out:
            out.append(canonical)
    return out


def secret_value(secret: Any) -> str | None:
    """The plain value of an optional pydantic SecretStr (None or blank -> None)."""
    if secret is None:
        return None
    value = str(secret.get_secret_value()).strip()
    return value or None


def first_str(*values: Any) -> str | None:
    """The first non-empty string among `values`."""
    for v in values:
        if isinstance(v, str) and v.strip():
            return v
    return None
