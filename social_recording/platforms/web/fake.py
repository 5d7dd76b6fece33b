"""Fake urlscan.io: `POST /api/v1/scan/` (the paid submission, behind `API-Key`) and
`GET /api/v1/result/<uuid>/` (404 on the first poll after each submission, then the result).

Polls are billed with their scan: they are ledgered as paid under `result:<uuid>`, which the ledger
never counts as a repeat. Outcomes: not_found -> 400 "DNS Error"; blocked -> 400 blacklisted; error /
flaky:N -> 503; rate_limited -> 429 per-minute window; credit_exhausted -> 429 daily window (urlscan
answers every quota excess with 429 and names the window in `X-Rate-Limit-Window`). A scenario rate
limit counts scan submissions only: urlscan's quotas are per action, and result reads have their own.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from social_recording.domain.urls import CanonicalUrl
from social_recording.outbound.guard import wire_host
from social_recording.platforms.web.generator import registrable_domain
from social_recording.sandbox import fake_api as api
from social_recording.sandbox.fake_api import fake_content as fake

URLSCAN_HOST = "urlscan.io"
_RESULT_PATH = re.compile(r"^/api/v1/result/([0-9a-fA-F-]{36})/?$")


def urlscan_uuid(url: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"sandbox-urlscan:{url}"))


def urlscan_submission(url: str, scan_uuid: str, visibility: str) -> dict[str, Any]:
    return {
        "message": "Submission successful",
        "uuid": scan_uuid,
        "result": f"https://urlscan.io/result/{scan_uuid}/",
        "api": f"https://urlscan.io/api/v1/result/{scan_uuid}/",
        "visibility": visibility,
        "options": {"useragent": "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
                                 "Chrome/130.0.0.0 Safari/537.36"},
        "url": url,
        "country": "us",
    }


def urlscan_result(url: str, scan_uuid: str) -> dict[str, Any]:
    det = api.Det("urlscan", url)
    host = re.sub(r"^https?://", "", url).split("/", 1)[0].split("?", 1)[0].split(":", 1)[0].lower()
    apex = registrable_domain(host) or host
    # Results of several years name only `domain`: a third of the answers leave `apexDomain` out.
    apex_field = {} if det.chance("no_apex", 1, 3) else {"apexDomain": apex}
    ip = f"104.21.{det.num('ip3', 0, 255)}.{det.num('ip4', 1, 254)}"
    scanned = det.date("time", datetime(2026, 10, 26, tzinfo=UTC), datetime(2026, 10, 31, tzinfo=UTC))
    tls_from = scanned - timedelta(days=det.num("tls_age", 1, 80))
    title = f"{apex.split('.')[0].title()} | {fake.sentence(det, 'title').capitalize()}"
    links = [
        {"href": f"https://x.com/{apex.split('.')[0][:15].replace('-', '_')}", "text": "X"},
        {"href": f"https://t.me/{apex.split('.')[0].replace('-', '_')}", "text": "Telegram"},
    ]
    return {
        "data": {"requests": [], "cookies": [], "console": [], "links": links, "timing": {}, "globals": []},
        "lists": {
            "ips": [ip],
            "countries": ["US"],
            "asns": ["13335"],
            "domains": sorted({host, "fonts.googleapis.com", "cdnjs.cloudflare.com"}),
            "servers": ["cloudflare"],
            "urls": [url],
            "linkDomains": ["x.com", "t.me"],
            "certificates": [{"subjectName": host, "issuer": "WE1", "validFrom": int(tls_from.timestamp()),
                              "validTo": int((tls_from + timedelta(days=90)).timestamp())}],
            "hashes": [det.hexstr("hash", 64)],
        },
        "meta": {"processors": {}},
        "page": {
            "url": url,
            "domain": host,
            **apex_field,
            "ip": ip,
            "country": "US",
            "asn": "AS13335",
            "asnname": "CLOUDFLARENET, US",
            "server": "cloudflare",
            "title": title,
            "status": "200",
            "mimeType": "text/html",
            "redirected": "off-domain" if det.chance("redirected", 1, 10) else None,
            "tlsIssuer": "WE1",
            "tlsValidFrom": api.iso_ms(tls_from),
            "tlsValidDays": 89,
            "tlsAgeDays": (scanned - tls_from).days,
            "umbrellaRank": None,
            "city": "",
            "ptr": "",
        },
        "stats": {"uniqIPs": 3, "uniqCountries": 1, "dataLength": det.num("bytes", 20_000, 900_000),
                  "encodedDataLength": det.num("enc", 10_000, 400_000), "requests": det.num("requests", 5, 90),
                  "malicious": 0, "adBlocked": 0, "securePercentage": 100, "securityBlocked": 0, "IPv6Percentage": 50},
        "submitter": {"country": "US"},
        "task": {
            "uuid": scan_uuid,
            "time": api.iso_ms(scanned),
            "url": url,
            "visibility": "unlisted",
            "method": "api",
            "source": "sandbox",
            "tags": [],
            "reportURL": f"https://urlscan.io/result/{scan_uuid}/",
            "screenshotURL": f"https://urlscan.io/screenshots/{scan_uuid}.png",
            "domURL": f"https://urlscan.io/dom/{scan_uuid}/",
            **apex_field,
            "domain": host,
        },
        "verdicts": {
            "overall": {"score": 0, "categories": [], "brands": [], "tags": [], "malicious": False,
                        "hasVerdicts": False},
            "urlscan": {"score": 0, "categories": [], "brands": [], "tags": [], "malicious": False,
                        "hasVerdicts": False},
            "engines": {"score": 0, "categories": [], "enginesTotal": 0, "maliciousTotal": 0, "benignTotal": 0,
                        "maliciousVerdicts": [], "benignVerdicts": [], "malicious": False, "hasVerdicts": False},
            "community": {"score": 0, "categories": [], "votesTotal": 0, "votesMalicious": 0, "votesBenign": 0,
                          "tags": [], "malicious": False, "hasVerdicts": False},
        },
    }


def urlscan_message(status: int, message: str, description: str) -> dict[str, Any]:
    return {"message": message, "description": description, "status": status}


def rate_limit_headers(window: str, limit: int, reset_at: float, reset_after_s: int) -> dict[str, str]:
    """urlscan's quota headers for a spent `window` ("minute", "hour", "day")."""
    reset = datetime.fromtimestamp(reset_at, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return {
        "retry-after": str(reset_after_s),
        "x-rate-limit-scope": "team",
        "x-rate-limit-action": "unlisted",
        "x-rate-limit-window": window,
        "x-rate-limit-limit": str(limit),
        "x-rate-limit-remaining": "0",
        "x-rate-limit-reset": reset,
        "x-rate-limit-reset-after": str(reset_after_s),
    }


def window_name(per_seconds: float) -> str:
    """The urlscan quota window a scenario limit of `per_seconds` stands for."""
    if per_seconds <= 60:
        return "minute"
    return "hour" if per_seconds <= 3600 else "day"


_FAILURES = api.FailureLadder(
    error=lambda: api.json_reply(503, {"message": "Service Unavailable", "status": 503}),
    rate_limited=lambda: api.json_reply(429, urlscan_message(
        429, "Rate limit for scan exceeded", "Please slow down: try again in 30 seconds."),
        {"retry-after": "30", "x-rate-limit-scope": "team", "x-rate-limit-action": "unlisted",
         "x-rate-limit-window": "minute", "x-rate-limit-remaining": "0"}),
    credit_exhausted=lambda: api.json_reply(429, urlscan_message(
        429, "Daily quota of unlisted scans exceeded", "Your quota resets at midnight UTC."),
        {"x-rate-limit-scope": "team", "x-rate-limit-action": "unlisted", "x-rate-limit-window": "day",
         "x-rate-limit-remaining": "0"}),
)


class UrlscanProvider(api.TargetProvider):
    service = "urlscan"
    hosts = frozenset({URLSCAN_HOST})

    def _scan_target(self, submitted: str) -> str | None:
        return self._outcomes.target_for(f"scan:{api.canonical_or_none(submitted) or submitted}")

    def describe(self, request: httpx.Request) -> api.Call:
        path, method = request.url.path, request.method.upper()
        result = _RESULT_PATH.match(path)
        if result is not None and method == "GET":
            scan_uuid = result.group(1).lower()
            submitted = self._state.recall(f"urlscan:{scan_uuid}")
            return api.Call(self.service, f"result:{scan_uuid}", [self._scan_target(submitted) if submitted else None],
                            rate_counted=False, args={"op": "poll", "uuid": scan_uuid, "submitted": submitted})
        if path.rstrip("/") != "/api/v1/scan" or method != "POST":
            return api.Call(self.service, f"path:{path}", args={"op": "none"})
        body = api.body_json(request)
        submitted_url = body.get("url") if isinstance(body, dict) else None
        if not isinstance(submitted_url, str) or not submitted_url.strip():
            return api.Call(self.service, "scan:", args={"op": "submit", "url": None, "body": body})
        submitted_url = submitted_url.strip()
        return api.Call(self.service, f"scan:{submitted_url}", [self._scan_target(submitted_url)],
                        args={"op": "submit", "url": submitted_url, "body": body})

    def answer(self, request: httpx.Request, call: api.Call) -> api.Reply:
        op = call.args["op"]
        if op == "none":
            return api.json_reply(404, {"message": "Not Found", "status": 404})
        if op == "poll":
            scan_uuid, submitted = call.args["uuid"], call.args["submitted"]
            if submitted is None or self._state.bump(f"poll:{scan_uuid}") == 1:
                return api.json_reply(404, {"message": "Scan is not finished yet", "status": 404})
            return api.json_reply(200, urlscan_result(submitted, scan_uuid))
        if not request.headers.get("api-key", "").strip():
            return api.json_reply(401, urlscan_message(401, "Missing API key", "An API key is required to submit scans."))
        submitted_url, body = call.args["url"], call.args["body"]
        if submitted_url is None:
            return api.json_reply(400, urlscan_message(400, "Missing URL properties", "The url property is required."))
        effect = self._outcomes.effective(call.targets[0])
        host = wire_host(httpx.URL(submitted_url)) if "://" in submitted_url else submitted_url.split("/", 1)[0]
        failed = _FAILURES.reply(effect)
        if failed is not None:
            return failed
        if effect is api.OutcomeKind.NOT_FOUND:
            return api.json_reply(400, urlscan_message(
                400, "DNS Error - Could not resolve domain",
                f"The domain {host} could not be resolved to a valid IPv4/IPv6 address. We won't try to load it in the browser."))
        if effect is api.OutcomeKind.BLOCKED:
            return api.json_reply(400, urlscan_message(
                400, "Scan prevented ...",
                "The submitted domain is on our blacklist. For your own safety we did not perform this scan..."))
        scan_uuid = urlscan_uuid(submitted_url)
        # A new submission restarts its poll sequence: the first poll after it finds the scan unfinished.
        self._state.remember(f"urlscan:{scan_uuid}", submitted_url, reset_counter=f"poll:{scan_uuid}")
        visibility = body.get("visibility", "public") if isinstance(body, dict) else "public"
        return api.json_reply(200, urlscan_submission(submitted_url, scan_uuid, str(visibility)))

    def too_many_requests(self, request: httpx.Request, window: api.RateWindow) -> api.Reply:
        name = window_name(window.per_seconds)
        return api.json_reply(429, urlscan_message(
            429, f"Rate limit for unlisted scans exceeded ({window.limit} per {name})",
            f"Please slow down: try again in {window.reset_after_s} seconds."),
            rate_limit_headers(name, window.limit, window.reset_at, window.reset_after_s))


def make_fakes(world: api.FakeWorld) -> list[api.Provider]:
    from social_recording.platforms.web.rdap_fake import RdapProvider

    return [UrlscanProvider(world.outcomes), RdapProvider(world.scenario)]


def subjects(parsed: CanonicalUrl) -> list[str]:
    return [f"scan:{parsed.url}"]
