"""A transport together with the name resolution and the request limiter of the network it reaches.

Why they travel together: the redirect guard must resolve host names the way the transport's world
does. On the real internet that is the system resolver; on the sandbox transport every host is fake
and the sandbox's own DNS answers. Handing each client "the transport" and, separately, "the
resolver" would let the two disagree, and every generator factory would need a new parameter for
each (the registry builds them all with one `transport`). A `Network` is passed wherever a transport
is; the outbound clients read its resolver and limiter, and anything else sees a plain transport.

On the real internet a `Network` also owns the one transport (connection pool) its clients share in
this process: a provider's connections stay open from one URL to the next, and the certificate
store is read once. A transport made per call would cost every URL a new TCP and TLS handshake and
about 40 ms of CPU to load the CA bundle (docs/architecture.md, "Outbound requests").
"""

from __future__ import annotations

import os
import threading

import httpx

from social_recording.outbound.guard import ResolveHost, default_resolve_host
from social_recording.outbound.limits import NO_LIMIT, RequestLimiter


class Network(httpx.BaseTransport):
    """`transport` (None: the real network) with its `resolve_host` and `limiter`.

    Outbound clients unwrap it (`unwrap`) and send on `sending_transport()` themselves; used directly
    as a transport it forwards every request there. `close()` closes only the transport it made (a
    given one belongs to whoever gave it)."""

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
        self._own: tuple[int, httpx.HTTPTransport] | None = None
        """(the process that made it, the real-network transport)."""
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Network({self.transport!r}, resolve_host={self.resolve_host!r}, limiter={self.limiter!r})"

    def sending_transport(self) -> httpx.BaseTransport:
        """The transport to send on: the given one, else this process's real-network transport, made
        on first use and shared by every client of this network (a forked child makes its own rather
        than write on its parent's sockets)."""
        if self.transport is not None:
            return self.transport
        pid = os.getpid()
        with self._lock:
            if self._own is None or self._own[0] != pid:
                self._own = (pid, httpx.HTTPTransport(trust_env=False))
            return self._own[1]

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self.sending_transport().handle_request(request)

    def close(self) -> None:
        with self._lock:
            own, self._own = self._own, None
        if own is not None and own[0] == os.getpid():
            own[1].close()

def unwrap(
    transport: httpx.BaseTransport | None,
    *,
    resolve_host: ResolveHost | None = None,
    limiter: RequestLimiter | None = None,
) -> tuple[httpx.BaseTransport | None, ResolveHost, RequestLimiter]:
    """(the transport to send on, the resolver, the limiter) for a client given `transport` and
    optional explicit choices: explicit wins, then what a `Network` carries, then the defaults (the
    system resolver, no limit). The transport is None only when none was given (the client then makes
    and owns its own)."""
    if isinstance(transport, Network):
        resolve_host = resolve_host or transport.resolve_host
        limiter = limiter or transport.limiter
        transport = transport.sending_transport()
    return transport, resolve_host or default_resolve_host, limiter or NO_LIMIT
