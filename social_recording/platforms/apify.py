"""Shared Apify client: one synchronous actor run per call (tiktok, instagram, reddit).

`POST https://api.apify.com/v2/acts/<owner>~<actor>/run-sync-get-dataset-items?timeout=<s>` with the
actor input as the JSON body and `Authorization: Bearer <token>`; the answer is the run's dataset as a
JSON array. Apify bills per run, so this is a paid policy: exactly one request, never retried (DESIGN
§9). Timeouts (seed 000 §6.1): connect 15 s, read = actor timeout + 15 s, so our client never gives
up before Apify answers (a run over its `timeout` makes Apify answer 408 while the run continues).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, Self

import httpx
from pydantic import SecretStr

from social_recording.domain.urls import CanonicalUrl, Platform
from social_recording.platforms.base import (
    ErrorCode,
    ExternalFetchError,
    GenerateContext,
    GenerateResult,
    ProviderKeys,
)
from social_recording.platforms.http import HttpPolicy, HttpResponse, ProviderHttp
from social_recording.platforms.shaping import (
    as_dict,
    classify_error_text,
    first_str,
    json_object,
    no_call_error,
    parse_for,
    unrecognised_shape,
    zero_call,
)

APIFY_BASE = "https://api.apify.com/v2"
APIFY_HOST = "api.apify.com"
ACTOR_TIMEOUT_S = 90
"""The actor's own run timeout (query param `timeout`), seed 000 §6.1: 90 s."""
CONNECT_TIMEOUT_S = 15.0
READ_TIMEOUT_S = ACTOR_TIMEOUT_S + 15.0
"""105 s: above the actor timeout, so Apify's own 408 (or the items) arrives before we give up."""

TIKTOK_ACTOR = "clockworks~tiktok-scraper"
INSTAGRAM_ACTOR = "apify~instagram-scraper"
REDDIT_ACTOR = "trudax~reddit-scraper-lite"


def apify_policy() -> HttpPolicy:
    return HttpPolicy.paid_once("apify", connect_timeout=CONNECT_TIMEOUT_S, read_timeout=READ_TIMEOUT_S)


class ApifyRun:
    """The items of one actor run and how many HTTP requests it took."""

    def __init__(self, items: list[dict[str, Any]], requests: int) -> None:
        self.items = items
        self.requests = requests


class ApifyClient:
    """Runs Apify actors synchronously. The token is sent only to api.apify.com."""

    def __init__(
        self,
        token: SecretStr | None,
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        actor_timeout_s: int = ACTOR_TIMEOUT_S,
    ) -> None:
        if actor_timeout_s >= READ_TIMEOUT_S:
            raise ValueError(
                f"actor_timeout_s={actor_timeout_s!r} must stay below the client read timeout {READ_TIMEOUT_S}"
            )
        self._has_token = token is not None and bool(token.get_secret_value())
        self.actor_timeout_s = actor_timeout_s
        self.http = ProviderHttp(
            apify_policy(),
            auth_hosts=[APIFY_HOST],
            auth_headers={"Authorization": f"Bearer {token.get_secret_value()}"} if self._has_token and token else {},
            transport=transport,
            sleep=sleep,
        )

    def __repr__(self) -> str:
        return f"ApifyClient(token_set={self._has_token}, actor_timeout_s={self.actor_timeout_s})"

    def run(self, actor: str, actor_input: Mapping[str, Any]) -> ApifyRun:
        """One synchronous run of `actor` ("owner~name"). Raises ExternalFetchError:
        402 / 403 "Monthly usage hard limit exceeded" -> CREDIT_EXHAUSTED, 429 -> RATE_LIMITED,
        408 (run exceeded its timeout) -> TIMEOUT, other 4xx/5xx and a non-array body -> UPSTREAM."""
        if not self._has_token:
            raise no_call_error(ErrorCode.UPSTREAM, "APIFY_TOKEN not set")
        resp = self.http.request(
            "POST",
            f"{APIFY_BASE}/acts/{actor}/run-sync-get-dataset-items",
            params={"timeout": str(self.actor_timeout_s)},
            json=dict(actor_input),
        )
        _raise_for_status(resp, actor)
        body = resp.json()
        if not isinstance(body, list):
            raise ExternalFetchError(
                ErrorCode.UPSTREAM, f"apify {actor}: malformed response (expected a JSON array of items)"
            )
        items: list[dict[str, Any]] = []
        for item in body:
            if not isinstance(item, dict):
                raise ExternalFetchError(
                    ErrorCode.UPSTREAM, f"apify {actor}: malformed response (dataset item is not an object)"
                )
            items.append(item)
        return ApifyRun(items, resp.requests)


class ApifyGenerator(ABC):
    """Base of the Apify-backed generators (tiktok, instagram, reddit). They share one client across
    `generate()` calls; `attempted` stays per call because each run reports its own request count
    (`ApifyRun.requests`) and the client's errors carry the per-call flag.

    `generate()` is shared too: the URL is read by the subclass's `classify` (from its path alone,
    no call) into `(kind, value)`; "zero" shapes succeed without a request (seed G-4), "none" shapes
    fail NOT_FOUND without one (a paid provider bills even empty answers), the rest go to `fetch`."""

    platform: Platform

    def __init__(self, apify: ApifyClient) -> None:
        self._apify = apify

    @staticmethod
    @abstractmethod
    def classify(parsed: CanonicalUrl) -> tuple[str, str]:
        """("zero", subtype) | ("none", "") | (a fetchable kind, its value)."""

    @abstractmethod
    def fetch(self, parsed: CanonicalUrl, kind: str, value: str) -> GenerateResult:
        """One actor run for a fetchable `kind` (what `classify` returned)."""

    def generate(self, url: str, ctx: GenerateContext) -> GenerateResult:
        parsed = parse_for(url, self.platform)
        kind, value = self.classify(parsed)
        if kind == "zero":
            return zero_call(self.platform, parsed, value)
        if kind == "none":
            raise unrecognised_shape(self.platform, parsed.url)
        return self.fetch(parsed, kind, value)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._apify!r})"

    @classmethod
    def make(
        cls,
        keys: ProviderKeys,
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> Self:
        """The generator for the registry, on a client holding the Apify token."""
        return cls(ApifyClient(keys.apify_token, transport=transport, sleep=sleep))


def _raise_for_status(resp: HttpResponse, actor: str) -> None:
    status = resp.status
    if 200 <= status < 300:
        return
    err_type, err_msg = _apify_error(resp)
    detail = f"apify {actor}: HTTP {status}" + (f" {err_type}" if err_type else "")
    if status == 402:
        raise ExternalFetchError(ErrorCode.CREDIT_EXHAUSTED, f"{detail} (credits or quota exhausted)")
    if status == 403 and _is_usage_limit(err_type, err_msg, resp.text):
        raise ExternalFetchError(ErrorCode.CREDIT_EXHAUSTED, f"{detail} (monthly usage hard limit exceeded)")
    if status == 429:
        raise ExternalFetchError(ErrorCode.RATE_LIMITED, detail)
    if status == 408:
        raise ExternalFetchError(ErrorCode.TIMEOUT, f"{detail} (run exceeded its timeout)")
    if _is_timed_out_run(err_type, err_msg):
        # A run that hit its own `timeout` is reported as a failed run ("status: TIMED-OUT").
        raise ExternalFetchError(ErrorCode.TIMEOUT, f"{detail} (run timed out)")
    raise ExternalFetchError(ErrorCode.UPSTREAM, detail)


def _apify_error(resp: HttpResponse) -> tuple[str | None, str | None]:
    """Apify error bodies are `{"error": {"type": ..., "message": ...}}`; anything else gives Nones."""
    err = as_dict(json_object(resp).get("error"))
    return first_str(err.get("type")), first_str(err.get("message"))


def _is_usage_limit(err_type: str | None, err_msg: str | None, text: str) -> bool:
    joined = " ".join(x for x in (err_type, err_msg, text) if x).lower()
    return "usage hard limit" in joined or "usage-hard-limit" in joined or "hard-limit" in joined


def _is_timed_out_run(err_type: str | None, err_msg: str | None) -> bool:
    joined = " ".join(x for x in (err_type, err_msg) if x).lower()
    return "timed-out" in joined or "timed out" in joined


def error_item_code(item: Mapping[str, Any]) -> ErrorCode | None:
    """Actors report a failed target as a dataset item with an `error` field (shape unconfirmed:
    PLATFORMS.md). Returns None for a normal item; otherwise private/restricted -> TARGET_BLOCKED,
    missing -> NOT_FOUND, anything unrecognised -> UPSTREAM (retryable: we do not know it is final)."""
    err = item.get("error")
    if err is None or err is False or err == "":
        return None
    desc = item.get("errorDescription") or item.get("errorMessage") or item.get("message")
    texts: list[object] = [err, desc] if isinstance(err, str) else [desc]
    if isinstance(err, dict):
        texts += [err.get("type"), err.get("message"), err.get("code")]
    code = classify_error_text(*texts)
    if code in (ErrorCode.NOT_FOUND, ErrorCode.TARGET_BLOCKED, ErrorCode.RATE_LIMITED):
        return code
    return ErrorCode.UPSTREAM


def first_usable(items: list[dict[str, Any]], *, service: str, what: str) -> dict[str, Any]:
    """The first item that is not an error item, for an actor run that fetches one target: an empty
    dataset is NOT_FOUND; when every item is an error item, the first one maps by its text."""
    if not items:
        raise ExternalFetchError(ErrorCode.NOT_FOUND, f"{service}: {what} not found (empty dataset)")
    for item in items:
        if error_item_code(item) is None:
            return item
    code = error_item_code(items[0]) or ErrorCode.UPSTREAM
    raise ExternalFetchError(code, f"{service}: {what}: {error_item_message(items[0])[:200]}")


def error_item_message(item: Mapping[str, Any]) -> str:
    err = item.get("error")
    desc = first_str(item.get("errorDescription"), item.get("errorMessage"), item.get("message"))
    head = err if isinstance(err, str) else type(err).__name__
    return f"{head}: {desc}" if desc else str(head)
