"""X (Twitter) generator, via twitterapi.io (paid per call: exactly one request per URL).

URL shapes, requests, status mapping and the decisions behind them: social_recording/platforms/x/README.md."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from typing import Any

import httpx

from social_recording.domain.graph import GraphGroup, SocialContractError, SocialObject
from social_recording.domain.urls import CanonicalUrl, Platform
from social_recording.platforms import shaping
from social_recording.platforms.base import (
    ErrorCode,
    ExternalFetchError,
    GenerateContext,
    GenerateResult,
    Generator,
    ProviderKeys,
)
from social_recording.platforms.http import HttpPolicy, HttpResponse, ProviderHttp
from social_recording.platforms.x import TWITTERAPI
from social_recording.platforms.x.spec import X_HANDLE_RE, X_RESERVED

KEY_VARIABLE = TWITTERAPI.key_variable
TWITTERAPI_BASE = "https://api.twitterapi.io"
TWITTERAPI_HOST = "api.twitterapi.io"
TIMEOUT_S = 30.0
"""twitterapi answers within 30 s; as a paid provider it is called once, never retried."""

_DIGITS = re.compile(r"^[0-9]{1,25}$")

_ZERO_CALL_SUBTYPES: dict[str, str] = {
    "search": "search",
    "intent": "intent",
    "share": "intent",
    "compose": "intent",
    "hashtag": "hashtag",
}
"""The zero-call subtype of X's own pages (X_RESERVED) that are not "page"."""
_NO_PAGE = frozenset({"status", "statuses"})
"""Reserved first segments that show nothing without a tweet id after them."""
_PROFILE_TABS = frozenset(
    {"with_replies", "media", "likes", "highlights", "articles", "followers", "following",
     "verified_followers", "photo", "header_photo", "superfollows", "lists"}
)

_TWEET_FIELDS = ("url", "text", "createdAt", "lang", "isReply", "inReplyToId", "inReplyToUserId",
                 "inReplyToUsername", "conversationId", "source", "type")
_TWEET_METRICS = {"likeCount": "likes", "retweetCount": "retweets", "replyCount": "replies",
                  "quoteCount": "quotes", "viewCount": "views", "bookmarkCount": "bookmarks"}
_USER_FIELDS = ("userName", "name", "description", "location", "createdAt", "isBlueVerified",
                "verifiedType", "url", "isAutomated", "possiblySensitive", "protected")
_USER_METRICS = {"followers": "followers", "following": "following", "statusesCount": "statuses",
                 "favouritesCount": "favourites", "mediaCount": "media"}


def twitterapi_policy() -> HttpPolicy:
    return HttpPolicy.paid_once(TWITTERAPI.name, connect_timeout=TIMEOUT_S, read_timeout=TIMEOUT_S)


class XGenerator:
    """Canonical x.com URL -> social graph. One request per fetchable URL; zero for G-4 shapes."""

    platform: Platform = Platform.X

    def __init__(self, http: ProviderHttp, *, has_key: bool) -> None:
        self._http = http
        self._has_key = has_key

    def __repr__(self) -> str:
        return f"XGenerator(key_set={self._has_key})"

    def generate(self, url: str, ctx: GenerateContext) -> GenerateResult:
        parsed = shaping.parse_for(url, Platform.X)
        target = classify_x_url(parsed)
        if target.kind == "zero":
            return shaping.zero_call(Platform.X, parsed, target.value)
        if target.kind == "none":
            raise shaping.unrecognised_shape(Platform.X, parsed.url)
        if not self._has_key:
            raise shaping.no_call_error(ErrorCode.UPSTREAM, f"{KEY_VARIABLE} not set")
        if target.kind == "tweet":
            return self._tweet(target.value)
        return self._profile(target.value)

    # ------------------------------------------------------------------ request

    def _get(self, path: str, params: dict[str, str], *, what: str) -> tuple[HttpResponse, dict[str, Any]]:
        """One GET to twitterapi.io: its response and its JSON object body, a mapped status or a
        `status: "error"` body raised as the fetch error (the target reported missing by default)."""
        resp = self._http.request("GET", f"{TWITTERAPI_BASE}{path}", params=params)
        body = _checked_body(resp, what=what)
        if body.get("status") == "error":
            raise _body_error(body, default=ErrorCode.NOT_FOUND, what=what)
        return resp, body

    # ------------------------------------------------------------------ tweet

    def _tweet(self, tweet_id: str) -> GenerateResult:
        resp, body = self._get("/twitter/tweets", {"tweet_ids": tweet_id}, what=f"tweet {tweet_id}")
        tweets = body.get("tweets")
        if tweets is None or tweets == []:
            raise ExternalFetchError(ErrorCode.NOT_FOUND, f"twitterapi: tweet {tweet_id} not found")
        if not isinstance(tweets, list):
            raise ExternalFetchError(ErrorCode.UPSTREAM, "twitterapi: malformed response (tweets is not a list)")
        root = next((t for t in tweets if isinstance(t, dict) and shaping.id_str(t.get("id")) == tweet_id), None)
        if root is None:
            raise ExternalFetchError(
                ErrorCode.UPSTREAM, f"twitterapi: response does not contain the requested tweet {tweet_id}"
            )
        return shaping.finish(lambda: tweet_chain_groups(root), requests=resp.requests)

    # ---------------------------------------------------------------- profile

    def _profile(self, handle: str) -> GenerateResult:
        resp, body = self._get("/twitter/user/info", {"userName": handle}, what=f"user @{handle}")
        data = body.get("data")
        if not isinstance(data, dict) or not data:
            raise ExternalFetchError(ErrorCode.NOT_FOUND, f"twitterapi: user @{handle} not found (no data)")
        if data.get("unavailable") is True:
            raise _unavailable_error(data, handle)
        if shaping.id_str(data.get("id")) is None:
            # twitterapi.io answers an unknown handle with an empty user object.
            raise ExternalFetchError(ErrorCode.NOT_FOUND, f"twitterapi: user @{handle} not found (no id)")
        return shaping.finish(lambda: [GraphGroup(ref=shaping.ROOT_REF, account=user_object(data))], requests=resp.requests)


class _Target:
    __slots__ = ("kind", "value")

    def __init__(self, kind: str, value: str) -> None:
        self.kind = kind  # "tweet" | "profile" | "zero" | "none"
        self.value = value  # tweet id | handle | zero-call subtype | ""


def classify_x_url(parsed: CanonicalUrl) -> _Target:
    """Which object a canonical x.com URL names, from its path alone (no call)."""
    seg = list(parsed.segments)
    if not seg:
        return _Target("zero", "page")
    # Canonical tweets are /i/status/<id>; the other status positions can only come from a caller that
    # bypassed parse_canonical, and still name the same tweet id.
    for i, s in enumerate(seg[:-1]):
        if s.lower() in ("status", "statuses") and i <= 2:
            nxt = seg[i + 1]
            if _DIGITS.match(nxt):
                return _Target("tweet", nxt)
            return _Target("none", "")
    first = seg[0].lower()
    if first == "i":
        if len(seg) >= 2 and seg[1].lower() == "communities":
            return _Target("zero", "community")
        return _Target("zero", "page")
    if first in _NO_PAGE or not X_HANDLE_RE.match(seg[0]):
        return _Target("none", "")
    if first in X_RESERVED:
        return _Target("zero", _ZERO_CALL_SUBTYPES.get(first, "page"))
    if len(seg) == 1 or (len(seg) == 2 and seg[1].lower() in _PROFILE_TABS):
        return _Target("profile", seg[0])
    return _Target("none", "")


# ------------------------------------------------------------------ payload -> graph


def tweet_chain_groups(root: dict[str, Any]) -> list[GraphGroup]:
    """The root tweet and every tweet it quotes or retweets, transitively, one group each.

    Each nested tweet's group names the tweet that embeds it as `parent_ref`. The chain is built
    faithfully: when it comes back to a tweet already in the graph (a quote cycle), that tweet's group
    gets the embedding tweet as its parent, which makes a real cycle that plan() rejects (-> invalid).
    Cycles are never silently cut.
    """
    groups: dict[str, GraphGroup] = {}
    order: list[str] = []
    path: list[str] = []  # refs from the root to the tweet being visited

    def visit(tweet: dict[str, Any], parent_ref: str | None) -> None:
        tid = shaping.id_str(tweet.get("id"))
        if tid is None:
            if parent_ref is None:
                raise SocialContractError("twitterapi: root tweet has no id")
            return  # a nested tombstone (deleted / withheld quoted tweet) names no object
        ref = f"tweet:{tid}"
        if ref in path:
            # The chain comes back to one of its own ancestors: record the edge as it is.
            groups[ref] = groups[ref].model_copy(update={"parent_ref": parent_ref})
            return
        if ref in groups:
            return  # the same tweet reached twice without a cycle: the first edge found stays
        groups[ref] = tweet_group(tweet, ref, parent_ref)
        order.append(ref)
        path.append(ref)
        for key in ("quoted_tweet", "retweeted_tweet"):
            nested = tweet.get(key)
            if isinstance(nested, dict) and nested:
                visit(nested, ref)
        path.pop()

    visit(root, None)
    return [groups[r] for r in order]


def tweet_group(tweet: dict[str, Any], ref: str, parent_ref: str | None) -> GraphGroup:
    tid = shaping.id_str(tweet.get("id")) or ""
    entities = shaping.as_dict(tweet.get("entities"))
    links = [shaping.as_dict(u).get("expanded_url") for u in entities.get("urls") or []]
    media = [
        shaping.first_str(shaping.as_dict(m).get("media_url_https"), shaping.as_dict(m).get("media_url"))
        for m in (shaping.as_dict(tweet.get("extendedEntities")).get("media") or entities.get("media") or [])
    ]
    content = shaping.item_object(
        Platform.X, f"x:{tid}", "tweet", tweet,
        fields=_TWEET_FIELDS, metric_names=_TWEET_METRICS, links=links, media=media,
    )
    author = tweet.get("author")
    account = user_object(author) if isinstance(author, dict) and shaping.id_str(author.get("id")) else None
    return GraphGroup(ref=ref, content=content, account=account, parent_ref=parent_ref)


def user_object(user: dict[str, Any]) -> SocialObject:
    """An X account keyed by its numeric id (never the handle: handles are reassigned)."""
    bio = shaping.as_dict(user.get("profile_bio"))
    bio_entities = shaping.as_dict(bio.get("entities"))
    links: list[object] = []
    for part in ("url", "description"):
        links += [shaping.as_dict(u).get("expanded_url") for u in shaping.as_dict(bio_entities.get(part)).get("urls") or []]
    links += [shaping.as_dict(u).get("expanded_url") for u in shaping.as_dict(shaping.as_dict(user.get("entities")).get("url")).get("urls") or []]
    description = shaping.first_str(user.get("description"), bio.get("description"))
    links += [u for u in shaping.urls_in_text(description) if "//t.co/" not in u]
    return shaping.item_object(
        Platform.X, f"x:{shaping.id_str(user.get('id')) or ''}", "user", user,
        fields=_USER_FIELDS, metric_names=_USER_METRICS, links=links,
        media=[user.get("coverPicture")], avatar_url=shaping.first_str(user.get("profilePicture")),
    )


# ------------------------------------------------------------------ status mapping


def _checked_body(resp: HttpResponse, *, what: str) -> dict[str, Any]:
    """Map the HTTP status (twitterapi.io) and return the JSON object body.

    402 -> CREDIT_EXHAUSTED; 429 -> RATE_LIMITED; 401/403 -> UPSTREAM (our key's problem, not the
    target's); 404 -> NOT_FOUND; a 400 whose message names a rate limit / credits maps to that (the
    429 shape is unconfirmed, so both readings are handled); any other non-2xx -> UPSTREAM."""
    status = resp.status
    if status == 402:
        raise ExternalFetchError(ErrorCode.CREDIT_EXHAUSTED, f"twitterapi: HTTP 402 for {what} (credits exhausted)")
    if status == 429:
        raise ExternalFetchError(ErrorCode.RATE_LIMITED, f"twitterapi: HTTP 429 for {what}")
    if status in (401, 403):
        raise ExternalFetchError(ErrorCode.UPSTREAM, f"twitterapi: HTTP {status} for {what} (API key rejected)")
    if status == 404:
        raise ExternalFetchError(ErrorCode.NOT_FOUND, f"twitterapi: HTTP 404 for {what}")
    if not 200 <= status < 300:
        code = shaping.classify_error_text(*_messages(shaping.json_object(resp)))
        if code in (ErrorCode.RATE_LIMITED, ErrorCode.CREDIT_EXHAUSTED):
            raise ExternalFetchError(code, f"twitterapi: HTTP {status} for {what} ({code.value.lower()})")
        raise ExternalFetchError(ErrorCode.UPSTREAM, f"twitterapi: HTTP {status} for {what}")
    body = resp.json()
    if not isinstance(body, dict):
        raise ExternalFetchError(ErrorCode.UPSTREAM, f"twitterapi: malformed response for {what} (not an object)")
    return body


def _messages(body: dict[str, Any]) -> list[object]:
    return [body.get("message"), body.get("msg"), body.get("error") if isinstance(body.get("error"), str) else None]


def _body_error(body: dict[str, Any], *, default: ErrorCode, what: str) -> ExternalFetchError:
    """`status: "error"` in a 2xx body: a rate-limit / credits message maps to that; otherwise the
    target is reported missing (`default`)."""
    code = shaping.classify_error_text(*_messages(body))
    if code not in (ErrorCode.RATE_LIMITED, ErrorCode.CREDIT_EXHAUSTED):
        code = default
    msg = shaping.first_str(body.get("message"), body.get("msg")) or "status error"
    return ExternalFetchError(code, f"twitterapi: {what}: {msg[:200]}")


def _unavailable_error(data: dict[str, Any], handle: str) -> ExternalFetchError:
    """`unavailable: true`: suspended / protected / withheld accounts exist but are closed to us ->
    TARGET_BLOCKED; a reason saying the account does not exist (NotFound, deactivated) -> NOT_FOUND.
    An unknown reason is treated as blocked: it is a target-side state, and retrying cannot help."""
    reason = shaping.first_str(data.get("unavailableReason"), data.get("message")) or "unavailable"
    low = reason.lower().replace(" ", "")
    if "notfound" in low or "deactivated" in low or "doesnotexist" in low or "nouser" in low:
        return ExternalFetchError(ErrorCode.NOT_FOUND, f"twitterapi: user @{handle} unavailable: {reason[:100]}")
    return ExternalFetchError(ErrorCode.TARGET_BLOCKED, f"twitterapi: user @{handle} unavailable: {reason[:100]}")


def make_generator(
    keys: ProviderKeys,
    *,
    transport: httpx.BaseTransport | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Generator:
    key = keys.value(KEY_VARIABLE)
    http = ProviderHttp(
        twitterapi_policy(),
        auth_hosts=[TWITTERAPI_HOST],
        auth_headers={"X-API-Key": key} if key else {},
        transport=transport,
        sleep=sleep,
    )
    return XGenerator(http, has_key=key is not None)
