"""Shortlink resolver: one of the two places a URL string changes.

`resolve(url)` follows a known shortener's redirect chain (t.co, bit.ly, vm.tiktok.com, reddit share
links, … — `domain.urls.is_shortlink` decides) and returns the location it ends at. The result is NOT
canonical (final normalisation is the caller's job): TokenProfileReader canonicalises.
Anything that is not a shortlink is returned unchanged without a request.

Why these rules:
- Following stops at the first location that is not itself a shortlink: we need the shortener's
  answer, not the target site's, so the resolver never requests arbitrary sites (fewer requests, less
  SSRF surface, and the target is fetched later by its platform's own client).
- At most `max_hops` redirects are followed (3): a 4th needed hop, or a URL seen twice, is an error,
  not a longer wait. Each request has its own `timeout_s` (5 s; httpx applies it to connect, each read
  and the pool wait).
- HEAD first (no body); GET when HEAD is not a redirect with a Location (some shorteners answer HEAD
  with 405/403/400 or 200). The GET body is never read.
- A Location must be http(s) (javascript:, file:, data: … are refused) and at most
  MAX_LOCATION_CHARS long (`outbound.bounds`); a relative one is resolved against the current URL.
- SSRF: before every request the host passes the shared outbound guard (`outbound.guard`): it is
  resolved with `resolve_host` and refused if ANY address is not public. A literal IP host or a
  `localhost` name is checked directly, and that check also applies to the final Location, which is
  not requested, so a shortener cannot point a token at an internal address. The guard's known gap
  (DNS rebinding) is small here because only known shortener hosts are ever requested.
- A failure says whether it is `transient` (the profile reader keeps such values to try again later).
"""

from __future__ import annotations

import logging
from urllib.parse import urljoin, urlsplit, urlunsplit

import httpx

from social_recording.domain.urls import is_shortlink
from social_recording.outbound.bounds import MAX_LOCATION_CHARS, OverLimit
from social_recording.outbound.client import REDIRECT_STATUSES, OnOutboundClient, OutboundClient
from social_recording.outbound.guard import (
    ALLOWED_SCHEMES,
    ResolveHost,
    UnresolvedHost,
    UnsafeTarget,
    blocked_reason,
    check_target,
    default_resolve_host,
    literal_ip,
)

log = logging.getLogger(__name__)

SERVICE = "shortlink"
_USER_AGENT = "social-recording-shortlink-resolver/1.0"
_LOG_CHARS = 300
_MAX_BYTES = 1
"""No body is ever read: a shortener's answer is its status and Location."""

__all__ = [
    "ShortlinkError",
    "ShortlinkResolver",
    "blocked_reason",
    "default_resolve_host",
    "literal_ip",
]


class ShortlinkError(ValueError):
    """A shortlink could not be resolved safely; the message names the URL and the reason.

    `transient` says whether trying again later may succeed: True for timeouts, connection and DNS
    failures, HTTP 5xx and 429; False for what the same request will answer again (404 and other
    4xx, a refused or hostile redirect, too many hops, a loop, a junk URL or Location)."""

    def __init__(self, url: str, reason: str, *, transient: bool = False) -> None:
        super().__init__(f"cannot resolve shortlink {_display(url)}: {reason}")
        self.url = url
        self.reason = reason
        self.transient = transient


def _display(url: str) -> str:
    """A URL fit for a message: userinfo removed, length capped."""
    try:
        parts = urlsplit(url)
        if parts.username is not None or parts.password is not None:
            host = parts.hostname or ""
            netloc = host if parts.port is None else f"{host}:{parts.port}"
            url = urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
    except ValueError:
        pass
    text = repr(url)
    return text if len(text) <= _LOG_CHARS else text[:_LOG_CHARS] + "…'"


class ShortlinkResolver(OnOutboundClient):
    """Follows known shorteners' redirects, safely. Thread-safe; close it (or use `with`) when done."""

    def __init__(
        self,
        *,
        transport: httpx.BaseTransport | None = None,
        resolve_host: ResolveHost | None = None,
        max_hops: int = 3,
        timeout_s: float = 5.0,
    ) -> None:
        """`resolve_host` None: the resolver a `Network` transport carries, else the system one."""
        if max_hops < 1:
            raise ValueError(f"max_hops must be >= 1, got {max_hops!r}")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s!r}")
        self._max_hops = max_hops
        self._out = OutboundClient(
            service=SERVICE,
            paid=False,
            timeout=httpx.Timeout(timeout_s),
            max_bytes=_MAX_BYTES,
            transport=transport,
            headers={"User-Agent": _USER_AGENT},
            resolve_host=resolve_host,
        )
        self._resolve_host = self._out.resolve_host

    def resolve(self, url: str) -> str:
        """The location a shortlink finally points at (not canonical), or `url` itself when it is not a
        shortlink. Raises ShortlinkError naming the URL, the reason and whether it is transient.
        CallVetoed from the request observer propagates unchanged."""
        if not _is_shortlink(url):
            return url
        current = url
        seen = {_loop_key(url)}
        hops = 0
        while True:
            self._check(url, current, resolve=True)
            location = self._next_location(url, current)
            if location is None:  # a non-redirect 2xx page: this is where the chain ends
                return current
            hops += 1
            self._check(url, location, resolve=False)
            key = _loop_key(location)
            if key in seen:
                raise ShortlinkError(url, f"redirect loop at {_display(location)}")
            seen.add(key)
            if not _is_shortlink(location):
                log.debug("shortlink %s resolved to %s in %d hop(s)", _display(url), _display(location), hops)
                return location
            if hops >= self._max_hops:
                raise ShortlinkError(
                    url,
                    f"more than {self._max_hops} redirects (hop {hops} leads to shortlink {_display(location)})",
                )
            current = location

    # ------------------------------------------------------------------ steps

    def _next_location(self, origin: str, current: str) -> str | None:
        """One hop: HEAD, then GET when HEAD did not redirect. The absolute Location, or None when the
        server answered a final 2xx page."""
        status, location = self._ask("HEAD", origin, current)
        if status in REDIRECT_STATUSES and location:
            return _absolute(origin, current, location)
        status, location = self._ask("GET", origin, current)
        if status in REDIRECT_STATUSES:
            if not location:
                raise ShortlinkError(origin, f"HTTP {status} without a Location at {_display(current)}")
            return _absolute(origin, current, location)
        if 200 <= status < 300:
            return None
        raise ShortlinkError(
            origin, f"HTTP {status} at {_display(current)}", transient=status == 429 or status >= 500
        )

    def _ask(self, method: str, origin: str, current: str) -> tuple[int, str | None]:
        try:
            request = self._out.build(method, current)
            # The body is never read: a shortener's body is never needed, so at most the transport's
            # first buffer is ever received.
            exchange = self._out.send(request, read_body=lambda status, headers: False)
        except httpx.TimeoutException:
            raise ShortlinkError(origin, f"{method} {_display(current)} timed out", transient=True) from None
        except httpx.TransportError as exc:
            raise ShortlinkError(
                origin, f"{method} {_display(current)} failed: {type(exc).__name__}", transient=True
            ) from None
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise ShortlinkError(
                origin, f"{method} {_display(current)} failed: {type(exc).__name__}"
            ) from None
        location = exchange.headers.get("location")
        if location is not None and len(location) > MAX_LOCATION_CHARS:
            bound = OverLimit("a Location", MAX_LOCATION_CHARS, "characters")
            raise ShortlinkError(origin, f"refused Location from {_display(current)}: {bound}")
        return exchange.status, location

    def _check(self, origin: str, target: str, *, resolve: bool) -> None:
        """Refuse non-http(s) and non-public targets (the shared redirect guard). Literal IPs and local
        names always; names are resolved only when we are about to request them (`resolve=True`): the
        final Location is not requested, and resolving it would make a dead website drop the token's
        link."""
        scheme = _scheme(target)
        if scheme not in ALLOWED_SCHEMES:
            raise ShortlinkError(origin, f"refused Location with scheme {scheme or '(none)'!r}: {_display(target)}")
        try:
            check_target(target, self._resolve_host if resolve else None)
        except UnresolvedHost as exc:
            raise ShortlinkError(origin, str(exc), transient=True) from None
        except UnsafeTarget as exc:
            raise ShortlinkError(origin, f"refused {exc.reason} ({_display(target)})") from None


def _scheme(url: str) -> str:
    try:
        return urlsplit(url).scheme.lower()
    except ValueError:
        return ""


def _is_shortlink(url: str) -> bool:
    try:
        return is_shortlink(url)
    except ValueError:
        return False


def _absolute(origin: str, current: str, location: str) -> str:
    location = location.strip()
    if any(ord(c) < 0x20 or c == "\x7f" for c in location):
        raise ShortlinkError(origin, f"refused Location with control characters: {_display(location)}")
    try:
        return urljoin(current, location)
    except ValueError as exc:
        raise ShortlinkError(origin, f"unparseable Location {_display(location)}: {exc}") from None


def _loop_key(url: str) -> str:
    """Scheme and host are case-insensitive; a loop through t.co/A and T.CO/A is still a loop."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path or "/", parts.query, ""))
