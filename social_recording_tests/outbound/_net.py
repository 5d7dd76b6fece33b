"""A fake internet for the outbound tests: every request that reaches the transport is recorded, and
a DNS table decides what each host name resolves to (public by default)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import httpx

PUBLIC = "93.184.216.34"

Answer = httpx.Response | Exception | Callable[[httpx.Request], httpx.Response]


class Internet:
    """url (without query) -> answer; anything else is 404. `requests` holds every request the
    transport was handed, in order."""

    def __init__(self, routes: Mapping[str, Answer] | None = None) -> None:
        self.routes = dict(routes or {})
        self.requests: list[httpx.Request] = []
        self.transport = httpx.MockTransport(self._handle)

    def _handle(self, request: httpx.Request) -> httpx.Response:
        request.read()
        self.requests.append(request)
        answer = self.routes.get(str(request.url.copy_with(query=None)), httpx.Response(404))
        if isinstance(answer, Exception):
            raise answer
        if callable(answer):
            return answer(request)
        return answer

    @property
    def hosts(self) -> list[str]:
        return [r.url.host for r in self.requests]


class Dns:
    """host -> addresses (default: one public address); records every question."""

    def __init__(self, table: Mapping[str, Sequence[str]] | None = None) -> None:
        self.table = dict(table or {})
        self.asked: list[str] = []

    def __call__(self, host: str) -> Sequence[str]:
        self.asked.append(host)
        return self.table.get(host, [PUBLIC])


def redirect(location: str, status: int = 302) -> httpx.Response:
    return httpx.Response(status, headers={"location": location})


class Sleeps(list[float]):
    """A `sleep` that records the delays (tests never really sleep)."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


class Observer:
    """A request observer that records every call and can veto requests (all, or paid ones only)."""

    def __init__(self, *, veto: Callable[[str, bool], bool] = lambda service, paid: False) -> None:
        self.events: list[tuple[str, str, bool]] = []
        self._veto = veto

    def before_request(self, *, service: str, paid: bool) -> None:
        from social_recording.outbound.observe import CallVetoed

        self.events.append(("before", service, paid))
        if self._veto(service, paid):
            raise CallVetoed(f"vetoed {service}")

    def request_sent(self, *, service: str, paid: bool) -> None:
        self.events.append(("sent", service, paid))

    def sent(self) -> list[tuple[str, bool]]:
        return [(s, p) for kind, s, p in self.events if kind == "sent"]
