"""Web generator: urlscan.io (paid per scan) + RDAP (free enrichment) for any other website URL.

URL shapes, requests, status mapping and the decisions behind them: social_recording/platforms/web/README.md."""

from __future__ import annotations

import ipaddress
import logging
import time
from collections.abc import Callable
from datetime import timedelta
from functools import cache
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx
from pydantic import BaseModel, Field

from social_recording.domain.graph import GraphGroup, SocialGraph, SocialObject
from social_recording.domain.urls import CanonicalUrl, Platform
from social_recording.platforms import shaping
from social_recording.platforms.base import ErrorCode, ExternalFetchError, GenerateContext, GenerateResult
from social_recording.platforms.http import HttpPolicy, HttpResponse, ProviderHttp
from social_recording.platforms.web import RDAP, URLSCAN

if TYPE_CHECKING:
    import tldextract

log = logging.getLogger(__name__)

URLSCAN_BASE = "https://urlscan.io/api/v1"
URLSCAN_HOSTS = frozenset({"urlscan.io"})
PROVIDER = URLSCAN.name
URLSCAN_RETENTION = timedelta(days=7)
"""How long after its submission a scan may be polled instead of submitted (and paid for) again.
urlscan keeps scan results long-term; a week is far inside that, and a scan older than a week is
better redone anyway (the page may have changed)."""
RDAP_BASE = "https://rdap.org"

INITIAL_WAIT_S = 10.0
POLL_INTERVAL_S = 3.0
MAX_POLLS = 5
CALL_TIMEOUT_S = 15.0

_NOT_FOUND_HINTS = ("dns error", "could not resolve", "not resolve", "unresolvable", "nxdomain")
_BLOCKED_HINTS = ("blacklist", "blocklist", "prevented", "refused", "not allowed", "spam", "forbidden")
_LONG_WINDOWS = frozenset({"day", "daily", "month", "monthly"})


# ---------------------------------------------------------------- payloads


class _Submit(BaseModel):
    uuid: str = Field(min_length=1)
    result: str | None = None
    api: str | None = None
    message: str | None = None


class _Task(BaseModel):
    uuid: str | None = None
    time: str | None = None
    url: str | None = None
    domain: str | None = None
    apexDomain: str | None = None
    screenshotURL: str | None = None
    reportURL: str | None = None


class _Page(BaseModel):
    url: str | None = None
    domain: str | None = None
    apexDomain: str | None = None
    ip: str | None = None
    country: str | None = None
    asn: str | None = None
    asnname: str | None = None
    server: str | None = None
    title: str | None = None
    status: Any = None
    tlsIssuer: str | None = None
    tlsValidFrom: str | None = None
    tlsValidDays: Any = None
    tlsAgeDays: Any = None


class _Overall(BaseModel):
    score: Any = None
    malicious: bool | None = None


class _Verdicts(BaseModel):
    overall: _Overall = Field(default_factory=_Overall)


class _Result(BaseModel):
    task: _Task = Field(default_factory=_Task)
    page: _Page = Field(default_factory=_Page)
    verdicts: _Verdicts = Field(default_factory=_Verdicts)


class _RdapEvent(BaseModel):
    eventAction: str | None = None
    eventDate: str | None = None


class _Rdap(BaseModel):
    events: list[_RdapEvent] = Field(default_factory=list)


# ---------------------------------------------------------------- generator


class WebGenerator(shaping.PerCallHttpGenerator[str]):
    """canonical website URL -> one `page` content from a urlscan.io scan plus the RDAP registration date."""

    platform: Platform = Platform.WEB
    secret_name = "key"
    key_variable = URLSCAN.key_variable
    default_base_url = URLSCAN_BASE

    def __init__(
        self,
        api_key: str | None,
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        urlscan_base: str = URLSCAN_BASE,
        rdap_base: str = RDAP_BASE,
    ) -> None:
        super().__init__(api_key, transport=transport, sleep=sleep, api_base=urlscan_base)
        self._rdap_base = rdap_base.rstrip("/")

    def route(self, parsed: CanonicalUrl) -> str:
        """Every website URL is fetchable: the canonical URL itself is what urlscan scans."""
        return parsed.url

    def fetch(self, parsed: CanonicalUrl, target: str, ctx: GenerateContext) -> GenerateResult:
        api_key = self._required_secret()
        scan_http = self._client(
            HttpPolicy.paid_once(URLSCAN.name, read_timeout=CALL_TIMEOUT_S),
            auth_hosts=URLSCAN_HOSTS,
            auth_headers={"API-Key": api_key},
            default_headers={"Accept": "application/json"},
        )
        rdap_http = self._client(
            HttpPolicy.free(RDAP.name, read_timeout=CALL_TIMEOUT_S),
            default_headers={"Accept": "application/rdap+json, application/json"},
        )
        try:
            uuid = ctx.requests.previous(PROVIDER, URLSCAN_RETENTION)
            first_wait = 0.0  # a resumed scan was submitted long ago: poll it at once
            if uuid is None:
                uuid = self._submit(scan_http, target)
                ctx.requests.submitted(PROVIDER, uuid)
                first_wait = INITIAL_WAIT_S
            result = self._poll(scan_http, uuid, first_wait)
            domain = _rdap_domain(result)
            registration, rdap_status = self._registration(rdap_http, domain) if domain else (None, "skipped")
        finally:
            scan_http.close()
            rdap_http.close()
        graph = _page_graph(target, uuid, result, registration, rdap_status, domain)
        return shaping.finish(graph, requests=scan_http.requests_made + rdap_http.requests_made)

    # -------------------------------------------------------------- urlscan

    def _submit(self, http: ProviderHttp, url: str) -> str:
        response = http.post(f"{self._base_url}/scan/", json={"url": url, "visibility": "unlisted"})
        _SUBMIT_STATUS.check(response, http)
        return shaping.parse_payload(_Submit, response.json(), PROVIDER, http).uuid

    def _poll(self, http: ProviderHttp, uuid: str, first_wait: float) -> _Result:
        result_url = f"{self._base_url}/result/{quote(uuid, safe='')}/"
        for poll in range(MAX_POLLS):
            delay = first_wait if poll == 0 else POLL_INTERVAL_S
            if delay > 0:
                self._sleep(delay)
            try:
                response = http.get(result_url)
            except ExternalFetchError as exc:
                if exc.code is ErrorCode.TIMEOUT:
                    log.info("urlscan: poll %d/%d for scan %s timed out", poll + 1, MAX_POLLS, uuid)
                    continue  # a slow poll is a spent poll, not a failed scan
                raise
            if response.status == 404:
                continue  # not ready yet
            _POLL_STATUS.check(response, http, uuid)
            return shaping.parse_payload(_Result, response.json(), PROVIDER, http)
        raise shaping.fetch_error(ErrorCode.TIMEOUT, f"urlscan: scan {uuid} not ready after {MAX_POLLS} polls", http)

    # -------------------------------------------------------------- rdap

    def _registration(self, http: ProviderHttp, domain: str) -> tuple[str | None, str]:
        """(registration date or None, rdap_status). Never raises: RDAP is enrichment."""
        try:
            response = http.get(f"{self._rdap_base}/domain/{quote(domain, safe='')}")
            if response.status == 404:
                return None, "not_found"
            if response.status != 200:
                log.warning("rdap: HTTP %d for %s; no registration date", response.status, domain)
                return None, "error"
            rdap = _Rdap.model_validate(response.json())
        except ExternalFetchError as exc:
            log.warning("rdap: %s for %s; no registration date", exc, domain)
            # A redirect to a non-public address or scheme was refused (nothing sent there).
            return None, "refused_redirect" if exc.code is ErrorCode.UNSAFE_REDIRECT else "error"
        except ValueError:  # pydantic ValidationError is a ValueError
            log.warning("rdap: unexpected payload for %s; no registration date", domain)
            return None, "error"
        for event in rdap.events:
            if (event.eventAction or "").lower() == "registration" and event.eventDate:
                return event.eventDate, "ok"
        return None, "no_registration_event"


def _error_text(body: dict[str, Any]) -> str:
    """message + description (+ errors[].title/detail) of a urlscan error body, for classification only."""
    parts: list[str] = [str(body.get(k, "")) for k in ("message", "description")]
    for err in body.get("errors") or []:
        if isinstance(err, dict):
            parts.extend(str(err.get(k, "")) for k in ("title", "detail", "description"))
    return " ".join(parts)


def _says(hints: tuple[str, ...]) -> Callable[[HttpResponse, dict[str, Any]], bool]:
    return lambda response, body: any(h in _error_text(body).lower() for h in hints)


def _window(response: HttpResponse) -> str:
    return response.headers.get("x-rate-limit-window", "").strip().lower()


_SUBMIT_STATUS = shaping.StatusTable(
    rules=(
        shaping.StatusRule(ErrorCode.NOT_FOUND, "urlscan: host does not resolve (HTTP 400)", frozenset({400}),
                           _says(_NOT_FOUND_HINTS)),
        shaping.StatusRule(ErrorCode.TARGET_BLOCKED, "urlscan: scan refused for this URL (HTTP 400)", frozenset({400}),
                           _says(_BLOCKED_HINTS)),
        shaping.StatusRule(ErrorCode.UPSTREAM, "urlscan: submission rejected (HTTP 400)", frozenset({400})),
        shaping.StatusRule(ErrorCode.CREDIT_EXHAUSTED, "urlscan: payment required (HTTP 402)", frozenset({402})),
        shaping.StatusRule(ErrorCode.CREDIT_EXHAUSTED, "urlscan: {window} scan quota exhausted (HTTP 429)", frozenset({429}),
                           lambda response, body: _window(response) in _LONG_WINDOWS),
        shaping.StatusRule(ErrorCode.RATE_LIMITED, "urlscan: rate limited (HTTP 429, window {window_shown})",
                           frozenset({429})),
    ),
    fallback="urlscan: HTTP {status} on scan submission",
    details=lambda response, body: {"window": _window(response), "window_shown": _window(response) or "unknown"},
)
"""A non-200 scan submission (social_recording/platforms/web/README.md, "Submit failures")."""

_POLL_STATUS = shaping.StatusTable(
    rules=(shaping.StatusRule(ErrorCode.RATE_LIMITED, "urlscan: result polling rate limited (HTTP 429)", frozenset({429})),),
    fallback="urlscan: HTTP {status} polling scan {what}",
)
"""A result poll that is neither ready (200) nor pending (404, handled by the poll loop)."""


@cache
def _public_suffixes() -> tldextract.TLDExtract:
    """The public suffix list as shipped inside the tldextract package: never fetched, never cached to
    disk at run time. ICANN suffixes only: RDAP knows registrations, and `foo.github.io` is `github.io`'s.
    Built at the first website recorded: tldextract (and the `requests` it imports) would add a tenth
    of a second to every run process's start."""
    import tldextract

    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None, include_psl_private_domains=False)


def registrable_domain(host: str) -> str | None:
    """The domain a registrant holds for `host` (`www.example.co.uk` -> `example.co.uk`, punycode kept
    as given); None for an IP address or a host under no public suffix."""
    name = _host_name(host)
    return None if name is None else _public_suffixes()(name).top_domain_under_public_suffix or None


def _host_name(value: str) -> str | None:
    """`value` as a lower-case host name without its trailing dot; None when empty or an IP address."""
    name = value.strip().rstrip(".").lower()
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return name or None
    return None


def _rdap_domain(result: _Result) -> str | None:
    """The registrable domain to ask RDAP about: urlscan's `apexDomain` (task, then page) when it
    sends one, else derived from the scanned `domain` (results of several years carry only that)."""
    apex = shaping.first_str(*(d.strip() for d in (result.task.apexDomain, result.page.apexDomain) if d))
    if apex is not None:
        return _host_name(apex)
    domain = shaping.first_str(*(d.strip() for d in (result.task.domain, result.page.domain) if d))
    return registrable_domain(domain) if domain is not None else None


def _page_graph(
    url: str,
    uuid: str,
    result: _Result,
    registration: str | None,
    rdap_status: str,
    rdap_domain: str | None,
) -> SocialGraph:
    page, task, overall = result.page, result.task, result.verdicts.overall
    final_url = page.url
    outbound = shaping.canonical_links([final_url]) if final_url else []
    outbound = [u for u in outbound if u != url]
    content = SocialObject(
        platform=Platform.WEB,
        platform_key=f"web:{url}",
        subtype="page",
        fields={
            "url": url,
            "final_url": final_url,
            "title": page.title,
            "domain": page.domain,
            "apex_domain": page.apexDomain,
            "ip": page.ip,
            "country": page.country,
            "asn": page.asn,
            "asn_name": page.asnname,
            "server": page.server,
            "http_status": page.status,
            "tls_issuer": page.tlsIssuer,
            "tls_valid_from": page.tlsValidFrom,
            "tls_valid_days": shaping.to_number(page.tlsValidDays, commas=False),
            "tls_age_days": shaping.to_number(page.tlsAgeDays, commas=False),
            "verdict_score": shaping.to_number(overall.score, commas=False),
            "malicious": overall.malicious,
            "registration_date": registration,
            "rdap_domain": rdap_domain,
            "rdap_status": rdap_status,
            "scan_uuid": uuid,
            "scanned_at": task.time,
            "report_url": task.reportURL,
        },
        outbound_urls=outbound,
        media_urls=[task.screenshotURL] if task.screenshotURL else [],
    )
    return SocialGraph(groups=[GraphGroup(ref=shaping.ROOT_REF, content=content)])


make_generator = WebGenerator.make
"""The web generator for the registry; a missing urlscan key fails per URL (attempted=False)."""
