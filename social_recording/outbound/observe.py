"""Per-invocation request observation: the engine learns from the HTTP layer itself whether a
request left, and may veto a paid request right before it is sent.

Why here and not in the generators: "did we call the provider?" decides attempts, back-off and
`exhausted`, and a guess (an exception from our own code counted as a call, or a call not counted)
either burns attempts that were never made or pays again. Only the code that hands the request to
the transport knows. Likewise the last ownership check before a paid call must sit right before the
send, not before `generate()`, which may do free work first (see docs/architecture.md, "Fencing").

The observer travels in a `ContextVar`: the recorder sets it around one `generate()` call in its
worker thread, every `outbound` client in that thread reports to it, and clients used elsewhere
(the sensor, the profile reader) see none and behave as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol


class CallVetoed(Exception):
    """Raised by an observer's `before_request` to stop a request: nothing is sent. HTTP clients
    must let it propagate unchanged (never wrap it into a provider error)."""


class RequestObserver(Protocol):
    def before_request(self, *, service: str, paid: bool) -> None:
        """Called right before one request is handed to the transport (each retry and redirect hop
        included). Raise CallVetoed to stop it."""
        ...

    def request_sent(self, *, service: str, paid: bool) -> None:
        """Called once the request was handed to the transport: it may have reached the provider even
        when no response ever arrives (timeouts, resets), so it counts as made."""
        ...


_current: ContextVar[RequestObserver | None] = ContextVar("social_recording_request_observer", default=None)


@contextmanager
def observing(observer: RequestObserver) -> Iterator[RequestObserver]:
    """Report every outbound request made in this context (this thread) to `observer`."""
    token = _current.set(observer)
    try:
        yield observer
    finally:
        _current.reset(token)


def before_request(*, service: str, paid: bool) -> None:
    """Tell the current observer, if any, that a request is about to be sent (may raise CallVetoed)."""
    observer = _current.get()
    if observer is not None:
        observer.before_request(service=service, paid=paid)


def request_sent(*, service: str, paid: bool) -> None:
    """Tell the current observer, if any, that a request was handed to the transport."""
    observer = _current.get()
    if observer is not None:
        observer.request_sent(service=service, paid=paid)


class CountingObserver:
    """The simplest observer: counts requests sent, paid ones apart (tests, benchmarks)."""

    def __init__(self) -> None:
        self.sent = 0
        self.paid_sent = 0

    def before_request(self, *, service: str, paid: bool) -> None:
        return None

    def request_sent(self, *, service: str, paid: bool) -> None:
        self.sent += 1
        self.paid_sent += int(paid)
