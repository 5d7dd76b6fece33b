"""A transport together with the name resolution and the request limiter of the network it reaches.

Why they travel together: the redirect guard must resolve host names the way the transport's world
does. On the real internet that is the system resolver; on the sandbox transport every host is fake
and the sandbox's own DNS answers. Handing each client "the transport" and, separately, "the
resolver" would let the two disagree, and every generator factory would need a new parameter for
each (the registry builds them all with one `transport`). A `Network` is passed wherever a transport
is; the outbound clients read its resolver and limiter, and anything else sees a plain transport.

The real internet is one transport per process (`real_network_transport`, one connection pool)
that every client without a transport of its own sends on: a provider's connection stays open from
one URL to the next, and the CA bundle is read once. A transport made per call, or per sensor tick,
would cost each a new TCP and TLS handshake and about 40 ms of CPU to load the CA bundle
(docs/architecture.md, "Outbound requests").
"""

from __future__ import annotations

import os
import threading

import httpx

from social_recording.outbound.guard import ResolveHost, default_resolve_host
from social_recording.outbound.limits import NO_LIMIT, RequestLimiter

REAL_NETWORK_LIMITS = httpx.Limits(max_connections=None, max_keepalive_connections=None)
"""No cap of the pool's own: the calls at once per provider already bound the connections, and a
hidden second cap would hold requests back (and time them out) under a configuration that allows
more calls than it. Idle connections expire after httpx's keep-alive expiry."""

_real: tuple[int, httpx.HTTPTransport] | None = None
"""(the process that made it, this process's transport to the real internet)."""
_real_lock = threading.Lock()


def real_network_transport() -> httpx.BaseTransport:
    """This process's one transport to the real internet, made on first use and never closed (it lives
    as long as the process; idle connections expire on their own). A forked child makes its own
    rather than write on its parent's sockets."""
    global _real
    pid = os.getpid()
    with _real_lock:
        if _real is None or _real[0] != pid:
            _real = (pid, httpx.HTTPTransport(trust_env=False, limits=REAL_NETWORK_LIMITS))
        return _real[1]


class Network(httpx.BaseTransport):
    """`transport` (None: the real network) with its `resolve_host` and `limiter`.

    Outbound clients unwrap it (`unwrap`) and send on `sending_transport()` themselves; used directly
    as a transport it forwards every request there."""

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

    def __repr__(self) -> str:
        return f"Network({self.transport!r}, resolve_host={self.resolve_host!r}, limiter={self.limiter!r})"

    def sending_transport(self) -> httpx.BaseTransport:
        """The given transport, else the process's real-network one."""
        return self.transport if self.transport is not None else real_network_transport()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self.sending_transport().handle_request(request)


def unwrap(
    transport: httpx.BaseTransport | None,
    *,
    resolve_host: ResolveHost | None = None,
    limiter: RequestLimiter | None = None,
) -> tuple[httpx.BaseTransport, ResolveHost, RequestLimiter]:
    """(the transport to send on, the resolver, the limiter) for a client given `transport` and
    optional explicit choices: explicit wins, then what a `Network` carries, then the defaults (the
    system resolver, no limit, the process's real-network transport)."""
    network = transport if isinstance(transport, Network) else Network(transport)
    return (network.sending_transport(), resolve_host or network.resolve_host or default_resolve_host,
            limiter or network.limiter or NO_LIMIT)
