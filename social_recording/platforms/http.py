"""The HTTP layer every provider client goes through: timeouts, retries (a paid
call is made exactly once), the size cap, a key attached only to its provider's own hosts, and the
redirect guard, on the shared outbound core (docs/architecture.md, "Outbound requests")."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from social_recording.outbound.bounded_json import load_json
from social_recording.outbound.bounds import PROVIDER_BODY_BYTES, OutOfBounds
from social_recording.outbound.client import BadRedirect, OutboundClient, SentCount, TooManyRedirects
from social_recording.outbound.guard import ResolveHost, UnresolvedHost, UnsafeTarget, check_target, wire_host
from social_recording.outbound.limits import RateLimited, RequestLimiter
from social_recording.outbound.observe import CallVetoed
from social_recording.outbound.reader import ResponseTooLarge
from social_recording.outbound.retry import FREE_PROVIDER, PAID_PROVIDER, RetryPolicy, run_with_retries
from social_recording.platforms.base import ErrorCode, ExternalFetchError

MAX_RESPONSE_BYTES = PROVIDER_BODY_BYTES
"""Largest body we read from any provider (`outbound.bounds`, with the other bounds of an answer)."""

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HttpPolicy:
    """Per-provider timeouts and retry budget."""

    service: str
    paid: bool
    connect_timeout: float
    read_timeout: float
    attempts: int
    backoff_s: float = FREE_PROVIDER.delay_s
    max_bytes: int = MAX_RESPONSE_BYTES

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"HttpPolicy.attempts must be >= 1, got {self.attempts!r}")
        if self.paid and self.attempts != 1:
            # A paid call is billed per request; retrying it would double the bill.
            raise ValueError(f"paid HttpPolicy {self.service!r} must have attempts=1, got {self.attempts!r}")
        if self.max_bytes < 1:
            raise ValueError(f"HttpPolicy.max_bytes must be >= 1, got {self.max_bytes!r}")

    @classmethod
    def free(cls, service: str, connect_timeout: float = 5.0, read_timeout: float = 15.0) -> HttpPolicy:
        """A free provider: transient failures are retried (3 attempts with back-off)."""
        return cls(service, False, connect_timeout, read_timeout, attempts=FREE_PROVIDER.attempts)

    @classmethod
    def paid_once(cls, service: str, connect_timeout: float = 5.0, read_timeout: float = 15.0) -> HttpPolicy:
        """A paid provider: exactly one attempt, whatever happens."""
        return cls(service, True, connect_timeout, read_timeout, attempts=PAID_PROVIDER.attempts)


@dataclass(frozen=True)
class HttpResponse:
    """A fully read response. `url` is the final URL after redirects, with auth params removed."""

    status: int
    headers: httpx.Headers
    body: bytes
    url: str
    service: str = field(default="provider")
    requests: int = 1
    """HTTP requests this logical request sent (redirect hops and retries included)."""

    def json(self) -> Any:
        """The body parsed as JSON within the bounds of an answer (`outbound.bounds`); a body that is
        not JSON, or goes past a bound (named in the message), is an upstream fault (UPSTREAM)."""
        try:
            return load_json(self.body)
        except OutOfBounds as exc:
            raise ExternalFetchError(
                ErrorCode.UPSTREAM, f"{self.service} answer refused (HTTP {self.status}): {exc}"
            ) from None
        except (ValueError, UnicodeDecodeError):
            raise ExternalFetchError(
                ErrorCode.UPSTREAM, f"malformed JSON from {self.service} (HTTP {self.status})"
            ) from None

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


class _Transient(Exception):
    """An attempt failed in a way worth retrying (for free providers)."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class ProviderHttp:
    """One provider's HTTP client: timeouts, retries, size cap, auth scoped to its own host(s), and
    every redirect checked by the public-address guard before anything is sent to it."""

    def __init__(
        self,
        policy: HttpPolicy,
        *,
        auth_hosts: Collection[str],
        auth_headers: Mapping[str, str] | None = None,
        auth_params: Mapping[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        default_headers: Mapping[str, str] | None = None,
        max_redirects: int = 3,
        resolve_host: ResolveHost | None = None,
        limiter: RequestLimiter | None = None,
    ) -> None:
        self.policy = policy
        self._auth_hosts = frozenset(h.lower().rstrip(".") for h in auth_hosts)
        self._auth_headers = dict(auth_headers or {})
        self._auth_params = dict(auth_params or {})
        self._secrets = tuple(
            v for v in (*self._auth_headers.values(), *self._auth_params.values()) if v
        ) + tuple(_bearer_token(v) for v in self._auth_headers.values() if _bearer_token(v))
        self._sleep = sleep
        self._max_redirects = max_redirects
        self._retry = RetryPolicy(attempts=policy.attempts, delay_s=policy.backoff_s)
        # `resolve_host` / `limiter` unset: the ones a `Network` transport carries, else the system
        # resolver and no limit.
        self._out = OutboundClient(
            service=policy.service,
            paid=policy.paid,
            timeout=httpx.Timeout(
                connect=policy.connect_timeout,
                read=policy.read_timeout,
                write=policy.read_timeout,
                pool=policy.connect_timeout,
            ),
            max_bytes=policy.max_bytes,
            transport=transport,
            headers=default_headers,
            resolve_host=resolve_host,
            limiter=limiter,
        )

    @property
    def requests_made(self) -> int:
        """Requests handed to the transport over this client's life (retries and redirect hops
        included)."""
        return self._out.requests_made

    def __repr__(self) -> str:
        return f"ProviderHttp(service={self.policy.service!r}, requests_made={self.requests_made})"

    def close(self) -> None:
        self._out.close()

    # ------------------------------------------------------------------ public

    def request(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, str] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> HttpResponse:
        """Send one logical request (with guarded manual redirects), retrying transient failures for
        free providers only. Any non-5xx status is returned for the platform to map.

        Raises ExternalFetchError (UNSAFE_REDIRECT when a redirect pointed at a non-public address or
        a non-http scheme: nothing was sent there). CallVetoed from the request observer propagates
        unchanged: nothing was sent for that request."""
        service = self.policy.service
        call = SentCount()
        try:
            start = httpx.URL(url)
        except httpx.InvalidURL:
            raise ExternalFetchError(ErrorCode.UPSTREAM, f"{service}: invalid request URL", attempted=False) from None
        if start.scheme not in ("http", "https"):
            raise ExternalFetchError(
                ErrorCode.UPSTREAM, f"{service}: refusing non-HTTP URL scheme {start.scheme!r}", attempted=False
            )
        if params:
            start = start.copy_merge_params(dict(params))

        def on_retry(attempt: int, exc: BaseException, delay: float) -> None:
            log.info("%s: retry %d/%d in %.1fs after %s", service, attempt + 1, self.policy.attempts, delay,
                     exc.message if isinstance(exc, _Transient) else type(exc).__name__)

        try:
            return run_with_retries(
                lambda: self._attempt(call, method, start, json, headers),
                self._retry,
                retry_if=lambda exc: isinstance(exc, _Transient),
                sleep=self._sleep,
                on_retry=on_retry,
            )
        except _Transient as last:
            raise ExternalFetchError(
                last.code,
                self._redact(f"{last.message} after {self.policy.attempts} attempt(s)"),
                attempted=call.n > 0,
            ) from None

    def get(self, url: str, *, params: Mapping[str, str] | None = None,
            headers: Mapping[str, str] | None = None) -> HttpResponse:
        return self.request("GET", url, params=params, headers=headers)

    def post(self, url: str, *, params: Mapping[str, str] | None = None, json: Any = None,
             headers: Mapping[str, str] | None = None) -> HttpResponse:
        return self.request("POST", url, params=params, json=json, headers=headers)

    # ----------------------------------------------------------------- private

    def _attempt(
        self, call: SentCount, method: str, start: httpx.URL, body: Any, headers: Mapping[str, str] | None
    ) -> HttpResponse:
        service = self.policy.service

        def prepare(url: httpx.URL) -> tuple[httpx.URL, Mapping[str, str]]:
            authed = self._is_auth_host(url, start.scheme)
            if not authed:
                send_url = self._strip_auth(url)
            else:  # merging no params still parses the URL again: a key sent as a header needs none
                send_url = url.copy_merge_params(self._auth_params) if self._auth_params else url
            hop_headers = dict(headers or {})
            if authed:
                hop_headers.update(self._auth_headers)
            return send_url, hop_headers

        def check_redirect(current: httpx.URL, target: httpx.URL) -> None:
            check_target(str(target), self._out.resolve_host)

        host = wire_host(start)
        try:
            exchange = self._out.follow(
                method, start, json=body, prepare=prepare, check_redirect=check_redirect,
                max_redirects=self._max_redirects, count=call,
            )
        except CallVetoed:
            raise
        except RateLimited as exc:  # held back by the shared limiter: this request was not sent
            code = ErrorCode.LIMITER_UNAVAILABLE if exc.unavailable else ErrorCode.RATE_LIMITED
            raise self._fail(call, code, f"{service}: not sent, {exc.reason}") from None
        except UnsafeTarget as exc:
            raise self._fail(call, ErrorCode.UNSAFE_REDIRECT, f"{service}: refused redirect to {exc.reason}") from None
        except UnresolvedHost as exc:
            # Not known to be unsafe, only unreachable now (the transport could not have connected either).
            raise _Transient(ErrorCode.UPSTREAM, f"{service}: redirect target {exc}") from None
        except TooManyRedirects:
            raise self._fail(call, ErrorCode.UPSTREAM, f"{service}: more than {self._max_redirects} redirects") from None
        except BadRedirect as exc:
            raise self._fail(call, ErrorCode.UPSTREAM, f"{service}: {exc} in a redirect") from None
        except ResponseTooLarge as exc:
            raise self._fail(call, ErrorCode.UPSTREAM, f"{service}: response {exc}") from None
        except httpx.TimeoutException as exc:
            raise _Transient(ErrorCode.TIMEOUT, f"{service}: {type(exc).__name__} calling {host}") from None
        except httpx.TransportError as exc:
            raise _Transient(ErrorCode.UPSTREAM, f"{service}: {type(exc).__name__} calling {host}") from None
        except httpx.HTTPError as exc:
            raise self._fail(call, ErrorCode.UPSTREAM, f"{service}: {type(exc).__name__} calling {host}") from None
        final = self._strip_auth(exchange.url)
        if exchange.status >= 500:
            raise _Transient(ErrorCode.UPSTREAM, f"{service}: HTTP {exchange.status} from {wire_host(final)}")
        return HttpResponse(exchange.status, exchange.headers, exchange.body, str(final), service, call.n)

    def _is_auth_host(self, url: httpx.URL, start_scheme: str) -> bool:
        if wire_host(url).rstrip(".") not in self._auth_hosts:
            return False
        # Never downgrade a key from https to cleartext http through a redirect.
        return not (start_scheme == "https" and url.scheme != "https")

    def _strip_auth(self, url: httpx.URL) -> httpx.URL:
        """`url` without any of our auth param names (a Location header may echo them)."""
        if not self._auth_params or not url.query:
            return url
        kept = [(k, v) for k, v in url.params.multi_items() if k not in self._auth_params]
        return url.copy_with(params=kept) if kept else url.copy_with(query=None)

    def _redact(self, message: str) -> str:
        for secret in self._secrets:
            message = message.replace(secret, "***")
        return message

    def _fail(self, call: SentCount, code: ErrorCode, message: str) -> ExternalFetchError:
        return ExternalFetchError(code, self._redact(message), attempted=call.n > 0)


def _bearer_token(value: str) -> str:
    """The token inside 'Bearer <token>' (so redaction covers the bare token too)."""
    parts = value.split(" ", 1)
    return parts[1].strip() if len(parts) == 2 and parts[0].lower() == "bearer" else ""
