"""What every generator shares, so that they cannot drift apart on the rules of
docs/architecture.md, "Platforms": routing checks, zero-call and no-call shapes, status tables as
data, `attempted` from the requests really sent, the graph check before a graph leaves, and turning
payload values into links, display URLs and numeric metrics."""

from __future__ import annotations

import logging
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Self, TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from social_recording.domain.graph import GraphGroup, SocialContractError, SocialGraph, SocialObject, plan
from social_recording.domain.urls import CanonicalUrl, Platform, parse_canonical, to_canonical_all
from social_recording.outbound.bounded_json import finite
from social_recording.outbound.bounds import MAX_NUMBER_CHARS
from social_recording.platforms.base import (
    ErrorCode,
    ExternalFetchError,
    GenerateContext,
    GenerateResult,
    ProviderKeys,
)
from social_recording.platforms.http import HttpPolicy, HttpResponse, ProviderHttp

ROOT_REF = "root"

log = logging.getLogger(__name__)

M = TypeVar("M", bound=BaseModel)
T = TypeVar("T")

_URL_IN_TEXT = re.compile(r"https?://[^\s<>\"'`]+", re.IGNORECASE)
_TRAILING_PUNCT = ".,;:!?)]}>'\""


# ---------------------------------------------------------------- routing and failures


def parse_for(url: str, platform: Platform) -> CanonicalUrl:
    """`parse_canonical(url)` (raises NonCanonicalUrl on non-canonical input: never fixed here), plus
    a check that the router sent this generator a URL of its own platform (a router bug otherwise)."""
    parsed = parse_canonical(url)
    if parsed.platform != platform:
        raise ValueError(f"{platform.value} generator received a {parsed.platform.value} URL: {url!r}")
    return parsed


def no_call_error(code: ErrorCode, message: str) -> ExternalFetchError:
    """A failure decided from the URL or the configuration alone: no request was made."""
    return ExternalFetchError(code, message, attempted=False)


def unrecognised_shape(platform: Platform, url: str, reason: str = "URL shape names no fetchable object") -> ExternalFetchError:
    """A canonical URL of this platform whose path names nothing we can fetch: UNSUPPORTED, no call
    made (a paid provider bills even empty answers). Never NOT_FOUND (we do not know the object is
    missing: we cannot ask) nor UPSTREAM (a retry would read the same path the same way, forever)."""
    return no_call_error(ErrorCode.UNSUPPORTED, f"{platform.value}: {reason}: {url}")


def fetch_error(code: ErrorCode, message: str, http: ProviderHttp) -> ExternalFetchError:
    """A failure decided after talking to the provider through a client made for this `generate()`
    call only: `attempted` says whether that client sent a request."""
    return ExternalFetchError(code, message, attempted=http.requests_made > 0)


def parse_payload(model: type[M], data: Any, service: str, http: ProviderHttp) -> M:
    """Validate a provider payload; a shape we cannot read is an upstream fault (retryable), and the
    message names the fields only (never payload values)."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        where = ", ".join(".".join(str(p) for p in err["loc"]) or "<root>" for err in exc.errors()[:5])
        raise fetch_error(ErrorCode.UPSTREAM, f"unexpected {service} payload shape ({where})", http) from None


def json_object(response: HttpResponse) -> dict[str, Any]:
    """An error body as a JSON object, for classification only: a body that is not JSON, or not an
    object, reads as `{}` (the status alone then decides)."""
    try:
        data = response.json()
    except ExternalFetchError:
        return {}
    return data if isinstance(data, dict) else {}


@dataclass(frozen=True)
class StatusRule:
    """One row of a provider's HTTP status -> ErrorCode table.

    Matches when the status is in `statuses` (empty: any status) and `when(response, body)` holds
    (None: always); `message` is a `str.format` template over `status`, `what` and the table's
    `details`."""

    code: ErrorCode
    message: str
    statuses: frozenset[int] = frozenset()
    when: Callable[[HttpResponse, dict[str, Any]], bool] | None = None

    def matches(self, response: HttpResponse, body: dict[str, Any]) -> bool:
        if self.statuses and response.status not in self.statuses:
            return False
        return self.when is None or self.when(response, body)


@dataclass(frozen=True)
class StatusTable:
    """A provider's whole status mapping, as data: the first matching rule wins, no match is UPSTREAM
    (`fallback` message). Why data: the per-call-client generators
    share the walk, the `attempted` bookkeeping (`fetch_error`) and the "error body is read for
    classification only" rule; only the rows differ. `details(response, body)` adds message fields
    (e.g. the Google error reasons); messages never carry a key (ProviderHttp keeps keys out of
    everything it returns)."""

    rules: tuple[StatusRule, ...]
    fallback: str
    ok: frozenset[int] = frozenset({200})
    details: Callable[[HttpResponse, dict[str, Any]], Mapping[str, object]] | None = None

    def error(self, response: HttpResponse, http: ProviderHttp, what: str = "") -> ExternalFetchError | None:
        """The error for `response` (None for an ok status), `attempted` from this call's client."""
        if response.status in self.ok:
            return None
        body = json_object(response)
        fields = {"status": response.status, "what": what,
                  **(self.details(response, body) if self.details else {})}
        for rule in self.rules:
            if rule.matches(response, body):
                return fetch_error(rule.code, rule.message.format(**fields), http)
        return fetch_error(ErrorCode.UPSTREAM, self.fallback.format(**fields), http)

    def check(self, response: HttpResponse, http: ProviderHttp, what: str = "") -> None:
        """Raise the error for `response`, if its status is not ok."""
        error = self.error(response, http, what)
        if error is not None:
            raise error


def secret_value(secret: Any) -> str | None:
    """The plain value of an optional pydantic SecretStr (None or blank -> None)."""
    if secret is None:
        return None
    value = str(secret.get_secret_value()).strip()
    return value or None


# ---------------------------------------------------------------- per-call-client generators


@dataclass(frozen=True)
class ZeroCallShape:
    """A routed URL that names no fetchable object: its graph is built from the URL alone (`zero_call`), with `fields` added to the URL field."""

    subtype: str
    fields: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class NoCallShape:
    """A routed URL decided from its shape alone: it fails with `code` and no request is made
    (`no_call_error`); the message is `"<platform>: <reason>"`. UNSUPPORTED for shapes naming nothing
    fetchable (`unsupported_shape`); another code only when the shape itself says what the object is
    (an invite link: a private chat, TARGET_BLOCKED)."""

    code: ErrorCode
    reason: str


def unsupported_shape(reason: str) -> NoCallShape:
    """A path the generator cannot read (see `unrecognised_shape`)."""
    return NoCallShape(ErrorCode.UNSUPPORTED, reason)


class PerCallHttpGenerator(ABC, Generic[T]):
    """Base of the generators that build one ProviderHttp per `generate()` call (every one but
    X and the Apify-backed ones): the client's `requests_made` then counts exactly this call's requests, which is
    what `attempted` is derived from (`fetch_error`, `finish`).

    `generate()` is shared: `parse_for`, then the subclass's `route` (from the URL alone, no call)
    gives a ZeroCallShape (success, no request), a NoCallShape (failure, no request) or a target `T`
    for `fetch`, which makes the requests (and may keep a two-step paid call's id in `ctx.requests`).

    Holds the optional provider secret (never shown: `__repr__` says only whether it is set, as
    `<secret_name>_set=`, or nothing for a keyless provider), the transport and sleep every client
    gets, and the provider's base URL (`default_base_url` unless overridden, trailing "/" dropped)."""

    platform: Platform
    secret_name: ClassVar[str | None] = None
    key_variable: ClassVar[str | None] = None
    """The environment variable of the provider's key (None: the provider takes none)."""
    default_base_url: ClassVar[str] = ""

    def __init__(
        self,
        secret: str | None,
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        api_base: str | None = None,
    ) -> None:
        self._secret = secret
        self._transport = transport
        self._sleep = sleep
        self._base_url = (self.default_base_url if api_base is None else api_base).rstrip("/")

    @classmethod
    def make(
        cls,
        keys: ProviderKeys,
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> Self:
        """The generator for the registry (`make_generator`); a blank or unset secret is None."""
        return cls(keys.value(cls.key_variable), transport=transport, sleep=sleep)

    def __repr__(self) -> str:  # never the secret
        shown = "" if self.secret_name is None else f"{self.secret_name}_set={self._secret is not None}"
        return f"{type(self).__name__}({shown})"

    @abstractmethod
    def route(self, parsed: CanonicalUrl) -> T | ZeroCallShape | NoCallShape:
        """What the canonical URL names, from its path alone (no call)."""

    @abstractmethod
    def fetch(self, parsed: CanonicalUrl, target: T, ctx: GenerateContext) -> GenerateResult:
        """The requests for a fetchable `target`, on clients from `_client` (one set per call)."""

    def generate(self, url: str, ctx: GenerateContext) -> GenerateResult:
        parsed = parse_for(url, self.platform)
        target = self.route(parsed)
        if isinstance(target, ZeroCallShape):
            return zero_call(self.platform, parsed, target.subtype, **target.fields)
        if isinstance(target, NoCallShape):
            raise no_call_error(target.code, f"{self.platform.value}: {target.reason}")
        return self.fetch(parsed, target, ctx)

    def _required_secret(self) -> str:
        """The secret, or a no-call UPSTREAM failure naming its unset variable (never exhausted: the
        URL is retried once the key is configured)."""
        if self._secret is None:
            raise no_call_error(ErrorCode.UPSTREAM, f"{self.key_variable} not set")
        return self._secret

    def _client(
        self,
        policy: HttpPolicy,
        *,
        auth_hosts: Collection[str] = (),
        auth_headers: Mapping[str, str] | None = None,
        auth_params: Mapping[str, str] | None = None,
        default_headers: Mapping[str, str] | None = None,
    ) -> ProviderHttp:
        """A fresh client for one `generate()` call (close it when the call ends)."""
        return ProviderHttp(
            policy,
            auth_hosts=auth_hosts,
            auth_headers=auth_headers,
            auth_params=auth_params,
            transport=self._transport,
            sleep=self._sleep,
            default_headers=default_headers,
        )


# ---------------------------------------------------------------- graphs


def zero_call(platform: Platform, parsed: CanonicalUrl, subtype: str, **fields: Any) -> GenerateResult:
    """A URL that carries no fetchable object (search pages, feeds, hashtags…): the graph is built
    from the URL alone, no request is made, `attempted` is False. The key is the URL
    itself, which is why such results are reusable forever (nothing there can change)."""
    content = SocialObject(
        platform=platform,
        platform_key=f"{platform.value}:{parsed.url}",
        subtype=subtype,
        fields={"url": parsed.url, **fields},
    )
    return finish(SocialGraph(groups=[GraphGroup(ref=ROOT_REF, content=content)]), requests=0)


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


def finish(graph: SocialGraph | Callable[[], list[GraphGroup]], *, requests: int) -> GenerateResult:
    """Check the graph with plan() (the writer's own contract check) and wrap it with `attempted`
    derived from `requests` (this call's requests only).

    `graph` is a built graph, or a callable making its groups: the callable is run through
    `build_graph`, so objects a provider item cannot form surface as SocialContractError too.
    A violation is raised as SocialContractError carrying the truthful `attempted` flag."""
    attempted = requests > 0
    if not isinstance(graph, SocialGraph):
        graph = build_graph(graph, attempted=attempted)
    try:
        plan(graph)
    except SocialContractError as exc:
        raise SocialContractError(str(exc), attempted=attempted) from None
    return GenerateResult(graph=graph, attempted=attempted, requests=requests)


# ---------------------------------------------------------------- links


def urls_in_text(*texts: object) -> list[str]:
    """Raw http(s) links written in free text (bios, captions, descriptions), trailing punctuation
    trimmed, in order of appearance; values that are not strings are skipped."""
    found: list[str] = []
    for text in texts:
        if not isinstance(text, str):
            continue
        found.extend(m.group(0).rstrip(_TRAILING_PUNCT) for m in _URL_IN_TEXT.finditer(text))
    return found


def canonical_links(raws: Iterable[object]) -> list[str]:
    """Outbound links in canonical form (`to_canonical_all`), de-duplicated in first-seen
    order; values it rejects (and non-strings) are skipped: a bad link in a bio must not fail the URL."""
    return to_canonical_all(raw if isinstance(raw, str) else None for raw in raws)


def website_link(value: str | None) -> str | None:
    """A profile's website field as a raw link: often written without a scheme ("example.com"),
    which a browser reads as https."""
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    if "://" not in text:
        text = "https://" + text
    return text


def display_urls(candidates: Iterable[object]) -> list[str]:
    """Display URLs exactly as received (never canonicalised); only non-empty strings,
    duplicates dropped."""
    out: list[str] = []
    for raw in candidates:
        if isinstance(raw, str) and raw and raw not in out:
            out.append(raw)
    return out


# ---------------------------------------------------------------- payload values


def first_str(*values: object) -> str | None:
    """The first non-empty string among `values`, as received."""
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


def as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def to_number(value: object, *, commas: bool = True) -> float | None:
    """A metric value as float: numbers and numeric strings ("123"; with `commas`, "1,234" too, as
    scrapers render counts), and a one-element list of either (a retweet's `viewCount` arrives as
    `[0]`); None for anything else. APIs that never group digits pass `commas=False`. A number past
    the bounds of an answer (`outbound.bounds`: longer than MAX_NUMBER_CHARS, or not finite: "NaN",
    "1e999") holds no count either."""
    if isinstance(value, list | tuple) and len(value) == 1:
        value = value[0]
    if isinstance(value, bool) or value is None:
        return None
    try:
        if isinstance(value, int | float):
            return finite(float(value))
        if isinstance(value, str):
            text = (value.replace(",", "") if commas else value).strip()
            return finite(float(text)) if len(text) <= MAX_NUMBER_CHARS else None
    except (ValueError, OverflowError):
        return None
    return None


def metrics(values: Mapping[str, Any], *, commas: bool = True) -> dict[str, float]:
    """Metric name -> float. A value the provider did not send (None, e.g. a hidden likeCount) is
    absent; one sent in a shape no number can be read from is absent too, and logged with its shape."""
    out: dict[str, float] = {}
    for name, raw in values.items():
        number = to_number(raw, commas=commas)
        if number is not None:
            out[name] = number
        elif raw is not None:
            log.warning("metric %r arrived as %s, which holds no finite number of at most %d characters: not recorded",
                        name, _shape(raw), MAX_NUMBER_CHARS)
    return out


def _shape(value: object) -> str:
    """A value's shape for a log line (its type and size, never a long value)."""
    if isinstance(value, list | tuple | dict):
        return f"{type(value).__name__} of {len(value)}"
    return f"{type(value).__name__} {str(value)[:40]!r}"


def pick_metrics(src: Mapping[str, Any], names: Mapping[str, str]) -> dict[str, float]:
    """`{our_name: number}` for every provider field in `names` that holds a number."""
    return metrics({ours: src.get(provider_name) for provider_name, ours in names.items()})


def pick_fields(src: Mapping[str, Any], names: Sequence[str]) -> dict[str, Any]:
    """The listed display fields that are present and not null (JSON scalars / lists as received)."""
    return {n: src[n] for n in names if src.get(n) is not None}


def item_object(
    platform: Platform,
    platform_key: str,
    subtype: str,
    item: Mapping[str, Any],
    *,
    fields: Sequence[str],
    metric_names: Mapping[str, str],
    links: Iterable[object] = (),
    media: Iterable[object] = (),
    avatar_url: str | None = None,
    icon_url: str | None = None,
    leading_fields: Mapping[str, Any] | None = None,
) -> SocialObject:
    """A graph object from one scraped provider item (Apify actors, twitterapi.io): the listed display
    fields as received (after `leading_fields`), the listed metrics as numbers, `links` canonical and
    `media` as received."""
    return SocialObject(
        platform=platform,
        platform_key=platform_key,
        subtype=subtype,
        fields={**(leading_fields or {}), **pick_fields(item, fields)},
        outbound_urls=canonical_links(links),
        media_urls=display_urls(media),
        avatar_url=avatar_url,
        icon_url=icon_url,
        metrics=pick_metrics(item, metric_names),
    )


# ---------------------------------------------------------------- provider error text


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
