"""The Apify client TikTok, Instagram and Reddit share: one actor run per call, through Apify's
asynchronous run API (its start is the billed request, recorded so a later holder resumes it).

URL shapes, requests, status mapping and the decisions behind them: social_recording/platforms/apify/README.md."""

from __future__ import annotations

import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any, Self

import httpx
from pydantic import BaseModel, Field, SecretStr, ValidationError

from social_recording.domain.urls import CanonicalUrl, Platform
from social_recording.platforms import shaping
from social_recording.platforms.apify import APIFY
from social_recording.platforms.base import (
    NO_PAID_REQUESTS,
    ErrorCode,
    ExternalFetchError,
    GenerateContext,
    GenerateResult,
    PaidRequests,
    ProviderKeys,
)
from social_recording.platforms.http import HttpPolicy, HttpResponse, ProviderHttp

log = logging.getLogger(__name__)

APIFY_BASE = "https://api.apify.com/v2"
APIFY_HOST = "api.apify.com"
PROVIDER = APIFY.name
KEY_VARIABLE = APIFY.key_variable

ACTOR_TIMEOUT_S = 90
"""The actor's own run timeout (query param `timeout`): Apify ends a longer run as TIMED-OUT."""
WAIT_FOR_FINISH_S = 60
"""How long Apify may hold one status read (`waitForFinish`; 60 s is the most it accepts)."""
MAX_STATUS_READS = 3
"""Status reads per call: 3 x 60 s outlasts the actor's 90 s timeout, so by the last read Apify has
ended the run (SUCCEEDED, or TIMED-OUT at the latest) unless it is still queued."""
CONNECT_TIMEOUT_S = 15.0
START_READ_TIMEOUT_S = 30.0
"""Starting a run answers at once (the run proceeds on Apify's side)."""
STATUS_READ_TIMEOUT_S = WAIT_FOR_FINISH_S + 15.0
"""Above `waitForFinish`, so our client never gives up before Apify answers a held read."""

APIFY_RETENTION = timedelta(days=6)
"""How long after its start a run may be resumed instead of started (and paid for) again. Apify
deletes runs beyond an account's latest ten, with their default datasets (unnamed storages), after
the plan's data retention period; its storage documentation has long given 7 days for that (the
free plan's), so 6 days keeps a margin for clocks and for the time a run takes."""

TIKTOK_ACTOR = "clockworks~tiktok-scraper"
INSTAGRAM_ACTOR = "apify~instagram-scraper"
REDDIT_ACTOR = "trudax~reddit-scraper-lite"

_WAITING = frozenset({"READY", "RUNNING", "TIMING-OUT", "ABORTING"})
"""Run statuses that are not final yet (TIMING-OUT and ABORTING end as TIMED-OUT and ABORTED)."""


def start_policy() -> HttpPolicy:
    """The run start: billed, so exactly one attempt."""
    return HttpPolicy.paid_once(PROVIDER, connect_timeout=CONNECT_TIMEOUT_S, read_timeout=START_READ_TIMEOUT_S)


def read_policy() -> HttpPolicy:
    """Status and dataset reads: free, so transient failures are retried."""
    return HttpPolicy.free(PROVIDER, connect_timeout=CONNECT_TIMEOUT_S, read_timeout=STATUS_READ_TIMEOUT_S)


class _Run(BaseModel):
    """The fields of Apify's run object we read (`{"data": <run>}`)."""

    id: str = Field(min_length=1)
    status: str = ""
    defaultDatasetId: str | None = None


class _RunEnvelope(BaseModel):
    data: _Run


class ApifyRun:
    """The items of one actor run, the run's id, and how many HTTP requests this call sent for it."""

    def __init__(self, items: list[dict[str, Any]], requests: int, run_id: str = "") -> None:
        self.items = items
        self.requests = requests
        self.run_id = run_id


class _Sent:
    """Requests sent during one `run` call (the clients are shared across calls)."""

    def __init__(self) -> None:
        self.n = 0

    def add(self, response: HttpResponse) -> HttpResponse:
        self.n += response.requests
        return response


class ApifyClient:
    """Runs Apify actors. The token is sent only to api.apify.com."""

    def __init__(
        self,
        token: SecretStr | None,
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        actor_timeout_s: int = ACTOR_TIMEOUT_S,
    ) -> None:
        if not 0 < actor_timeout_s < MAX_STATUS_READS * WAIT_FOR_FINISH_S:
            raise ValueError(
                f"actor_timeout_s={actor_timeout_s!r} must be positive and stay below the wait budget "
                f"({MAX_STATUS_READS} status reads of {WAIT_FOR_FINISH_S} s)"
            )
        self._has_token = token is not None and bool(token.get_secret_value())
        self.actor_timeout_s = actor_timeout_s
        auth = {"Authorization": f"Bearer {token.get_secret_value()}"} if self._has_token and token else {}
        self.start_http = ProviderHttp(start_policy(), auth_hosts=[APIFY_HOST], auth_headers=auth,
                                       transport=transport, sleep=sleep)
        self.read_http = ProviderHttp(read_policy(), auth_hosts=[APIFY_HOST], auth_headers=auth,
                                      transport=transport, sleep=sleep)

    def __repr__(self) -> str:
        return f"ApifyClient(token_set={self._has_token}, actor_timeout_s={self.actor_timeout_s})"

    def run(
        self, actor: str, actor_input: Mapping[str, Any], requests: PaidRequests = NO_PAID_REQUESTS
    ) -> ApifyRun:
        """One run of `actor` ("owner~name") with `actor_input`: resumed from `requests` when an
        earlier call started one that Apify still keeps, else started (and recorded before the first
        status read). Raises ExternalFetchError (docs/architecture.md, "Platforms"); once a request went out, the
        error says `attempted`."""
        if not self._has_token:
            raise shaping.no_call_error(ErrorCode.UPSTREAM, f"{KEY_VARIABLE} not set")
        sent = _Sent()
        try:
            run: _Run | None = None
            previous = requests.previous(PROVIDER, APIFY_RETENTION)
            if previous is not None:
                run = self._wait(actor, previous, sent, resumed=True)
            if run is None:
                started = self._start(actor, actor_input, sent)
                requests.submitted(PROVIDER, started.id)
                run = self._wait(actor, started.id, sent, resumed=False)
                assert run is not None
            items = self._items(actor, run, sent)
        except ExternalFetchError as exc:
            if sent.n:
                exc.attempted = True
            raise
        return ApifyRun(items, sent.n, run.id)

    def _start(self, actor: str, actor_input: Mapping[str, Any], sent: _Sent) -> _Run:
        response = sent.add(self.start_http.request(
            "POST", f"{APIFY_BASE}/acts/{actor}/runs",
            params={"timeout": str(self.actor_timeout_s)}, json=dict(actor_input),
        ))
        _raise_for_status(response, actor)
        return _parse_run(response, actor)

    def _wait(self, actor: str, run_id: str, sent: _Sent, *, resumed: bool) -> _Run | None:
        """The run once it SUCCEEDED. For a `resumed` run, None when it cannot give a result any more
        (Apify no longer has it, or it ended without success: that outcome was already reported by
        the call that saw it), so a new run is started: paying again is the only way to an answer."""
        status = ""
        for _ in range(MAX_STATUS_READS):
            response = sent.add(self.read_http.get(
                f"{APIFY_BASE}/actor-runs/{run_id}", params={"waitForFinish": str(WAIT_FOR_FINISH_S)}
            ))
            if response.status == 404 and resumed:
                log.info("apify %s: run %s is gone; starting a new one", actor, run_id)
                return None
            _raise_for_status(response, actor)
            run = _parse_run(response, actor)
            status = run.status.upper()
            if status == "SUCCEEDED":
                return run
            if status in _WAITING:
                continue
            if resumed:
                log.info("apify %s: run %s ended %s; starting a new one", actor, run_id, status)
                return None
            if status == "TIMED-OUT":
                raise ExternalFetchError(ErrorCode.TIMEOUT, f"apify {actor}: run {run_id} timed out")
            raise ExternalFetchError(ErrorCode.UPSTREAM, f"apify {actor}: run {run_id} ended {status or 'without a status'}")
        raise ExternalFetchError(
            ErrorCode.TIMEOUT,
            f"apify {actor}: run {run_id} still {status} after {MAX_STATUS_READS} status reads (a later attempt resumes it)",
        )

    def _items(self, actor: str, run: _Run, sent: _Sent) -> list[dict[str, Any]]:
        if not run.defaultDatasetId:
            raise ExternalFetchError(ErrorCode.UPSTREAM, f"apify {actor}: run {run.id} names no dataset")
        response = sent.add(self.read_http.get(
            f"{APIFY_BASE}/datasets/{run.defaultDatasetId}/items", params={"clean": "true", "format": "json"}
        ))
        _raise_for_status(response, actor)
        body = response.json()
        if not isinstance(body, list):
            raise ExternalFetchError(
                ErrorCode.UPSTREAM, f"apify {actor}: malformed dataset (expected a JSON array of items)"
            )
        if not all(isinstance(item, dict) for item in body):
            raise ExternalFetchError(
                ErrorCode.UPSTREAM, f"apify {actor}: malformed dataset (an item is not an object)"
            )
        return body


class ApifyGenerator(ABC):
    """Base of the Apify-backed generators (tiktok, instagram, reddit). They share one client across
    `generate()` calls; `attempted` stays per call because each run reports its own request count
    (`ApifyRun.requests`) and the client's errors carry the per-call flag.

    `generate()` is shared too: the URL is read by the subclass's `classify` (from its path alone,
    no call) into `(kind, value)`; "zero" shapes succeed without a request, "none" shapes are
    UNSUPPORTED without one (a paid provider bills even empty answers), the rest go to `fetch` with
    the context's paid request memory (`ctx.requests`), which `fetch` hands to the client's `run`."""

    platform: Platform

    def __init__(self, apify: ApifyClient) -> None:
        self._apify = apify

    @staticmethod
    @abstractmethod
    def classify(parsed: CanonicalUrl) -> tuple[str, str]:
        """("zero", subtype) | ("none", "") | (a fetchable kind, its value)."""

    @abstractmethod
    def fetch(self, parsed: CanonicalUrl, kind: str, value: str, requests: PaidRequests) -> GenerateResult:
        """One actor run for a fetchable `kind` (what `classify` returned)."""

    def generate(self, url: str, ctx: GenerateContext) -> GenerateResult:
        parsed = shaping.parse_for(url, self.platform)
        kind, value = self.classify(parsed)
        if kind == "zero":
            return shaping.zero_call(self.platform, parsed, value)
        if kind == "none":
            raise shaping.unrecognised_shape(self.platform, parsed.url)
        return self.fetch(parsed, kind, value, ctx.requests)

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
        return cls(ApifyClient(keys.secret(KEY_VARIABLE), transport=transport, sleep=sleep))


def _parse_run(response: HttpResponse, actor: str) -> _Run:
    try:
        return _RunEnvelope.model_validate(response.json()).data
    except ValidationError:
        raise ExternalFetchError(ErrorCode.UPSTREAM, f"apify {actor}: malformed run object") from None


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
    raise ExternalFetchError(ErrorCode.UPSTREAM, detail)


def _apify_error(resp: HttpResponse) -> tuple[str | None, str | None]:
    """Apify error bodies are `{"error": {"type": ..., "message": ...}}`; anything else gives Nones."""
    err = shaping.as_dict(shaping.json_object(resp).get("error"))
    return shaping.first_str(err.get("type")), shaping.first_str(err.get("message"))


def _is_usage_limit(err_type: str | None, err_msg: str | None, text: str) -> bool:
    joined = " ".join(x for x in (err_type, err_msg, text) if x).lower()
    return "usage hard limit" in joined or "usage-hard-limit" in joined or "hard-limit" in joined


def error_item_code(item: Mapping[str, Any]) -> ErrorCode | None:
    """Actors report a failed target as a dataset item with an `error` field (shape unconfirmed).
    Returns None for a normal item; otherwise private/restricted -> TARGET_BLOCKED, missing ->
    NOT_FOUND, anything unrecognised -> UPSTREAM (retryable: we do not know it is final)."""
    err = item.get("error")
    if err is None or err is False or err == "":
        return None
    desc = item.get("errorDescription") or item.get("errorMessage") or item.get("message")
    texts: list[object] = [err, desc] if isinstance(err, str) else [desc]
    if isinstance(err, dict):
        texts += [err.get("type"), err.get("message"), err.get("code")]
    code = shaping.classify_error_text(*texts)
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
    desc = shaping.first_str(item.get("errorDescription"), item.get("errorMessage"), item.get("message"))
    head = err if isinstance(err, str) else type(err).__name__
    return f"{head}: {desc}" if desc else str(head)
