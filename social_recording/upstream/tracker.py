"""Client for the in-house token tracker.

Two endpoints: the range query that fixes a reconcile batch's candidates (`GET /api/v1/tokens`, period
axis = the tracker's `last_transfer_at`, upstream already keeps only investorCount > 1) and the address
lookup that carries a token's four social links (`POST /api/v1/tokens/by-addresses`).

Failure policy: 5 s timeout; 3 attempts with 1 s x 2^i back-off, and only for what a
retry can change (429, 5xx, timeouts, refused connections) — 400/401/403/404 give the same answer three
more times, so they fail at once. There is no fallback: token metadata has no substitute, and an empty
answer would make "token with no links" indistinguishable from "lookup failed", so the final failure
raises `TrackerError` and the caller decides (reconcile: the whole range fails, nothing is recorded; a
single address lookup: only that token fails).

One malformed item never sinks a batch: it is skipped with a warning naming its index, address and
reason, and reported (`range_report(...).malformed`, `scan_range(...).malformed`, the
`malformed` list of `tokens_by_addresses`) so reconcile can count and name it. An address whose own
item is malformed is not "unknown": `token_by_address` raises MalformedTrackerItem for it. A body that
is not `{"data": [...]}` is a broken upstream, not a bad item, and raises; so does one past the
bounds of an answer (`outbound.bounds`: a number, a string or a nesting too long), whose
TrackerError names the bound.

Redirects: the tracker's base URL is in-house (it may live on a private address) and is never
guarded; a redirect is followed only to that same origin (or its http -> https upgrade). Anything
else is refused, nothing is sent there, and the TrackerError names the refused target (no query).

The API key goes out only as the `X-API-Key` header. It is held as a `SecretStr` and never appears in
a log line, an exception message or `repr(client)`.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Literal, TypeVar
from urllib.parse import urlsplit, urlunsplit

import httpx
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from social_recording.domain.models import ensure_utc
from social_recording.outbound.bounds import TRACKER_BODY_BYTES, OutOfBounds
from social_recording.outbound.client import (
    BadRedirect,
    ConsumeBody,
    OnOutboundClient,
    OutboundClient,
    TooManyRedirects,
)
from social_recording.outbound.reader import ResponseTooLarge
from social_recording.outbound.retry import TRACKER, run_with_retries
from social_recording.upstream.streamed_items import BadEnvelope, NotJson, iter_data_items

log = logging.getLogger(__name__)

RANGE_PATH = "/api/v1/tokens"
BY_ADDRESSES_PATH = "/api/v1/tokens/by-addresses"

SERVICE = "tracker"
ATTEMPTS = TRACKER.attempts
"""Total attempts per call, the first included (3)."""
BACKOFF_BASE_S = TRACKER.delay_s
"""Sleep before retry i (i = 0, 1) is BACKOFF_BASE_S x 2^i: 1 s, then 2 s."""
MAX_REDIRECTS = 3
"""Same-origin redirects followed per request (a moved path, an http -> https upgrade)."""
MAX_ADDRESSES_PER_REQUEST = 100
"""Addresses per `by-addresses` POST; longer lists are split. Reconcile caps a batch at 100, so in
practice one request; the split keeps a caller's big list from becoming one huge body."""
MAX_RESPONSE_BYTES = TRACKER_BODY_BYTES
"""Largest tracker body we read (`outbound.bounds`, with the other bounds of an answer)."""

_RETRYABLE_STATUSES = frozenset({429})
_JUNK_LOG_CHARS = 200
_ADDRESS_CHARS = 100

Method = Literal["GET", "POST"]
M = TypeVar("M", bound=BaseModel)
K = TypeVar("K")


class TrackerError(RuntimeError):
    """The tracker finally failed (after retries when retrying could help).

    The message names the endpoint and the HTTP status (or the transport failure), never the key.
    `status` is the last HTTP status seen, None for a transport failure or a malformed body.
    """

    def __init__(self, message: str, *, endpoint: str, status: int | None = None, attempts: int = 1) -> None:
        super().__init__(message)
        self.endpoint = endpoint
        self.status = status
        self.attempts = attempts


class MalformedTrackerItem(TrackerError):
    """The tracker answered for `address`, but with an item we cannot read: not the same as "unknown"
    (which would make the token look like it does not exist)."""

    def __init__(self, address: str, reason: str, *, endpoint: str) -> None:
        super().__init__(f"tracker {endpoint}: item for {address} is malformed: {reason}", endpoint=endpoint)
        self.address = address
        self.reason = reason


@dataclass(frozen=True)
class MalformedItem:
    """One item of a tracker answer that was skipped. `index` is its position in the answer's
    `data`; `address` its tokenAddress when that is a string (stripped, truncated); `reason` the
    fields that failed and why (never the item's values)."""

    index: int
    address: str | None
    reason: str


@dataclass(frozen=True)
class RangeReport:
    """A range query's usable tokens and the items that had to be skipped."""

    tokens: list[TrackedToken] = field(default_factory=list)
    malformed: list[MalformedItem] = field(default_factory=list)


@dataclass(frozen=True)
class RangeScan(Generic[K]):
    """A range query read as it streamed: what the caller's `keep` made of each usable token (the
    tokens it answered None for are only counted), how many tokens were usable, and the items that
    had to be skipped."""

    kept: list[K] = field(default_factory=list)
    scanned: int = 0
    malformed: list[MalformedItem] = field(default_factory=list)


class _TrackerItem(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore", frozen=True)

    address: str = Field(alias="tokenAddress", min_length=1)
    symbol: str | None = Field(default=None, alias="tokenSymbol")

    @field_validator("address")
    @classmethod
    def _address(cls, v: str) -> str:
        v = v.strip()
        if not v:
            raise ValueError("tokenAddress is blank")
        return v

    @field_validator("symbol", mode="before")
    @classmethod
    def _symbol_text(cls, v: Any) -> Any:
        return _lenient_str(v)


class TrackedToken(_TrackerItem):
    """One item of the range query (the social URLs are deliberately not taken here —
    the recording path re-reads them through `by-addresses` so both paths consume one DTO)."""

    investor_count: int = Field(alias="investorCount", ge=0)
    first_transfer_at: datetime | None = Field(default=None, alias="firstTransferAt")
    last_transfer_at: datetime | None = Field(default=None, alias="lastTransferAt")

    @field_validator("investor_count", mode="before")
    @classmethod
    def _no_bool(cls, v: Any) -> Any:
        # pydantic's lax int would take True as 1: a boolean count is junk, not one investor.
        if isinstance(v, bool):
            raise ValueError("investorCount is a boolean")
        return v

    @field_validator("first_transfer_at", "last_transfer_at")
    @classmethod
    def _utc(cls, v: datetime | None) -> datetime | None:
        return None if v is None else ensure_utc(v)


class TokenInfo(_TrackerItem):
    """One item of `by-addresses`: the raw, untransformed social values (TokenProfileReader transforms)."""

    name: str | None = Field(default=None, alias="tokenName")
    image_url: str | None = Field(default=None, alias="imageUrl")
    website: str | None = None
    twitter: str | None = None
    telegram: str | None = None
    discord: str | None = None
    first_transfer_at: datetime | None = Field(default=None, alias="firstTransferAt")

    @field_validator("name", "image_url", "website", "twitter", "telegram", "discord", mode="before")
    @classmethod
    def _text(cls, v: Any) -> Any:
        # A non-string value becomes its text so the reader drops it *with a logged reason* instead of
        # the whole token failing validation (a `0` in `discord` must not lose the token).
        return _lenient_str(v)

    @field_validator("first_transfer_at")
    @classmethod
    def _utc(cls, v: datetime | None) -> datetime | None:
        return None if v is None else ensure_utc(v)


def _lenient_str(value: Any) -> Any:
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict | list):
        return json.dumps(value)[:_JUNK_LOG_CHARS]
    return str(value)


def iso_utc(value: datetime) -> str:
    """`2024-05-01T00:00:00.000Z` (JavaScript's toISOString, what the tracker's own clients send).
    A naive datetime is taken as UTC."""
    return ensure_utc(value).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _safe_base(base_url: str) -> str:
    """The base URL without userinfo, query or fragment: the only form that may reach a message."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _JUNK_LOG_CHARS else text[:_JUNK_LOG_CHARS] + "…"


def _reason(exc: ValidationError) -> str:
    return "; ".join(
        f"{'.'.join(str(p) for p in err['loc']) or 'item'}: {err['msg']}" for err in exc.errors()
    )


class TrackerClient(OnOutboundClient):
    """Synchronous tracker client; one instance may be shared by the threads of one process. Close it
    (or use it as a context manager) to release connections."""

    def __init__(
        self,
        base_url: str,
        api_key: SecretStr | None,
        af_group_ids: Sequence[str],
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        timeout_s: float = 5.0,
    ) -> None:
        parts = urlsplit(base_url.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"tracker base_url must be an http(s) URL, got {_safe_base(base_url)!r}")
        if parts.username is not None or parts.password is not None:
            # A credential in the URL would travel in every log line httpx or we write about requests.
            raise ValueError("tracker base_url must not carry credentials; pass the key as api_key")
        if parts.query or parts.fragment:
            raise ValueError(
                f"tracker base_url must not carry a query or fragment, got {_safe_base(base_url)!r}"
            )
        if timeout_s <= 0:
            raise ValueError(f"tracker timeout_s must be > 0, got {timeout_s!r}")
        if isinstance(af_group_ids, str):
            raise ValueError(f"af_group_ids must be a sequence of ids, not the string {af_group_ids!r}")
        self._base = base_url.strip().rstrip("/")
        self._safe_base = _safe_base(self._base)
        self._origin = httpx.URL(self._base)
        self._api_key = api_key
        self._af_group_ids = _checked_group_ids(af_group_ids)
        self._sleep = sleep
        self._timeout_s = timeout_s
        self._out = OutboundClient(
            service=SERVICE,
            paid=False,
            timeout=httpx.Timeout(timeout_s),
            max_bytes=MAX_RESPONSE_BYTES,
            transport=transport,
        )

    def __repr__(self) -> str:
        key = "set" if self._api_key is not None else "none"
        return f"TrackerClient(base_url={self._safe_base!r}, af_group_ids={list(self._af_group_ids)!r}, api_key=<{key}>)"

    # ---------------------------------------------------------------- public API

    def tokens_in_range(
        self, start: datetime, end: datetime, af_group_ids: Sequence[str] | None = None
    ) -> list[TrackedToken]:
        """Tokens whose `last_transfer_at` falls in [start, end) per the tracker (that is last trade,
        not creation). Raises ValueError for start >= end or no group ids, TrackerError when the
        tracker finally fails. Malformed items are skipped with a warning (`range_report` lists them)."""
        return self.range_report(start, end, af_group_ids).tokens

    def range_report(
        self, start: datetime, end: datetime, af_group_ids: Sequence[str] | None = None
    ) -> RangeReport:
        """`tokens_in_range`, plus the malformed items it skipped (index, address, reason)."""
        scan = self.scan_range(start, end, lambda token: token, af_group_ids)
        return RangeReport(tokens=scan.kept, malformed=scan.malformed)

    def scan_range(
        self,
        start: datetime,
        end: datetime,
        keep: Callable[[TrackedToken], K | None],
        af_group_ids: Sequence[str] | None = None,
    ) -> RangeScan[K]:
        """The range query, parsed item by item as the answer streams: each usable token is passed
        to `keep`, and only what it returns (not None) is held, so a window of any size costs the
        memory of what the caller keeps. A retried request starts the scan again from nothing. Same
        errors as `tokens_in_range`."""
        start_utc, end_utc = ensure_utc(start), ensure_utc(end)
        if start_utc >= end_utc:
            raise ValueError(
                f"tokens_in_range: start must be before end, got start={iso_utc(start)} end={iso_utc(end)}"
            )
        groups = self._af_group_ids if af_group_ids is None else _checked_group_ids(af_group_ids)
        if not groups:
            raise ValueError(
                "tokens_in_range: af_group_ids is empty; the tracker requires at least one group"
            )
        params = {
            "startDate": iso_utc(start_utc),
            "endDate": iso_utc(end_utc),
            "afGroupIds": ",".join(groups),
        }

        def scan(chunks: Iterator[bytes]) -> RangeScan[K]:
            kept: list[K] = []
            malformed: list[MalformedItem] = []
            scanned = 0
            for index, item in enumerate(iter_data_items(chunks)):
                token = _read_item(index, item, TrackedToken, RANGE_PATH)
                if isinstance(token, MalformedItem):
                    malformed.append(token)
                    continue
                scanned += 1
                if (made := keep(token)) is not None:
                    kept.append(made)
            return RangeScan(kept, scanned, malformed)

        endpoint = f"GET {RANGE_PATH}"
        answer: RangeScan[K] = self._request("GET", RANGE_PATH, endpoint, params=params, json_body=None, consume=scan)
        return answer

    def tokens_by_addresses(
        self, addresses: Sequence[str], *, malformed: list[MalformedItem] | None = None
    ) -> dict[str, TokenInfo]:
        """Token info per address. An address the tracker does not know is absent from the result.
        Empty input makes no request. Raises TrackerError when the tracker finally fails.

        Items that could not be read are skipped (with a warning) and, when `malformed` is given,
        appended to it (`index` is the position in the answer of that item's request; long address
        lists are sent in chunks of MAX_ADDRESSES_PER_REQUEST)."""
        if isinstance(addresses, str):
            raise ValueError(
                f"tokens_by_addresses takes a sequence of addresses, not the string {addresses!r}"
            )
        wanted: list[str] = []
        seen: set[str] = set()
        for raw in addresses:
            if not isinstance(raw, str) or not raw.strip():
                raise ValueError(f"tokens_by_addresses: invalid address {raw!r}")
            address = raw.strip()
            if address not in seen:
                seen.add(address)
                wanted.append(address)
        found: dict[str, TokenInfo] = {}
        for i in range(0, len(wanted), MAX_ADDRESSES_PER_REQUEST):
            chunk = wanted[i : i + MAX_ADDRESSES_PER_REQUEST]
            data = self._data("POST", BY_ADDRESSES_PATH, json_body={"addresses": chunk})
            asked = set(chunk)
            infos, bad = _parse_items(data, TokenInfo, BY_ADDRESSES_PATH)
            if malformed is not None:
                malformed.extend(bad)
            for info in infos:
                if info.address not in asked:
                    log.warning(
                        "tracker %s returned address %s that was not asked for; ignored",
                        BY_ADDRESSES_PATH,
                        info.address,
                    )
                    continue
                found.setdefault(info.address, info)
        return found

    def token_by_address(self, address: str) -> TokenInfo | None:
        """One token's info, or None when the tracker does not know the address. Raises
        MalformedTrackerItem when the tracker's item for this address cannot be read."""
        wanted = address.strip() if isinstance(address, str) else address
        malformed: list[MalformedItem] = []
        info = self.tokens_by_addresses([address], malformed=malformed).get(wanted)
        if info is None:
            for item in malformed:
                if item.address == wanted:
                    raise MalformedTrackerItem(wanted, item.reason, endpoint=f"POST {BY_ADDRESSES_PATH}")
        return info

    # ---------------------------------------------------------------- transport

    def _data(
        self,
        method: Method,
        path: str,
        *,
        params: dict[str, str] | None = None,
        json_body: dict[str, Any] | None = None,
    ) -> list[Any]:
        """The items of a small answer's `data`, read by the same reader as a range answer."""
        items: list[Any] = self._request(method, path, f"{method} {path}", params=params, json_body=json_body,
                                         consume=lambda chunks: list(iter_data_items(chunks)))
        return items

    def _headers(self) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if self._api_key is not None:
            headers["X-API-Key"] = self._api_key.get_secret_value()
        return headers

    def _request(
        self,
        method: Method,
        path: str,
        endpoint: str,
        *,
        params: dict[str, str] | None,
        json_body: dict[str, Any] | None,
        consume: ConsumeBody,
    ) -> Any:
        url = httpx.URL(self._base + path)
        attempts = 0

        def attempt() -> Any:
            nonlocal attempts
            attempts += 1
            return self._attempt(method, url, endpoint, attempts, params=params, json_body=json_body, consume=consume)

        def on_retry(number: int, exc: BaseException, delay: float) -> None:
            log.warning(
                "tracker %s: %s; retrying in %.0f s (attempt %d/%d)",
                endpoint,
                exc,
                delay,
                number + 1,
                ATTEMPTS,
            )

        try:
            return run_with_retries(
                attempt,
                TRACKER,
                retry_if=lambda exc: isinstance(exc, _Retryable),
                sleep=self._sleep,
                on_retry=on_retry,
            )
        except _Retryable as last:
            raise TrackerError(
                f"tracker {endpoint} failed after {ATTEMPTS} attempts: {last}",
                endpoint=endpoint,
                status=last.status,
                attempts=ATTEMPTS,
            ) from None

    def _attempt(
        self,
        method: Method,
        url: httpx.URL,
        endpoint: str,
        attempt: int,
        *,
        params: dict[str, str] | None,
        json_body: dict[str, Any] | None,
        consume: ConsumeBody,
    ) -> Any:
        """One attempt: what `consume` made of a 2xx answer's body while it streamed; _Retryable for
        what a retry can change (429, 5xx, timeouts, refused connections, also mid-body);
        TrackerError for everything else."""
        answered: list[int] = []  # the status of the answer whose body is read (a streamed one's, if it breaks)

        def read_body(status: int, headers: httpx.Headers) -> bool:
            answered.append(status)
            return 200 <= status < 300

        try:
            exchange = self._out.follow(
                method,
                url,
                params=params,
                json=json_body,
                headers=self._headers(),
                check_redirect=lambda current, target: self._check_redirect(endpoint, target),
                max_redirects=MAX_REDIRECTS,
                read_body=read_body,
                consume=consume,
            )
        except NotJson:
            raise TrackerError(
                f"malformed response from tracker {endpoint}: body is not JSON (HTTP {answered[-1]})",
                endpoint=endpoint, status=answered[-1], attempts=attempt,
            ) from None
        except OutOfBounds as exc:
            raise TrackerError(f"malformed response from tracker {endpoint}: {exc}",
                               endpoint=endpoint, status=answered[-1], attempts=attempt) from None
        except BadEnvelope as exc:
            raise TrackerError(f'malformed response from tracker {endpoint}: expected {{"data": [...]}}, got {exc}',
                               endpoint=endpoint) from None
        except httpx.TimeoutException as exc:
            raise _Retryable(f"timed out ({type(exc).__name__})") from None
        except httpx.ConnectError as exc:
            raise _Retryable(f"connection failed ({type(exc).__name__})") from None
        except ResponseTooLarge:
            raise TrackerError(
                f"tracker {endpoint}: response larger than {MAX_RESPONSE_BYTES} bytes", endpoint=endpoint
            ) from None
        except TooManyRedirects:
            raise TrackerError(
                f"tracker {endpoint}: more than {MAX_REDIRECTS} redirects", endpoint=endpoint, attempts=attempt
            ) from None
        except BadRedirect as exc:
            raise TrackerError(f"tracker {endpoint}: {exc} in a redirect", endpoint=endpoint, attempts=attempt) from None
        except httpx.HTTPError as exc:
            # Not a condition a retry changes (protocol error, bad URL, ...): fail now.
            raise TrackerError(
                f"tracker {endpoint} failed: {type(exc).__name__}: {_short(str(exc))}",
                endpoint=endpoint,
                attempts=attempt,
            ) from None
        status = exchange.status
        if 200 <= status < 300:
            return exchange.parsed
        if status in _RETRYABLE_STATUSES or status >= 500:
            raise _Retryable(f"HTTP {status}", status=status)
        raise TrackerError(
            f"tracker {endpoint} failed: HTTP {status} (not retryable)",
            endpoint=endpoint,
            status=status,
            attempts=attempt,
        )

    def _check_redirect(self, endpoint: str, target: httpx.URL) -> None:
        """Follow a redirect only to the tracker's own origin, or its http -> https upgrade: the
        in-house base may be a private address, and the key must not leave it."""
        if not _same_origin(self._origin, target):
            raise TrackerError(
                f"tracker {endpoint}: refused redirect to {_safe_base(str(target))!r} "
                f"(not the tracker's own origin {self._safe_base!r})",
                endpoint=endpoint,
            )


class _Retryable(Exception):
    """An attempt failed in a way a retry can change; the message says how (never the key)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def _same_origin(origin: httpx.URL, target: httpx.URL) -> bool:
    """Same scheme, host and port as `origin`, or the https upgrade of an http origin on the same host
    (default ports, or the same explicit port)."""
    if target.host.lower().rstrip(".") != origin.host.lower().rstrip("."):
        return False
    if target.scheme == origin.scheme:
        return _port(target) == _port(origin)
    if origin.scheme == "http" and target.scheme == "https":
        return _port(target) == 443 if origin.port is None else target.port == origin.port
    return False


def _port(url: httpx.URL) -> int | None:
    if url.port is not None:
        return url.port
    return {"http": 80, "https": 443}.get(url.scheme)


def _checked_group_ids(ids: Sequence[str]) -> tuple[str, ...]:
    if isinstance(ids, str):
        raise ValueError(f"af_group_ids must be a sequence of ids, not the string {ids!r}")
    out: list[str] = []
    for raw in ids:
        if not isinstance(raw, str) or not raw.strip() or "," in raw:
            raise ValueError(f"invalid af group id {raw!r}: must be a non-empty string without commas")
        if raw.strip() not in out:
            out.append(raw.strip())
    return tuple(out)


def _parse_items(data: list[Any], model: type[M], path: str) -> tuple[list[M], list[MalformedItem]]:
    """Validate each item; a bad one is logged (index, address, reason), reported and skipped, never
    fatal."""
    good: list[M] = []
    bad: list[MalformedItem] = []
    for index, item in enumerate(data):
        read = _read_item(index, item, model, path)
        if isinstance(read, MalformedItem):
            bad.append(read)
        else:
            good.append(read)
    return good, bad


def _read_item(index: int, item: Any, model: type[M], path: str) -> M | MalformedItem:
    """One item validated, or what is reported of it when it cannot be read (logged here)."""
    if not isinstance(item, dict):
        log.warning("tracker %s: item %d skipped: not an object (%s)", path, index, _short(item))
        return MalformedItem(index, None, f"not an object ({type(item).__name__})")
    address = item.get("tokenAddress")
    try:
        return model.model_validate(item)
    except ValidationError as exc:
        reason = _reason(exc)
        log.warning(
            "tracker %s: item %d (tokenAddress=%s) skipped: %s",
            path,
            index,
            _short(address),
            reason,
        )
        return MalformedItem(index, _item_address(address), _truncated(reason))


def _item_address(value: Any) -> str | None:
    """A malformed item's tokenAddress as reported: a non-blank string, stripped and truncated."""
    if not isinstance(value, str) or not value.strip():
        return None
    return _truncated(value.strip(), _ADDRESS_CHARS)


def _truncated(text: str, limit: int = _JUNK_LOG_CHARS) -> str:
    return text if len(text) <= limit else text[:limit] + "…"
