"""SandboxTransport: a deterministic fake of every upstream, plugged in as an httpx transport.

Why a transport (DESIGN §9): the real tracker client, shortlink resolver and platform generators run
unchanged against it, so what the sandbox proves (a payment avoided, a retry converging, a quote cycle
rejected) is proven about the production code paths, not about a mock of them.

Routing is by host: the tracker (`TRACKER_BASE_URL` or any base given), every URL listed in the
scenario's `redirects` (and any other path on a shortener host, which answers 404), api.twitterapi.io,
api.apify.com, www.googleapis.com, api.github.com, t.me, urlscan.io, rdap.org and the RDAP registries it
redirects to. Any other host raises httpx.ConnectError, as a closed network would; only answered
requests reach the ledger.

Outcomes (DESIGN §12) are looked up per target: each request is mapped back to the canonical target
URL it came from through the subject index (subjects.py); a subject no target names answers `ok`.
What each outcome looks like per provider:

| outcome | twitterapi | apify | youtube | github | telegram | urlscan submit |
|---|---|---|---|---|---|---|
| not_found | tweets [] / user: status "error" without data | [] | 200 without items | 404 | "Contact @name" page | 400 DNS Error |
| blocked | user: `unavailable: true` Suspended (tweets: [] — twitterapi has no blocked tweet shape) | error item "private" (profiles: `private`/`privateAccount` true) | 200 without items (the Data API hides private videos the same way) | 451 | "Join Channel" page | 400 blacklisted |
| error / flaky:N | 503 | 503 | 503 backendError | 503 | 503 | 503 |
| rate_limited | 429 | 429 | 429 rateLimitExceeded | 429 + x-ratelimit-remaining 0 | 429 | 429 "Rate limit" |
| credit_exhausted | 402 "Credits is not enough" | 402 | 403 quotaExceeded | 403 + x-ratelimit-remaining 0 (no credits: hourly limit spent) | 429 | 429 "quota" |
| invalid | quote cycle A -> B -> A | ok payload | ok payload | ok payload | ok payload | ok payload |

`invalid` needs a payload that breaks the graph contract; only X's quote chain can express one (every
other generator builds a single group from its payload), so X tweets are the `invalid` case and other
providers answer it as `ok` (documented, not silently: the demo puts `invalid` on a tweet only).
RDAP answers by domain: 404 when a `not_found` web target lives on that domain, else the record.
urlscan polls (`GET /api/v1/result/<uuid>/`) answer 404 on the first poll after each submission, then
200; they are paid (billed with their scan) but their subject `result:<uuid>` keeps them out of the
"repeated" count. `flaky:N` counts every request mapped to the target, across processes (state file).

Ledger subjects for multi-item requests (a `tweet_ids=a,b` lookup, a by-addresses POST, a multi-URL
actor input) join the items with "," after the prefix: `tweet:a,b`, `token:A1,A2`, `apify:u1,u2`.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import httpx

from social_recording.domain.urls import SHORTENER_HOSTS, parse_canonical
from social_recording.sandbox import payloads as P
from social_recording.sandbox._det import Det, iso_ms
from social_recording.sandbox.ledger import PAID_SERVICES, Ledger
from social_recording.sandbox.scenario import OutcomeKind, Scenario
from social_recording.sandbox.state import SandboxState
from social_recording.sandbox.subjects import (
    canonical_or_none,
    registrable_domain,
    subject_key,
    target_subjects,
    x_tweet_author_hint,
)

TRACKER_BASE_URL = "http://tracker.sandbox"
"""Where the sandbox's tracker lives (any non-empty X-API-Key is accepted)."""

SANDBOX_PUBLIC_ADDRESS = "93.184.216.34"


def sandbox_resolve_host(host: str) -> list[str]:
    """DNS for the sandbox: every host resolves to one fixed public address, so the shortlink
    resolver's SSRF check passes without a real resolver (and without network access)."""
    return [SANDBOX_PUBLIC_ADDRESS]


TWITTERAPI_HOST = "api.twitterapi.io"
APIFY_HOST = "api.apify.com"
YOUTUBE_HOSTS = frozenset({"www.googleapis.com", "youtube.googleapis.com"})
GITHUB_HOST = "api.github.com"
TELEGRAM_HOSTS = frozenset({"t.me", "www.t.me", "telegram.me", "telegram.dog"})
URLSCAN_HOST = "urlscan.io"
RDAP_HOST = "rdap.org"
RDAP_REGISTRY_HOSTS = frozenset(
    httpx.URL(u).host for u in (*P.RDAP_REGISTRIES.values(), P.RDAP_DEFAULT_REGISTRY)
)

_TIKTOK_ACTOR = "clockworks~tiktok-scraper"
_INSTAGRAM_ACTOR = "apify~instagram-scraper"
_REDDIT_ACTOR = "trudax~reddit-scraper-lite"
_ACTOR_PATH = re.compile(r"^/v2/acts/([^/]+)/run-sync-get-dataset-items/?$")
_RESULT_PATH = re.compile(r"^/api/v1/result/([0-9a-fA-F-]{36})/?$")
_HTTP_FAILURES = (OutcomeKind.ERROR, OutcomeKind.RATE_LIMITED, OutcomeKind.CREDIT_EXHAUSTED)
_MISSING = (OutcomeKind.NOT_FOUND, OutcomeKind.BLOCKED)


@dataclass
class _Reply:
    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


def _json(status: int, obj: Any, headers: dict[str, str] | None = None,
          content_type: str = "application/json; charset=utf-8") -> _Reply:
    body = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return _Reply(status, body, {"content-type": content_type, **(headers or {})})


def _html(status: int, text: str, headers: dict[str, str] | None = None) -> _Reply:
    return _Reply(status, text.encode("utf-8"), {"content-type": "text/html; charset=utf-8", **(headers or {})})


@dataclass
class _Call:
    """What one request asks: its ledger service and subject, and the target behind each item."""

    service: str
    subject: str
    targets: list[str | None] = field(default_factory=list)


class SandboxTransport(httpx.BaseTransport):
    """The fake upstream. Thread-safe; several processes may share one ledger and state file."""

    def __init__(
        self,
        scenario: Scenario,
        ledger: Ledger | None,
        state_path: str | Path | None = None,
        *,
        sleep: Callable[[float], None] = time.sleep,
        tracker_base_url: str = TRACKER_BASE_URL,
    ) -> None:
        self.scenario = scenario
        self.ledger = ledger
        if state_path is None and ledger is not None:
            state_path = ledger.path.with_name(ledger.path.name + ".state.sqlite")
        self.state = SandboxState(state_path)
        self._sleep = sleep
        base = httpx.URL(tracker_base_url)
        if base.scheme not in ("http", "https") or not base.host:
            raise ValueError(f"tracker_base_url must be an http(s) URL, got {tracker_base_url!r}")
        self._tracker = (base.host.lower(), base.port)
        self._tracker_prefix = base.path.rstrip("/")
        self._index: dict[str, str] = {}
        for url in scenario.targets:
            for subject in target_subjects(url):
                self._index.setdefault(subject_key(subject), url)
        self._redirect_exact = {k.rstrip("/"): v for k, v in scenario.redirects.items()}
        self._redirect_canon: dict[str, str] = {}
        for k, v in scenario.redirects.items():
            canonical = canonical_or_none(k)
            if canonical is not None:
                self._redirect_canon.setdefault(canonical, v)
        self._short_hosts = set(SHORTENER_HOSTS)
        for k in scenario.redirects:
            host = httpx.URL(k).host.lower()
            self._short_hosts.update({host, host.removeprefix("www."), "www." + host.removeprefix("www.")})
        self._rdap_missing: set[str] = set()
        for url, spec in scenario.targets.items():
            if spec.outcome.kind is OutcomeKind.NOT_FOUND and target_subjects(url)[:1] == [f"scan:{url}"]:
                host = parse_canonical(url).host.lower()
                self._rdap_missing.update({host, registrable_domain(host)})
        self._tweet_authors: dict[str, str] = {}
        for raw in self._known_raw_urls():
            hint = x_tweet_author_hint(raw)  # canonical tweet URLs carry no handle: the raw ones may
            if hint is not None:
                self._tweet_authors.setdefault(hint[0], hint[1])

    def __repr__(self) -> str:
        return f"SandboxTransport(tokens={len(self.scenario.tokens)}, targets={len(self.scenario.targets)}, ledger={self.ledger!r})"

    # ------------------------------------------------------------------ entry

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        url = request.url
        host = (url.host or "").lower()
        handler: Callable[[httpx.Request], tuple[_Call, _Reply]]
        if self._redirect_for(str(url)) is not None or host in self._short_hosts:
            handler = self._shortlink
        elif (host, url.port) == self._tracker:
            handler = self._tracker_api
        elif host == TWITTERAPI_HOST:
            handler = self._twitterapi
        elif host == APIFY_HOST:
            handler = self._apify
        elif host in YOUTUBE_HOSTS:
            handler = self._youtube
        elif host == GITHUB_HOST:
            handler = self._github
        elif host in TELEGRAM_HOSTS:
            handler = self._telegram
        elif host == URLSCAN_HOST:
            handler = self._urlscan
        elif host == RDAP_HOST or host in RDAP_REGISTRY_HOSTS:
            handler = self._rdap
        else:
            raise httpx.ConnectError(f"sandbox: no route to host {host!r} (not a sandboxed upstream)", request=request)
        call, reply = handler(request)
        latency_ms = max((self.scenario.latency_ms(t) for t in call.targets), default=self.scenario.default_latency_ms)
        if latency_ms > 0:
            self._sleep(latency_ms / 1000.0)
        if self.ledger is not None:
            self.ledger.append(
                service=call.service,
                method=request.method,
                url=str(url),
                subject=call.subject,
                status=reply.status,
                paid=call.service in PAID_SERVICES,
            )
        body = b"" if request.method.upper() == "HEAD" else reply.body
        return httpx.Response(reply.status, headers=reply.headers, content=body, request=request)

    # ------------------------------------------------------------------ helpers

    def _target_for(self, subject: str) -> str | None:
        return self._index.get(subject_key(subject))

    def _effective(self, target: str | None) -> OutcomeKind:
        """The outcome this request meets; `flaky:N` counts the target's calls (across processes)."""
        outcome = self.scenario.outcome(target)
        if outcome.kind is OutcomeKind.FLAKY:
            calls = self.state.bump(f"flaky:{target}")
            return OutcomeKind.ERROR if calls <= outcome.flaky_calls else OutcomeKind.OK
        return outcome.kind

    def _effects(self, targets: Iterable[str | None]) -> list[OutcomeKind]:
        return [self._effective(t) for t in targets]

    @staticmethod
    def _http_failure(effects: list[OutcomeKind]) -> OutcomeKind | None:
        return next((e for e in effects if e in _HTTP_FAILURES), None)

    def _redirect_for(self, url: str) -> str | None:
        hit = self._redirect_exact.get(url.rstrip("/"))
        if hit is None:
            canonical = canonical_or_none(url)
            if canonical is not None:
                hit = self._redirect_canon.get(canonical)
        return hit

    def _known_raw_urls(self) -> list[str]:
        """Every URL the scenario mentions as written: target keys, and token fields (each with every
        redirect hop it goes through)."""
        out = list(self.scenario.targets)
        for token in self.scenario.tokens:
            for value in token.social_values().values():
                if not isinstance(value, str) or not value.strip():
                    continue
                current = value.strip()
                out.append(current)
                for _ in range(5):
                    nxt = self._redirect_for(current)
                    if nxt is None:
                        break
                    current = nxt
                    out.append(current)
        return out

    @staticmethod
    def _body_json(request: httpx.Request) -> Any:
        try:
            return json.loads(request.read() or b"null")
        except (ValueError, UnicodeDecodeError):
            return None

    # ------------------------------------------------------------------ shortlinks

    def _shortlink(self, request: httpx.Request) -> tuple[_Call, _Reply]:
        url = str(request.url)
        call = _Call("shortlink", f"short:{url}")
        location = self._redirect_for(url)
        if location is None:
            return call, _html(404, P.plain_error_page(404, "Not Found"))
        page = f'<html><head><title>Moved</title></head><body><a href="{location}">moved here</a></body></html>'
        return call, _html(301, page, {"location": location})

    # ------------------------------------------------------------------ tracker

    def _tracker_api(self, request: httpx.Request) -> tuple[_Call, _Reply]:
        path = request.url.path
        if self._tracker_prefix and path.startswith(self._tracker_prefix):
            path = path[len(self._tracker_prefix):]
        path = path.rstrip("/") or "/"
        method = request.method.upper()
        if path == "/api/v1/tokens" and method == "GET":
            params = request.url.params
            call = _Call("tracker", f"range:{params.get('startDate', '')}/{params.get('endDate', '')}")
            if not request.headers.get("x-api-key", "").strip():
                return call, self._tracker_error(401, "Unauthorized", "missing X-API-Key")
            groups = [g.strip() for v in params.get_list("afGroupIds") for g in v.split(",") if g.strip()]
            if not groups:
                return call, self._tracker_error(400, "Bad Request", "afGroupIds is required")
            try:
                start = _parse_date(params.get("startDate"), "startDate")
                end = _parse_date(params.get("endDate"), "endDate")
            except ValueError as exc:
                return call, self._tracker_error(400, "Bad Request", str(exc))
            if start > end:
                return call, self._tracker_error(400, "Bad Request", "startDate must not be after endDate")
            tokens = [t for t in self.scenario.tokens if start <= t.last_transfer_at < end and t.investor_count > 1]
            tokens.sort(key=lambda t: (t.last_transfer_at, t.address))
            return call, _json(200, {"data": [self._range_item(t) for t in tokens]})
        if path == "/api/v1/tokens/by-addresses" and method == "POST":
            body = self._body_json(request)
            addresses = body.get("addresses") if isinstance(body, dict) else None
            valid = isinstance(addresses, list) and bool(addresses) and all(
                isinstance(a, str) and a.strip() for a in addresses
            )
            call = _Call("tracker", "token:" + (",".join(a.strip() for a in addresses) if valid and addresses else ""))
            if not request.headers.get("x-api-key", "").strip():
                return call, self._tracker_error(401, "Unauthorized", "missing X-API-Key")
            if not valid or not addresses:
                return call, self._tracker_error(400, "Bad Request", "addresses must be a non-empty array of strings")
            data = []
            for address in addresses:
                token = self.scenario.token(address.strip())
                if token is not None:
                    data.append(self._info_item(token))
            return call, _json(200, {"data": data})
        return _Call("tracker", f"path:{path}"), self._tracker_error(404, "Not Found", f"Cannot {method} {path}")

    @staticmethod
    def _tracker_error(status: int, error: str, message: str) -> _Reply:
        return _json(status, {"statusCode": status, "message": message, "error": error})

    @staticmethod
    def _range_item(token: Any) -> dict[str, Any]:
        det = Det("tracker", token.address)
        return {
            "tokenAddress": token.address,
            "tokenSymbol": token.symbol,
            "tokenName": token.name,
            "imageUrl": token.image_url,
            "investorCount": token.investor_count,
            "firstTransferAt": iso_ms(token.first_transfer_at),
            "lastTransferAt": iso_ms(token.last_transfer_at),
            "totalUsedInDollar": det.num("usd", 1_001, 2_500_000) + det.num("cents", 0, 99) / 100,
            "alphaScore": det.num("alpha", 0, 100),
            "website": token.website,
            "twitter": token.twitter,
            "telegram": token.telegram,
            "discord": token.discord,
        }

    @staticmethod
    def _info_item(token: Any) -> dict[str, Any]:
        det = Det("tracker", token.address)
        return {
            "tokenAddress": token.address,
            "tokenSymbol": token.symbol,
            "tokenName": token.name,
            "imageUrl": token.image_url,
            "website": token.website,
            "twitter": token.twitter,
            "telegram": token.telegram,
            "discord": token.discord,
            "description": f"{token.name or token.symbol or 'token'} on Solana",
            "decimals": 6,
            "totalSupply": "1000000000",
            "firstTransferAt": iso_ms(token.first_transfer_at),
            "lastTransferAt": iso_ms(token.last_transfer_at),
            "investorCount": token.investor_count,
            "holderCount": det.num("holders", 10, 50_000),
        }

    # ------------------------------------------------------------------ twitterapi.io

    def _twitterapi(self, request: httpx.Request) -> tuple[_Call, _Reply]:
        path = request.url.path.rstrip("/")
        params = request.url.params
        ids: list[str] = []
        handle = ""
        if path == "/twitter/tweets":
            ids = [i.strip() for v in params.get_list("tweet_ids") for i in v.split(",") if i.strip()]
            call = _Call("twitterapi", "tweet:" + ",".join(ids), [self._target_for(f"tweet:{i}") for i in ids])
        elif path == "/twitter/user/info":
            handle = params.get("userName", "").strip().lstrip("@")
            call = _Call("twitterapi", f"user:{handle}", [self._target_for(f"user:{handle}")])
        else:
            return _Call("twitterapi", f"path:{path}"), _json(404, P.x_error("Not Found"))
        if not request.headers.get("x-api-key", "").strip():
            return call, _json(401, P.x_error("Unauthorized: missing or invalid X-API-Key"))
        if not call.subject.split(":", 1)[1]:
            return call, _json(400, P.x_error("tweet_ids is required" if path.endswith("tweets") else "userName is required"))
        effects = self._effects(call.targets)
        failure = self._http_failure(effects)
        if failure is OutcomeKind.ERROR:
            return call, _json(503, P.x_error("Service Unavailable"))
        if failure is OutcomeKind.RATE_LIMITED:
            return call, _json(429, P.x_error("Too many requests, please slow down"), {"retry-after": "5"})
        if failure is OutcomeKind.CREDIT_EXHAUSTED:
            return call, _json(402, P.x_error("Credits is not enough.Please recharge"))
        if path == "/twitter/tweets":
            tweets: list[dict[str, Any]] = []
            for tweet_id, effect in zip(ids, effects, strict=True):
                if effect in _MISSING:
                    continue
                author = self._tweet_authors.get(tweet_id)
                if effect is OutcomeKind.INVALID:
                    tweets.append(P.x_quote_cycle(tweet_id, author))
                else:
                    tweets.append(P.x_tweet(tweet_id, author))
            return call, _json(200, P.x_tweets(tweets))
        effect = effects[0]
        if effect is OutcomeKind.NOT_FOUND:
            return call, _json(200, {"status": "error", "msg": "User not found"})
        if effect is OutcomeKind.BLOCKED:
            return call, _json(200, P.x_user_info(handle, unavailable_reason="Suspended"))
        return call, _json(200, P.x_user_info(handle))

    # ------------------------------------------------------------------ apify

    def _apify(self, request: httpx.Request) -> tuple[_Call, _Reply]:
        raw_path = request.url.raw_path.split(b"?", 1)[0].decode("ascii", "replace")
        match = _ACTOR_PATH.match(raw_path)
        if match is None:
            return _Call("apify", f"path:{request.url.path}"), _json(
                404, P.apify_error("page-not-found", "We have bad news: there is no API endpoint at this URL.")
            )
        actor = unquote(match.group(1)).replace("/", "~")
        if actor not in (_TIKTOK_ACTOR, _INSTAGRAM_ACTOR, _REDDIT_ACTOR):
            return _Call("apify", f"actor:{actor}"), _json(404, P.apify_error("record-not-found", "Actor was not found"))
        body = self._body_json(request)
        inputs = _apify_inputs(actor, body)
        call = _Call(
            "apify",
            "apify:" + ",".join(u for u, _ in inputs),
            [self._target_for("apify:" + (canonical_or_none(u) or u)) for u, _ in inputs],
        )
        if request.method.upper() != "POST":
            return call, _json(405, P.apify_error("method-not-allowed", "This API endpoint accepts POST only"))
        auth = request.headers.get("authorization", "")
        token = auth[7:].strip() if auth.lower().startswith("bearer ") else request.url.params.get("token", "")
        if not token.strip():
            return call, _json(401, P.apify_error("token-not-provided", "Authentication token was not provided"))
        if not inputs:
            return call, _json(400, P.apify_error("invalid-input", f"Input is not valid: no URL for actor {actor}"))
        effects = self._effects(call.targets)
        failure = self._http_failure(effects)
        if failure is OutcomeKind.ERROR:
            return call, _json(503, P.apify_error("server-error", "Server is temporarily unavailable, try again later"))
        if failure is OutcomeKind.RATE_LIMITED:
            return call, _json(429, P.apify_error("rate-limit-exceeded", "You have exceeded the rate limit of 30 requests per second"))
        if failure is OutcomeKind.CREDIT_EXHAUSTED:
            return call, _json(402, P.apify_error(
                "not-enough-usage-to-run-paid-actor",
                "By launching this job you will exceed the remaining usage on your plan. Upgrade or wait for the next cycle.",
            ))
        results_type = body.get("resultsType", "posts") if isinstance(body, dict) else "posts"
        items: list[dict[str, Any]] = []
        for (value, kind), effect in zip(inputs, effects, strict=True):
            if effect is OutcomeKind.NOT_FOUND:
                continue
            items.extend(_apify_items(actor, value, kind, str(results_type), blocked=effect is OutcomeKind.BLOCKED))
        return call, _json(201, items)

    # ------------------------------------------------------------------ youtube

    def _youtube(self, request: httpx.Request) -> tuple[_Call, _Reply]:
        path = request.url.path.rstrip("/")
        params = request.url.params
        endpoint = path.removeprefix("/youtube/v3/")
        seed = str(request.url)
        if endpoint == "videos":
            ids = [i.strip() for i in params.get("id", "").split(",") if i.strip()]
            subjects = [f"video:{i}" for i in ids]
            prefix = "video:"
        elif endpoint == "channels":
            if params.get("id"):
                ids = [i.strip() for i in params["id"].split(",") if i.strip()]
                subjects = [f"channel:{i}" for i in ids]
            elif params.get("forHandle"):
                ids = [params["forHandle"].strip()]
                subjects = [f"channel:{ids[0] if ids[0].startswith('@') else '@' + ids[0]}"]
            elif params.get("forUsername"):
                ids = [params["forUsername"].strip()]
                subjects = [f"channel:{ids[0]}"]
            else:
                ids, subjects = [], []
            prefix = "channel:"
        elif endpoint == "playlists":
            ids = [i.strip() for i in params.get("id", "").split(",") if i.strip()]
            subjects = [f"playlist:{i}" for i in ids]
            prefix = "playlist:"
        else:
            return _Call("youtube", f"path:{path}"), _json(404, P.google_error(404, "NOT_FOUND", "Not Found", "notFound"))
        call = _Call("youtube", prefix + ",".join(s.split(":", 1)[1] for s in subjects),
                     [self._target_for(s) for s in subjects])
        if not params.get("key", "").strip():
            return call, _json(403, P.google_error(
                403, "PERMISSION_DENIED",
                "Method doesn't allow unregistered callers (callers without established identity). "
                "Please use API Key or other form of API consumer identity to call this API.", "forbidden"))
        if not subjects:
            return call, _json(400, P.google_error(
                400, "INVALID_ARGUMENT", "No filter selected. Expected one of: id, forHandle, forUsername, mine.",
                "missingRequiredParameter", domain="youtube.parameter"))
        effects = self._effects(call.targets)
        failure = self._http_failure(effects)
        if failure is OutcomeKind.ERROR:
            return call, _json(503, P.google_error(503, "UNAVAILABLE", "The service is currently unavailable.", "backendError"))
        if failure is OutcomeKind.RATE_LIMITED:
            return call, _json(429, P.google_error(
                429, "RESOURCE_EXHAUSTED", "The request cannot be completed because you have exceeded the rate limit.",
                "rateLimitExceeded", domain="youtube.quota"))
        if failure is OutcomeKind.CREDIT_EXHAUSTED:
            message = ('The request cannot be completed because you have exceeded your '
                       '<a href="/youtube/v3/getting-started#quota">quota</a>.')
            return call, _json(403, {"error": {"code": 403, "message": message, "errors": [
                {"message": message, "domain": "youtube.quota", "reason": "quotaExceeded"}]}})
        items: list[dict[str, Any]] = []
        for ident, effect in zip(ids, effects, strict=True):
            if effect in _MISSING:
                continue
            if endpoint == "videos":
                items.append(P.youtube_video(ident))
            elif endpoint == "playlists":
                items.append(P.youtube_playlist(ident))
            elif params.get("id"):
                items.append(P.youtube_channel(ident, P.handle_for(Det("yt-channel-handle", ident))))
            else:
                handle = ident.lstrip("@")
                items.append(P.youtube_channel(P.youtube_channel_id(handle), handle))
        kind = {"videos": "video", "channels": "channel", "playlists": "playlist"}[endpoint]
        return call, _json(200, P.youtube_list(kind, items, seed, omit_empty_items=endpoint != "videos"))

    # ------------------------------------------------------------------ github

    def _github(self, request: httpx.Request) -> tuple[_Call, _Reply]:
        segs = [unquote(s) for s in request.url.raw_path.split(b"?", 1)[0].decode("ascii", "replace").split("/") if s]
        authed = bool(request.headers.get("authorization", "").strip())
        limit = 5000 if authed else 60
        headers = {
            "x-github-api-version-selected": "2022-11-28",
            "x-ratelimit-limit": str(limit),
            "x-ratelimit-remaining": str(limit - 1),
            "x-ratelimit-reset": "1793491200",
            "x-ratelimit-used": "1",
            "x-ratelimit-resource": "core",
        }
        if len(segs) == 3 and segs[0] == "repos":
            call = _Call("github", f"repo:{segs[1]}/{segs[2]}", [self._target_for(f"repo:{segs[1]}/{segs[2]}")])
            doc = "repos/repos#get-a-repository"
        elif len(segs) == 2 and segs[0] == "users":
            call = _Call("github", f"github-user:{segs[1]}", [self._target_for(f"github-user:{segs[1]}")])
            doc = "users/users#get-a-user"
        else:
            return _Call("github", f"path:{request.url.path}"), _json(404, P.github_error("Not Found", "", 404), headers)
        effect = self._effective(call.targets[0])
        if effect is OutcomeKind.ERROR:
            return call, _json(503, {"message": "No server is currently available to service your request."}, headers)
        if effect in (OutcomeKind.RATE_LIMITED, OutcomeKind.CREDIT_EXHAUSTED):
            spent = {**headers, "x-ratelimit-remaining": "0", "x-ratelimit-used": str(limit)}
            message = (f"API rate limit exceeded for {SANDBOX_PUBLIC_ADDRESS}. (But here's the good news: "
                       "Authenticated requests get a higher rate limit. Check out the documentation for more details.)")
            status = 429 if effect is OutcomeKind.RATE_LIMITED else 403
            return call, _json(status, P.github_error(message, "overview/rate-limits-for-the-rest-api", status), spent)
        if effect is OutcomeKind.NOT_FOUND:
            return call, _json(404, P.github_error("Not Found", doc, 404), headers)
        if effect is OutcomeKind.BLOCKED:
            return call, _json(451, {
                "message": "Repository access blocked" if segs[0] == "repos" else "Account access blocked",
                "block": {"reason": "dmca", "created_at": "2026-10-01T00:00:00Z",
                          "html_url": "https://github.com/github/dmca/blob/master/2026/10/2026-10-01-sandbox.md"},
            }, headers)
        if segs[0] == "repos":
            return call, _json(200, P.github_repo(segs[1], segs[2]), headers)
        return call, _json(200, P.github_user(segs[1]), headers)

    # ------------------------------------------------------------------ telegram

    def _telegram(self, request: httpx.Request) -> tuple[_Call, _Reply]:
        segs = [unquote(s) for s in request.url.path.split("/") if s]
        if not segs:
            return _Call("telegram", "telegram:"), _html(302, "", {"location": "https://telegram.org/"})
        invite = segs[0].startswith("+") or segs[0].lower() == "joinchat"
        if invite:
            name = segs[0] if segs[0].startswith("+") or len(segs) < 2 else f"joinchat/{segs[1]}"
        else:
            name = segs[1] if segs[0].lower() in ("s", "boost") and len(segs) >= 2 else segs[0]
        call = _Call("telegram", f"telegram:{name}", [self._target_for(f"telegram:{name}")])
        effect = self._effective(call.targets[0])
        if effect is OutcomeKind.ERROR:
            return call, _html(503, P.plain_error_page(503, "Service Temporarily Unavailable"))
        if effect in (OutcomeKind.RATE_LIMITED, OutcomeKind.CREDIT_EXHAUSTED):
            return call, _html(429, P.plain_error_page(429, "Too Many Requests"), {"retry-after": "30"})
        if effect is OutcomeKind.NOT_FOUND:
            return call, _html(200, P.telegram_not_found_page(name))
        if invite or effect is OutcomeKind.BLOCKED:
            kind = "group" if "group" in name.lower() or "chat" in name.lower() else "channel"
            return call, _html(200, P.telegram_page(name, kind=kind, private_invite=True))
        return call, _html(200, P.telegram_page(name))

    # ------------------------------------------------------------------ urlscan

    def _urlscan(self, request: httpx.Request) -> tuple[_Call, _Reply]:
        path = request.url.path
        method = request.method.upper()
        result = _RESULT_PATH.match(path)
        if result is not None and method == "GET":
            scan_uuid = result.group(1).lower()
            submitted = self.state.recall(f"urlscan:{scan_uuid}")
            target = self._target_for(f"scan:{canonical_or_none(submitted) or submitted}") if submitted else None
            call = _Call("urlscan", f"result:{scan_uuid}", [target])
            if submitted is None or self.state.bump(f"poll:{scan_uuid}") == 1:
                return call, _json(404, {"message": "Scan is not finished yet", "status": 404})
            return call, _json(200, P.urlscan_result(submitted, scan_uuid))
        if path.rstrip("/") != "/api/v1/scan" or method != "POST":
            return _Call("urlscan", f"path:{path}"), _json(404, {"message": "Not Found", "status": 404})
        body = self._body_json(request)
        submitted_url = body.get("url") if isinstance(body, dict) else None
        if not isinstance(submitted_url, str) or not submitted_url.strip():
            call = _Call("urlscan", "scan:")
            if not request.headers.get("api-key", "").strip():
                return call, _json(401, P.urlscan_message(401, "Missing API key", "An API key is required to submit scans."))
            return call, _json(400, P.urlscan_message(400, "Missing URL properties", "The url property is required."))
        submitted_url = submitted_url.strip()
        call = _Call("urlscan", f"scan:{submitted_url}",
                     [self._target_for(f"scan:{canonical_or_none(submitted_url) or submitted_url}")])
        if not request.headers.get("api-key", "").strip():
            return call, _json(401, P.urlscan_message(401, "Missing API key", "An API key is required to submit scans."))
        effect = self._effective(call.targets[0])
        host = httpx.URL(submitted_url).host if "://" in submitted_url else submitted_url.split("/", 1)[0]
        if effect is OutcomeKind.ERROR:
            return call, _json(503, {"message": "Service Unavailable", "status": 503})
        if effect is OutcomeKind.RATE_LIMITED:
            return call, _json(429, P.urlscan_message(
                429, "Rate limit for scan exceeded", "Please slow down: try again in 30 seconds."),
                {"retry-after": "30", "x-rate-limit-scope": "team", "x-rate-limit-action": "unlisted",
                 "x-rate-limit-window": "minute", "x-rate-limit-remaining": "0"})
        if effect is OutcomeKind.CREDIT_EXHAUSTED:
            return call, _json(429, P.urlscan_message(
                429, "Daily quota of unlisted scans exceeded", "Your quota resets at midnight UTC."),
                {"x-rate-limit-scope": "team", "x-rate-limit-action": "unlisted", "x-rate-limit-window": "day",
                 "x-rate-limit-remaining": "0"})
        if effect is OutcomeKind.NOT_FOUND:
            return call, _json(400, P.urlscan_message(
                400, "DNS Error - Could not resolve domain",
                f"The domain {host} could not be resolved to a valid IPv4/IPv6 address. We won't try to load it in the browser."))
        if effect is OutcomeKind.BLOCKED:
            return call, _json(400, P.urlscan_message(
                400, "Scan prevented ...",
                "The submitted domain is on our blacklist. For your own safety we did not perform this scan..."))
        scan_uuid = P.urlscan_uuid(submitted_url)
        # A new submission restarts its poll sequence: the first poll after it finds the scan unfinished.
        self.state.remember(f"urlscan:{scan_uuid}", submitted_url, reset_counter=f"poll:{scan_uuid}")
        visibility = body.get("visibility", "public") if isinstance(body, dict) else "public"
        return call, _json(200, P.urlscan_submission(submitted_url, scan_uuid, str(visibility)))

    # ------------------------------------------------------------------ rdap

    def _rdap(self, request: httpx.Request) -> tuple[_Call, _Reply]:
        path = request.url.path.rstrip("/")
        host = (request.url.host or "").lower()
        match = re.search(r"/domain/([^/]+)$", path)
        if match is None:
            return _Call("rdap", f"path:{path}"), _json(404, P.rdap_not_found(path), content_type="application/rdap+json")
        domain = unquote(match.group(1)).lower().rstrip(".")
        call = _Call("rdap", f"rdap:{domain}")
        if host == RDAP_HOST:
            return call, _Reply(302, b"", {"location": P.rdap_registry_url(domain)})
        if domain in self._rdap_missing:
            return call, _json(404, P.rdap_not_found(domain), content_type="application/rdap+json")
        return call, _json(200, P.rdap_domain(domain), content_type="application/rdap+json")


# ---------------------------------------------------------------------- module helpers


def _parse_date(value: str | None, name: str) -> datetime:
    """An ISO-8601 date-time (`Z` or an offset; naive = UTC) or a plain date (midnight UTC)."""
    if value is None or not value.strip():
        raise ValueError(f"{name} is required")
    text = value.strip()
    try:
        if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
            d = date.fromisoformat(text)
            return datetime(d.year, d.month, d.day, tzinfo=UTC)
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise ValueError(f"{name} is not an ISO-8601 date: {text!r}") from None
    return parsed.replace(tzinfo=UTC) if parsed.tzinfo is None else parsed.astimezone(UTC)


def _apify_inputs(actor: str, body: Any) -> list[tuple[str, str]]:
    """(value, kind) per target in an actor input: kind "url" or "profile" (tiktok handles)."""
    if not isinstance(body, dict):
        return []
    out: list[tuple[str, str]] = []
    if actor == _TIKTOK_ACTOR:
        for u in body.get("postURLs") or []:
            if isinstance(u, str) and u.strip():
                out.append((u.strip(), "url"))
        for h in body.get("profiles") or []:
            if isinstance(h, str) and h.strip():
                out.append((f"https://tiktok.com/@{h.strip().lstrip('@')}", "profile"))
    elif actor == _INSTAGRAM_ACTOR:
        for u in body.get("directUrls") or []:
            if isinstance(u, str) and u.strip():
                out.append((u.strip(), "url"))
    else:
        for entry in body.get("startUrls") or []:
            u = entry.get("url") if isinstance(entry, dict) else entry
            if isinstance(u, str) and u.strip():
                out.append((u.strip(), "url"))
    return out


def _segments(url: str) -> tuple[str, tuple[str, ...]]:
    """(canonical host, path segments) of an actor input URL; ("", ()) when it is not a URL."""
    canonical = canonical_or_none(url)
    if canonical is None:
        return "", ()
    parsed = parse_canonical(canonical)
    return parsed.host, parsed.segments


def instagram_is_reel(code: str) -> bool:
    """Whether the sandbox's media `code` is a reel (productType clips): a code starting with "R" (any
    case) is one, every other code is a feed post. A fixed, visible rule, so a scenario names a reel on
    purpose (the URL cannot say it: every media's canonical form is instagram.com/p/<code>)."""
    return code[:1].lower() == "r"


def _apify_items(actor: str, value: str, kind: str, results_type: str, *, blocked: bool) -> list[dict[str, Any]]:
    host, seg = _segments(value)
    if actor == _TIKTOK_ACTOR:
        if kind == "profile":
            return P.tiktok_profile_items(seg[0].lstrip("@") if seg else value, private=blocked)
        if blocked:
            return [P.apify_error_item(value, "private", "This account is private")]
        if len(seg) >= 3 and seg[0].startswith("@") and seg[1] in ("video", "photo"):
            # The author belongs to the post, not to the URL (the canonical form is /@/video/<id>, and
            # tiktok.com serves a post under any handle): one post id, one author, whatever URL asks.
            author = P.handle_for(Det("tiktok-post", seg[2]), "author")
            return [P.tiktok_item(seg[2], author, photo=seg[1] == "photo", input_value=value)]
        det = Det("tiktok-short", value)
        return [P.tiktok_item(det.digits("id", 19), P.handle_for(det), photo=False, input_value=value)]
    if actor == _INSTAGRAM_ACTOR:
        if len(seg) >= 2 and seg[0].lower() in ("p", "reel", "reels", "tv"):
            if blocked:
                return [P.apify_error_item(value, "restricted", "This content is private or restricted")]
            # The canonical media form is /p/<code> for every kind: whether it is a reel is a property
            # of the media (its code), as on instagram.com, never of the URL that names it.
            return [P.instagram_post(value, seg[1], reel=instagram_is_reel(seg[1]))]
        if len(seg) == 1:
            if results_type == "details":
                return [P.instagram_profile(value, seg[0], private=blocked)]
            if blocked:
                return [P.apify_error_item(value, "private", "This account is private")]
            return [P.instagram_post(value, Det("ig-latest", seg[0].lower()).b64url("code", 11), reel=False)]
        return []
    # reddit
    if blocked:
        return [P.apify_error_item(value, "private", "This community is private")]
    if host == "redd.it" and seg:
        return [P.reddit_post(value, None, seg[0])]
    # A post's subreddit belongs to the post (reddit redirects /r/<other>/comments/<id> to it): the
    # canonical form reddit.com/comments/<id> names none, and any other form gets the same answer.
    if len(seg) >= 2 and seg[0] == "comments":
        return [P.reddit_post(value, None, seg[1])]
    if len(seg) >= 4 and seg[0] in ("r", "user") and seg[2] == "comments":
        return [P.reddit_post(value, None, seg[3])]
    if len(seg) >= 4 and seg[0] == "r" and seg[2] == "s":
        return [P.reddit_post(value, seg[1], Det("reddit-share", value).base36("id", 7))]
    if len(seg) == 2 and seg[0] == "r":
        return [P.reddit_community(seg[1])]
    if len(seg) >= 2 and seg[0] in ("user", "u"):
        return [P.reddit_user(seg[1])]
    return []


__all__ = ["SANDBOX_PUBLIC_ADDRESS", "TRACKER_BASE_URL", "SandboxTransport", "sandbox_resolve_host"]
