"""The shared HTTP layer every platform fetcher goes through.

Why one layer: timeouts (seed 000 §6.1), the retry rule (a paid call is made exactly once, because a
retry costs money: DESIGN §9), the response size cap, and key scoping (a provider key is attached only
to that provider's own hosts, so a redirect to a foreign host never carries it) must hold for every
provider alike. Error messages name the service, the status and the host, never a key or a URL
carrying one.
"""

from __future__ import annotations

import json as _json
import logging
import threading
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx

from social_recording.platforms.base import ErrorCode, ExternalFetchError

MAX_RESPONSE_BYTES = 5 * 1024 * 1024
"""Largest body we read from any provider: a bigger one is a provider bug or an attack, not data."""

_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HttpPolicy:
    """Per-provider timeouts and retry budget (seed 000 §6.1)."""

    service: str
    paid: bool
    connect_timeout: float
    read_timeout: float
    attempts: int
    backoff_s: float = 0.8
    max_bytes: int = MAX_RESPONSE_BYTES

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"HttpPolicy.attempts must be >= 1, got {self.attempts!r}")
        if self.paid and self.attempts != 1:
            # DESIGN §9: a paid call is billed per request; retrying it would double the bill.
            raise ValueError(f"paid HttpPolicy {self.service!r} must have attempts=1, got {self.attempts!r}")
        if self.max_bytes < 1:
            raise ValueError(f"HttpPolicy.max_bytes must be >= 1, got {self.max_bytes!r}")

    @classmethod
    def free(cls, service: str, connect_timeout: float = 5.0, read_timeout: float = 15.0) -> HttpPolicy:
        """A free provider: transient failures are retried (3 attempts with back-off)."""
        return cls(service, False, connect_timeout, read_timeout, attempts=3)

    @classmethod
    def paid_once(cls, service: str, connect_timeout: float = 5.0, read_timeout: float = 15.0) -> HttpPolicy:
        """A paid provider: exactly one attempt, whatever happens."""
        return cls(service, True, connect_timeout, read_timeout, attempts=1)


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
        """The body parsed as JSON; a body that is not JSON is an upstream fault (UPSTREAM)."""
        try:
            return _json.loads(self.body)
        except (ValueError, UnicodeDecodeError):
            raise ExternalFetchError(
                ErrorCode.UPSTREAM, f"malformed JSON from {self.service} (HTTP {self.status})"
            ) from None

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")


@dataclass
class _Call:
    """Per-call bookkeeping, so a shared ProviderHttp reports `attempted` for this call only."""

    sent: int = 0


class _Transient(Exception):
    """An attempt failed in a way worth retrying (for free providers)."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class ProviderHttp:
    """One provider's HTTP client: timeouts, retries, size cap, and auth scoped to its own host(s)."""

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
        self.requests_made = 0
        self._lock = threading.Lock()
        timeout = httpx.Timeout(
            connect=policy.connect_timeout,
            read=policy.read_timeout,
            write=policy.read_timeout,
            pool=policy.connect_timeout,
        )
        self._client = httpx.Client(
            transport=transport,
            timeout=timeout,
            follow_redirects=False,
            headers=dict(default_headers or {}),
            trust_env=False,
        )

    def __repr__(self) -> str:
        return f"ProviderHttp(service={self.policy.service!r}, requests_made={self.requests_made})"

    def close(self) -> None:
        self._client.close()

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
        """Send one logical request (with manual redirects), retrying transient failures for free
        providers only. Any non-5xx status is returned for the platform to map."""
        service = self.policy.service
        call = _Call()
        try:
            start = httpx.URL(url)
        except httpx.InvalidURL:
            raise ExternalFetchError(ErrorCode.UPSTREAM, f"{service}: invalid request URL", attempted=False) from None
        if params:
            start = start.copy_merge_params(dict(params))
        last: _Transient | None = None
        for attempt in range(1, self.policy.attempts + 1):
            if attempt > 1:
                delay = self.policy.backoff_s  # DESIGN §9: a flat 800 ms between free attempts
                log.info("%s: retry %d/%d in %.1fs after %s", service, attempt, self.policy.attempts,
                         delay, last.message if last else "?")
                self._sleep(delay)
            try:
                return self._attempt(call, method, start, json, headers)
            except _Transient as exc:
                last = exc
        assert last is not None
        raise ExternalFetchError(
            last.code,
            self._redact(f"{last.message} after {self.policy.attempts} attempt(s)"),
            attempted=call.sent > 0,
        )

    def get(self, url: str, *, params: Mapping[str, str] | None = None,
            headers: Mapping[str, str] | None = None) -> HttpResponse:
        return self.request("GET", url, params=params, headers=headers)

    def post(self, url: str, *, params: Mapping[str, str] | None = None, json: Any = None,
             headers: Mapping[str, str] | None = None) -> HttpResponse:
        return self.request("POST", url, params=params, json=json, headers=headers)

    # ----------------------------------------------------------------- private

    def _attempt(
        self, call: _Call, method: str, start: httpx.URL, body: Any, headers: Mapping[str, str] | None
    ) -> HttpResponse:
        service = self.policy.service
        url = start
        start_scheme = start.scheme
        hops = 0
        while True:
            if url.scheme not in ("http", "https"):
                raise self._fail(call, ErrorCode.UPSTREAM, f"{service}: refusing non-HTTP URL scheme {url.scheme!r}")
            authed = self._is_auth_host(url, start_scheme)
            send_url = url.copy_merge_params(self._auth_params) if authed else self._strip_auth(url)
            req_headers = dict(headers or {})
            if authed:
                req_headers.update(self._auth_headers)
            request = self._client.build_request(
                method, send_url, headers=req_headers, json=body if body is not None else None
            )
            status, resp_headers, content = self._send(call, request)
            if status in _REDIRECT_STATUSES and "location" in resp_headers:
                hops += 1
                if hops > self._max_redirects:
                    raise self._fail(
                        call, ErrorCode.UPSTREAM, f"{service}: more than {self._max_redirects} redirects"
                    )
                try:
                    url = self._strip_auth(url.join(resp_headers["location"]))
                except httpx.InvalidURL:
                    raise self._fail(call, ErrorCode.UPSTREAM, f"{service}: invalid redirect Location") from None
                if status == 303 or (status in (301, 302) and method.upper() == "POST"):
                    method, body = "GET", None
                log.debug("%s: HTTP %d redirect to host %s", service, status, url.host)
                continue
            if status >= 500:
                raise _Transient(ErrorCode.UPSTREAM, f"{service}: HTTP {status} from {url.host}")
            return HttpResponse(status, resp_headers, content, str(self._strip_auth(url)), service, call.sent)

    def _send(self, call: _Call, request: httpx.Request) -> tuple[int, httpx.Headers, bytes]:
        service = self.policy.service
        host = request.url.host
        cap = self.policy.max_bytes
        call.sent += 1
        with self._lock:
            self.requests_made += 1
        try:
            response = self._client.send(request, stream=True)
        except httpx.TimeoutException as exc:
            raise _Transient(ErrorCode.TIMEOUT, f"{service}: {type(exc).__name__} calling {host}") from None
        except httpx.TransportError as exc:
            raise _Transient(ErrorCode.UPSTREAM, f"{service}: {type(exc).__name__} calling {host}") from None
        except httpx.HTTPError as exc:
            raise self._fail(call, ErrorCode.UPSTREAM, f"{service}: {type(exc).__name__} calling {host}") from None
        try:
            declared = response.headers.get("content-length")
            if declared is not None and declared.strip().isdigit() and int(declared) > cap:
                raise self._fail(
                    call, ErrorCode.UPSTREAM,
                    f"{service}: response from {host} larger than {cap} bytes (Content-Length {declared.strip()})",
                )
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > cap:
                    raise self._fail(
                        call, ErrorCode.UPSTREAM, f"{service}: response from {host} larger than {cap} bytes"
                    )
                chunks.append(chunk)
        except httpx.TimeoutException as exc:
            raise _Transient(ErrorCode.TIMEOUT, f"{service}: {type(exc).__name__} reading {host}") from None
        except httpx.TransportError as exc:
            raise _Transient(ErrorCode.UPSTREAM, f"{service}: {type(exc).__name__} reading {host}") from None
        except httpx.HTTPError as exc:
            raise self._fail(call, ErrorCode.UPSTREAM, f"{service}: {type(exc).__name__} reading {host}") from None
        finally:
            response.close()
        return response.status_code, response.headers, b"".join(chunks)

    def _is_auth_host(self, url: httpx.URL, start_scheme: str) -> bool:
        if url.host.lower().rstrip(".") not in self._auth_hosts:
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

    def _fail(self, call: _Call, code: ErrorCode, message: str) -> ExternalFetchError:
        return ExternalFetchError(code, self._redact(message), attempted=call.sent > 0)


def _bearer_token(value: str) -> str:
    """The token inside 'Bearer <token>' (so redaction covers the bare token too)."""
    parts = value.split(" ", 1)
    return parts[1].strip() if len(parts) == 2 and parts[0].lower() == "bearer" else ""
