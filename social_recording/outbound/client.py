"""The one client core under every outbound client (providers, tracker, shortlink resolver).

What it owns, so no client can forget one of them:
- the order around each request handed to the transport (every retry and redirect hop): the limiter
  may hold it (`acquire`), the request observer may veto it (`before_request`, raises CallVetoed and
  nothing is sent), and once the transport has it the request counts as made (`request_sent`, also
  when no response ever arrives: it may have reached the other side);
- a provider's "slow down" (429 with a wait header, or a spent window with its reset) reported to
  the limiter;
- the size-capped body read: whole, or chunk by chunk into the caller's parser (`consume`), which
  keeps only what it needs of a large answer;
- manual redirect following, where every hop's target is first passed to the caller's check
  (the public-address guard for providers, the same-origin rule for the tracker). Nothing is ever
  sent to a target the check refused.

Requests go straight to the transport: `httpx.Client.send` parses a redirect's Location itself (even
without following it) and raises on a hostile one before we could name it; an httpx client is used
only to build requests (default headers, the per-request timeouts), one per (timeout, headers) shared
by every client with them (`request_builder`).

Errors are left as raised (httpx's, ResponseTooLarge, the redirect errors below): each client maps
them to its own error type and retry rule.
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Self

import httpx

from social_recording.outbound import observe
from social_recording.outbound.guard import ResolveHost, wire_host
from social_recording.outbound.limits import RequestLimiter, penalty_seconds
from social_recording.outbound.network import unwrap
from social_recording.outbound.reader import iter_capped, read_capped

log = logging.getLogger(__name__)

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})

RedirectCheck = Callable[[httpx.URL, httpx.URL], None]
"""(the URL that answered with a redirect, its target) -> None, or raise to refuse the target."""
PrepareHop = Callable[[httpx.URL], tuple[httpx.URL, Mapping[str, str]]]
"""The URL of one hop -> (the URL to send, the headers to send): where auth is scoped per host."""


class TooManyRedirects(Exception):
    def __init__(self, limit: int) -> None:
        super().__init__(f"more than {limit} redirects")
        self.limit = limit


class BadRedirect(Exception):
    """A redirect whose Location is not a URL we can resolve (nothing was sent to it)."""


@dataclass(frozen=True)
class Exchange:
    """One answered request: status, headers, the body (b"" when not read, or when a `consume`
    parsed it as it streamed: `parsed` holds what that returned) and the URL it was sent to (for a
    followed chain: the last hop's URL before `PrepareHop` added anything)."""

    status: int
    headers: httpx.Headers
    body: bytes
    url: httpx.URL
    parsed: Any = None


ConsumeBody = Callable[[Iterator[bytes]], Any]
"""The body's chunks (size-capped, as they stream) -> what the caller keeps of them: a large answer is
parsed while it arrives instead of being held whole."""


@dataclass
class SentCount:
    """Requests handed to the transport during one logical call (a shared client's own counter
    spans all calls; `attempted` must be judged per call)."""

    n: int = 0


def is_redirect(status: int, headers: httpx.Headers) -> bool:
    return status in REDIRECT_STATUSES and "location" in headers


def redirect_target(current: httpx.URL, location: str) -> httpx.URL:
    """The absolute target of a Location header (relative ones resolved against `current`)."""
    location = location.strip()
    if any(ord(c) < 0x20 or c == "\x7f" for c in location):
        raise BadRedirect("Location with control characters")
    try:
        return current.join(location)
    except httpx.InvalidURL:
        raise BadRedirect("invalid Location") from None


def redirected_method(status: int, method: str, body: Any) -> tuple[str, Any]:
    """The method and body of the next hop (RFC 9110, as browsers do): 303 becomes GET (HEAD stays
    HEAD), 301/302 turn a POST into a GET; 307/308 keep both."""
    upper = method.upper()
    if (status == 303 and upper != "HEAD") or (status in (301, 302) and upper == "POST"):
        return "GET", None
    return method, body


class _BuildsOnly(httpx.BaseTransport):
    """The transport of a request builder, which never sends: `OutboundClient.send` hands requests to
    the real transport itself."""

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        raise RuntimeError("a request builder sends nothing; OutboundClient.send hands requests to the transport")


@functools.lru_cache(maxsize=64)
def request_builder(timeout: tuple[float | None, float | None, float | None, float | None],
                    headers: tuple[tuple[str, str], ...]) -> httpx.Client:
    """The httpx client that builds the requests of every client with this timeout and these default
    headers. A client is made per generate() call, and an httpx client of its own cost it more than
    the rest of its set-up (docs/architecture.md, "Per-URL bookkeeping"); building a request only
    reads the builder, so threads share it. `timeout`: (connect, read, write, pool) seconds."""
    connect, read, write, pool = timeout
    return httpx.Client(
        transport=_BuildsOnly(),
        timeout=httpx.Timeout(connect=connect, read=read, write=write, pool=pool),
        follow_redirects=False,
        headers=dict(headers),
        trust_env=False,
    )


class OutboundClient:
    """One service's connection to the outside (see the module doc). Thread-safe. It sends on the given
    transport or, without one, on the process's real-network transport, and never closes either:
    other clients send on them too (`close()` stays, for the clients' context managers)."""

    def __init__(
        self,
        *,
        service: str,
        paid: bool,
        timeout: httpx.Timeout,
        max_bytes: int,
        transport: httpx.BaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
        resolve_host: ResolveHost | None = None,
        limiter: RequestLimiter | None = None,
    ) -> None:
        if max_bytes < 1:
            raise ValueError(f"max_bytes must be >= 1, got {max_bytes!r}")
        inner, self.resolve_host, self.limiter = unwrap(transport, resolve_host=resolve_host, limiter=limiter)
        self.service = service
        self.paid = paid
        self.max_bytes = max_bytes
        self._transport: httpx.BaseTransport = inner
        self._builder = request_builder((timeout.connect, timeout.read, timeout.write, timeout.pool),
                                        tuple((headers or {}).items()))
        self._lock = threading.Lock()
        self.requests_made = 0
        """Requests handed to the transport over this client's life."""

    def __repr__(self) -> str:
        return f"OutboundClient(service={self.service!r}, paid={self.paid}, requests_made={self.requests_made})"

    def close(self) -> None:
        """Nothing to release: the transport is shared (the httpx client only builds requests, and
        closing it would close the transport)."""

    def build(
        self,
        method: str,
        url: httpx.URL | str,
        *,
        params: Mapping[str, str] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> httpx.Request:
        return self._builder.build_request(
            method, url, params=dict(params) if params else None, json=json, headers=dict(headers or {})
        )

    def send(
        self,
        request: httpx.Request,
        *,
        read_body: Callable[[int, httpx.Headers], bool] = lambda status, headers: True,
        count: SentCount | None = None,
        consume: ConsumeBody | None = None,
    ) -> Exchange:
        """Hand one request to the transport (no redirects followed) and read the body when
        `read_body(status, headers)` says so, within the size cap: whole, or through `consume` as it
        streams."""
        self.limiter.acquire(self.service)
        observe.before_request(service=self.service, paid=self.paid)
        try:
            response = self._transport.handle_request(request)
        finally:
            self._sent(count)
        try:
            response.request = request
            self._report_rate_limit(response)
            if not read_body(response.status_code, response.headers):
                return Exchange(response.status_code, response.headers, b"", request.url)
            if consume is not None:
                parsed = consume(iter_capped(response, self.max_bytes))
                return Exchange(response.status_code, response.headers, b"", request.url, parsed)
            return Exchange(response.status_code, response.headers, read_capped(response, self.max_bytes), request.url)
        finally:
            response.close()

    def follow(
        self,
        method: str,
        url: httpx.URL,
        *,
        check_redirect: RedirectCheck,
        max_redirects: int,
        params: Mapping[str, str] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        prepare: PrepareHop | None = None,
        read_body: Callable[[int, httpx.Headers], bool] = lambda status, headers: True,
        count: SentCount | None = None,
        consume: ConsumeBody | None = None,
    ) -> Exchange:
        """Send `method url` and follow its redirects by hand, at most `max_redirects` of them, each
        target passed to `check_redirect` BEFORE anything is sent to it. `params` apply to the first
        hop only (a Location carries its own query). Raises TooManyRedirects, BadRedirect, whatever
        `check_redirect` raises, and what `send` raises."""
        hops = 0
        if params:
            url = url.copy_merge_params(dict(params))
        while True:
            send_url, hop_headers = prepare(url) if prepare is not None else (url, headers or {})
            request = self.build(method, send_url, json=json, headers=hop_headers)
            exchange = self.send(
                request,
                read_body=lambda status, hdrs: not is_redirect(status, hdrs) and read_body(status, hdrs),
                count=count,
                consume=consume,
            )
            if not is_redirect(exchange.status, exchange.headers):
                return Exchange(exchange.status, exchange.headers, exchange.body, url, exchange.parsed)
            hops += 1
            if hops > max_redirects:
                raise TooManyRedirects(max_redirects)
            target = redirect_target(url, exchange.headers["location"])
            check_redirect(url, target)
            log.debug("%s: HTTP %d redirect to host %s", self.service, exchange.status, wire_host(target))
            method, json = redirected_method(exchange.status, method, json)
            url = target

    # ------------------------------------------------------------------ private

    def _sent(self, count: SentCount | None) -> None:
        with self._lock:
            self.requests_made += 1
        if count is not None:
            count.n += 1
        observe.request_sent(service=self.service, paid=self.paid)

    def _report_rate_limit(self, response: httpx.Response) -> None:
        wait = penalty_seconds(response.status_code, response.headers)
        if wait is not None:
            self.limiter.penalise(self.service, wait)


class OnOutboundClient:
    """A client built on one `OutboundClient` (its `_out`), as the tracker's and the shortlink resolver's:
    closing it closes that core, and it closes itself at the end of a `with`."""

    _out: OutboundClient

    def close(self) -> None:
        self._out.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
