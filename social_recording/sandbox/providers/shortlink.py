"""Fake shortlink hosts: every URL listed in the scenario's `redirects` answers 301 to its location;
any other path on a shortener host answers 404 (a dead or mistyped short code)."""

from __future__ import annotations

import httpx

from social_recording.domain.urls import SHORTENER_HOSTS
from social_recording.sandbox.providers._common import Call, Provider, Reply, html_reply, plain_error_page
from social_recording.sandbox.scenario import Scenario
from social_recording.sandbox.subjects import canonical_or_none

MAX_HOPS = 5
"""How far `hops` follows a chain of scenario redirects."""


class Redirects:
    """The scenario's redirects, matched as written (trailing slash aside) or by canonical form."""

    def __init__(self, scenario: Scenario) -> None:
        self._exact = {k.rstrip("/"): v for k, v in scenario.redirects.items()}
        self._canonical: dict[str, str] = {}
        for short, location in scenario.redirects.items():
            canonical = canonical_or_none(short)
            if canonical is not None:
                self._canonical.setdefault(canonical, location)
        self.hosts: set[str] = set(SHORTENER_HOSTS)
        for short in scenario.redirects:
            host = httpx.URL(short).host.lower().removeprefix("www.")
            self.hosts.update({host, "www." + host})

    def location(self, url: str) -> str | None:
        """Where `url` redirects to, or None when the scenario lists no redirect for it."""
        hit = self._exact.get(url.rstrip("/"))
        if hit is None:
            canonical = canonical_or_none(url)
            if canonical is not None:
                hit = self._canonical.get(canonical)
        return hit

    def hops(self, url: str) -> list[str]:
        """`url` and every location its redirect chain goes through (at most MAX_HOPS)."""
        out = [url]
        for _ in range(MAX_HOPS):
            nxt = self.location(out[-1])
            if nxt is None:
                break
            out.append(nxt)
        return out


class ShortlinkProvider(Provider):
    service = "shortlink"

    def __init__(self, redirects: Redirects) -> None:
        self._redirects = redirects

    def accepts(self, url: httpx.URL) -> bool:
        return self._redirects.location(str(url)) is not None or (url.host or "").lower() in self._redirects.hosts

    def describe(self, request: httpx.Request) -> Call:
        return Call(self.service, f"short:{request.url}")

    def answer(self, request: httpx.Request, call: Call) -> Reply:
        location = self._redirects.location(str(request.url))
        if location is None:
            return html_reply(404, plain_error_page(404, "Not Found"))
        page = f'<html><head><title>Moved</title></head><body><a href="{location}">moved here</a></body></html>'
        return html_reply(301, page, {"location": location})
