"""Shortlink resolver: one of the two places a URL string changes (seed 003 §5, G-18; DESIGN §3).

`resolve(url)` follows a known shortener's redirect chain (t.co, bit.ly, vm.tiktok.com, reddit share
links, … — `domain.urls.is_shortlink` decides) and returns the location it ends at. The result is NOT
canonical (seed 003 §2: "final normalisation is the caller's job"); TokenProfileReader canonicalises.
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
- A Location must be http(s) (javascript:, file:, data: … are refused); a relative one is resolved
  against the current URL.
- SSRF: before every request the host is resolved with `resolve_host` and refused if ANY address is
  loopback, private, link-local, multicast, reserved, unspecified or otherwise not global (IPv4-mapped,
  6to4, Teredo and NAT64-embedded IPv4 are unwrapped and checked as IPv4). A literal IP host — including legacy forms such as
  `2130706433` or `0x7f.1` — is checked directly, and that check also applies to the final Location,
  which is not requested, so a shortener cannot point a token at an internal address.

Known gap (documented, accepted): DNS rebinding between the check and the connect. The transport
connects by host name and resolves again, so a hostile DNS server answering a public address to us
and a private one to the socket would slip through. Closing it needs a transport that connects to the
checked address with the original SNI/Host; the exposure is small because only known shortener hosts
are ever requested.
"""

from __future__ import annotations

import ipaddress
import logging
import re
import socket
from collections.abc import Callable, Sequence
from urllib.parse import urljoin, urlsplit, urlunsplit

import httpx

from social_recording.domain.urls import is_shortlink

log = logging.getLogger(__name__)

_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_ALLOWED_SCHEMES = frozenset({"http", "https"})
_LEGACY_IPV4 = re.compile(r"[0-9a-fx.]+")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_USER_AGENT = "social-recording-shortlink-resolver/1.0"
_LOG_CHARS = 300

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class ShortlinkError(ValueError):
    """A shortlink could not be resolved safely; the message names the URL and the reason."""

    def __init__(self, url: str, reason: str) -> None:
        super().__init__(f"cannot resolve shortlink {_display(url)}: {reason}")
        self.url = url
        self.reason = reason


def default_resolve_host(host: str) -> list[str]:
    """Every address the system resolver gives for `host` (all of them are checked)."""
    infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    out: list[str] = []
    for info in infos:
        address = str(info[4][0])
        if address not in out:
            out.append(address)
    return out


def blocked_reason(ip: IPAddress) -> str | None:
    """Why an address must not be contacted (SSRF), or None when it is a public address."""
    if isinstance(ip, ipaddress.IPv6Address):
        embedded = ip.ipv4_mapped or ip.sixtofour or (ip.teredo[1] if ip.teredo else None)
        if embedded is None and ip in _NAT64:
            embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if embedded is not None:
            inner = blocked_reason(embedded)
            return None if inner is None else f"{inner} (embedded in {ip})"
    for name in ("loopback", "private", "link_local", "multicast", "reserved", "unspecified"):
        if getattr(ip, f"is_{name}"):
            return f"{name.replace('_', '-')} address {ip}"
    if not ip.is_global:
        return f"non-global address {ip}"
    return None


def literal_ip(host: str) -> IPAddress | None:
    """The address when `host` is an IP literal, including legacy IPv4 spellings that resolvers accept
    (`2130706433`, `0x7f.1`, `127.1`); None for a name."""
    bare = host.strip("[]").lower()
    try:
        return ipaddress.ip_address(bare)
    except ValueError:
        pass
    if _LEGACY_IPV4.fullmatch(bare):
        try:
            return ipaddress.IPv4Address(socket.inet_aton(bare))
        except OSError:
            return None
    return None


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


class ShortlinkResolver:
    """Follows known shorteners' redirects, safely. Thread-safe; close it (or use `with`) when done."""

    def __init__(
        self,
        *,
        transport: httpx.BaseTransport | None = None,
        resolve_host: Callable[[str], Sequence[str]] = default_resolve_host,
        max_hops: int = 3,
        timeout_s: float = 5.0,
    ) -> None:
        if max_hops < 1:
            raise ValueError(f"max_hops must be >= 1, got {max_hops!r}")
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s!r}")
        self._resolve_host = resolve_host
        self._max_hops = max_hops
        # Requests go straight to the transport: httpx.Client parses a redirect's Location itself (even
        # with follow_redirects=False) and raises on a hostile one before we could name it; the client
        # is used only to build requests (default headers, the per-request timeout extension).
        self._transport = transport if transport is not None else httpx.HTTPTransport()
        self._client = httpx.Client(
            transport=self._transport,
            timeout=httpx.Timeout(timeout_s),
            follow_redirects=False,
            headers={"User-Agent": _USER_AGENT},
        )

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> ShortlinkResolver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def resolve(self, url: str) -> str:
        """The location a shortlink finally points at (not canonical), or `url` itself when it is not a
        shortlink. Raises ShortlinkError naming the URL and the reason."""
        if not _is_shortlink(url):
            return url
        current = url
        seen = {_loop_key(url)}
        hops = 0
        while True:
            self._check_host(url, current, resolve=True)
            location = self._next_location(url, current)
            if location is None:  # a non-redirect 2xx page: this is where the chain ends
                return current
            hops += 1
            self._check_location(url, location)
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
        if status in _REDIRECT_STATUSES and location:
            return _absolute(origin, current, location)
        status, location = self._ask("GET", origin, current)
        if status in _REDIRECT_STATUSES:
            if not location:
                raise ShortlinkError(origin, f"HTTP {status} without a Location at {_display(current)}")
            return _absolute(origin, current, location)
        if 200 <= status < 300:
            return None
        raise ShortlinkError(origin, f"HTTP {status} at {_display(current)}")

    def _ask(self, method: str, origin: str, current: str) -> tuple[int, str | None]:
        try:
            # The body is never read: a shortener's body is never needed, so at most the transport's
            # first buffer is ever received.
            request = self._client.build_request(method, current)
            response = self._transport.handle_request(request)
        except httpx.TimeoutException:
            raise ShortlinkError(origin, f"{method} {_display(current)} timed out") from None
        except (httpx.HTTPError, httpx.InvalidURL) as exc:
            raise ShortlinkError(
                origin, f"{method} {_display(current)} failed: {type(exc).__name__}"
            ) from None
        try:
            return response.status_code, response.headers.get("location")
        finally:
            response.close()

    def _check_location(self, origin: str, location: str) -> None:
        scheme = urlsplit(location).scheme.lower()
        if scheme not in _ALLOWED_SCHEMES:
            raise ShortlinkError(
                origin, f"refused Location with scheme {scheme or '(none)'!r}: {_display(location)}"
            )
        self._check_host(origin, location, resolve=False)

    def _check_host(self, origin: str, target: str, *, resolve: bool) -> None:
        """Refuse non-public targets. Literal IPs always; names only when we are about to request them
        (`resolve=True`): the final Location is not requested, and resolving it would make a dead
        website drop the token's link."""
        try:
            parts = urlsplit(target)
            host = parts.hostname
            _ = parts.port  # raises for a junk port
        except ValueError as exc:
            raise ShortlinkError(origin, f"unparseable URL {_display(target)}: {exc}") from None
        if parts.scheme.lower() not in _ALLOWED_SCHEMES:
            raise ShortlinkError(origin, f"refused scheme {parts.scheme!r}: {_display(target)}")
        if not host:
            raise ShortlinkError(origin, f"no host in {_display(target)}")
        ip = literal_ip(host)
        if ip is not None:
            reason = blocked_reason(ip)
            if reason is not None:
                raise ShortlinkError(origin, f"refused {reason} ({_display(target)})")
            return
        if host == "localhost" or host.endswith(".localhost"):
            raise ShortlinkError(origin, f"refused local host name {host!r}")
        if not resolve:
            return
        try:
            addresses = list(self._resolve_host(host))
        except (OSError, UnicodeError) as exc:
            raise ShortlinkError(origin, f"cannot resolve host {host!r}: {type(exc).__name__}") from None
        if not addresses:
            raise ShortlinkError(origin, f"host {host!r} resolved to no address")
        for address in addresses:
            try:
                resolved = ipaddress.ip_address(address)
            except ValueError:
                raise ShortlinkError(
                    origin, f"host {host!r} resolved to unparseable address {address!r}"
                ) from None
            reason = blocked_reason(resolved)
            if reason is not None:
                raise ShortlinkError(origin, f"refused host {host!r}: it resolves to {reason}")


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
