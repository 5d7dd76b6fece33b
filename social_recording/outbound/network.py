"""A transport together with the name resolution and the request limiter of the network it reaches.

Why they travel together: the redirect guard must resolve host names the way the transport's world
does. On the real internet that is the system resolver; on the sandbox transport every host is fake
and the sandbox's own DNS answers. Handing each client "the transport" and, separately, "the
resolver" would let the two disagree, and every generator factory would need a new parameter for
each (the registry builds them all with one `transport`). A `Network` is passed wherever a transport
is; the outbound clients read its resolver and limiter, and anything else sees a plain transport.
"""

from __future__ import annotations

import threading

import httpx

from social_recording.outbound.guard import ResolveHost, default_resolve_host
from social_recording.outbound.limits import NO_LIMIT, RequestLimiter


class Network(httpx.BaseTransport):
    """`transport` (None: the real network) with its `resolve_host` and `limiter`.

    Outbound clients unwrap it (`unwrap`) and send on the inner transport themselves; used directly as
    a transport it forwards every request (creating the real-network transport on first use)."""

    def __init__(
        self,
        transport: httpx.BaseTransport | None = None,
        *,
        resolve_host: ResolveHost | None = None,
        limiter: RequestLimiter | None = None,
    ) -> None:
        if isinstance(transport, Network):
            resolve_host = resolve_host or transport.resolve_host
            limiter = limiter or transport.limiter
            transport = transport.transport
        self.transport: httpx.BaseTransport | None = transport
        self.resolve_host: ResolveHost | None = resolve_host
        self.limiter: RequestLimiter | None = limiter
        self._own: httpx.BaseTransport | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Network({self.transport!r}, resolve_host={self.resolve_host!r}, limiter={self.limiter!r})"

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        inner = self.transport
        if inner is None:
            with self._lock:
                if self._own is None:
                    self._own = httpx.HTTPTransport(trust_env=False)
                inner = self._own
        return inner.handle_request(request)

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        if self._own is not None:
            self._own.close()


def unwrap(
    transport: httpx.BaseTransport | None,
    *,
    resolve_host: ResolveHost | None = None,
    limiter: RequestLimiter | None = None,
) -> tuple[httpx.BaseTransport | None, ResolveHost, RequestLimiter]:
    """(the transport to send on, the resolver, the limiter) for a client given `transport` and
    optional explicit choices: explicit wins, then what a `Network` carries, then the defaults (the
    system resolver, no limit)."""
    if isinstance(transport, Network):
        resolve_host = resolve_host or transport.resolve_host
        limiter = limiter or transport.limiter
        transport = transport.transport
    return transport, resolve_host or default_resolve_host, limiter or NO_LIMIT
