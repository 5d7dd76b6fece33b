"""The fake in-house tracker: `GET /api/v1/tokens` (a date range of tokens with more than one investor
group) and `POST /api/v1/tokens/by-addresses`, both behind `X-API-Key` (any non-empty value)."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime
from typing import Any

import httpx

from social_recording.sandbox._det import Det, iso_ms
from social_recording.sandbox.providers._common import (
    Call,
    Provider,
    RateWindow,
    Reply,
    body_json,
    json_items_reply,
    json_reply,
)
from social_recording.sandbox.scenario import Scenario, ScenarioToken

TRACKER_BASE_URL = "http://tracker.sandbox"
"""Where the sandbox's tracker lives (any non-empty X-API-Key is accepted)."""

_RANGE = "/api/v1/tokens"
_BY_ADDRESSES = "/api/v1/tokens/by-addresses"


def _error(status: int, error: str, message: str) -> Reply:
    return json_reply(status, {"statusCode": status, "message": message, "error": error})


def parse_date(value: str | None, name: str) -> datetime:
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


def _token_fields(token: ScenarioToken) -> dict[str, Any]:
    """The fields both tracker endpoints send for a token, as the tracker names them."""
    return {
        "tokenAddress": token.address,
        "tokenSymbol": token.symbol,
        "tokenName": token.name,
        "imageUrl": token.image_url,
        "investorCount": token.investor_count,
        "firstTransferAt": iso_ms(token.first_transfer_at),
        "lastTransferAt": iso_ms(token.last_transfer_at),
        "website": token.website,
        "twitter": token.twitter,
        "telegram": token.telegram,
        "discord": token.discord,
    }


def range_item(token: ScenarioToken) -> dict[str, Any]:
    """A token of `GET /api/v1/tokens`."""
    det = Det("tracker", token.address)
    return {
        **_token_fields(token),
        "totalUsedInDollar": det.num("usd", 1_001, 2_500_000) + det.num("cents", 0, 99) / 100,
        "alphaScore": det.num("alpha", 0, 100),
    }


def info_item(token: ScenarioToken) -> dict[str, Any]:
    """A token of `POST /api/v1/tokens/by-addresses`."""
    return {
        **_token_fields(token),
        "description": f"{token.name or token.symbol or 'token'} on Solana",
        "decimals": 6,
        "totalSupply": "1000000000",
        "holderCount": Det("tracker", token.address).num("holders", 10, 50_000),
    }


class TrackerProvider(Provider):
    service = "tracker"

    def __init__(self, scenario: Scenario, base_url: str = TRACKER_BASE_URL) -> None:
        base = httpx.URL(base_url)
        if base.scheme not in ("http", "https") or not base.host:
            raise ValueError(f"tracker_base_url must be an http(s) URL, got {base_url!r}")
        self._scenario = scenario
        self._where = (base.host.lower(), base.port)
        self._prefix = base.path.rstrip("/")

    def accepts(self, url: httpx.URL) -> bool:
        return ((url.host or "").lower(), url.port) == self._where

    def _path(self, request: httpx.Request) -> str:
        path = request.url.path
        if self._prefix and path.startswith(self._prefix):
            path = path[len(self._prefix):]
        return path.rstrip("/") or "/"

    def describe(self, request: httpx.Request) -> Call:
        path, method = self._path(request), request.method.upper()
        if path == _RANGE and method == "GET":
            params = request.url.params
            return Call(self.service, f"range:{params.get('startDate', '')}/{params.get('endDate', '')}")
        if path == _BY_ADDRESSES and method == "POST":
            body = body_json(request)
            addresses = body.get("addresses") if isinstance(body, dict) else None
            valid = isinstance(addresses, list) and bool(addresses) and all(
                isinstance(a, str) and a.strip() for a in addresses
            )
            listed = [a.strip() for a in addresses] if valid and isinstance(addresses, list) else []
            return Call(self.service, "token:" + ",".join(listed), args={"addresses": listed})
        return Call(self.service, f"path:{path}")

    def answer(self, request: httpx.Request, call: Call) -> Reply:
        path, method = self._path(request), request.method.upper()
        known = (path, method) in ((_RANGE, "GET"), (_BY_ADDRESSES, "POST"))
        if not known:
            return _error(404, "Not Found", f"Cannot {method} {path}")
        if not request.headers.get("x-api-key", "").strip():
            return _error(401, "Unauthorized", "missing X-API-Key")
        if path == _RANGE:
            return self._range(request)
        addresses: list[str] = call.args["addresses"]
        if not addresses:
            return _error(400, "Bad Request", "addresses must be a non-empty array of strings")
        data = [info_item(token) for a in addresses if (token := self._scenario.token(a)) is not None]
        return json_reply(200, {"data": data})

    def _range(self, request: httpx.Request) -> Reply:
        params = request.url.params
        groups = [g.strip() for v in params.get_list("afGroupIds") for g in v.split(",") if g.strip()]
        if not groups:
            return _error(400, "Bad Request", "afGroupIds is required")
        try:
            start = parse_date(params.get("startDate"), "startDate")
            end = parse_date(params.get("endDate"), "endDate")
        except ValueError as exc:
            return _error(400, "Bad Request", str(exc))
        if start > end:
            return _error(400, "Bad Request", "startDate must not be after endDate")
        tokens = [t for t in self._scenario.tokens if start <= t.last_transfer_at < end and t.investor_count > 1]
        tokens.sort(key=lambda t: (t.last_transfer_at, t.address))
        return json_items_reply(200, "data", map(range_item, tokens))

    def too_many_requests(self, request: httpx.Request, window: RateWindow) -> Reply:
        return json_reply(429, {"statusCode": 429, "message": "ThrottlerException: Too Many Requests",
                                "error": "Too Many Requests"}, {"retry-after": str(window.reset_after_s)})
