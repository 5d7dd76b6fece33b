"""Fake Bluesky public AppView: `GET /xrpc/app.bsky.feed.getPostThread?uri=at://<actor>/app.bsky.feed.post/<rkey>`
and `GET /xrpc/app.bsky.actor.getProfile?actor=<actor>` on public.api.bsky.app.

Outcomes, as the AppView answers them: not_found -> 400 `{"error": "NotFound"}` (a post) or
`{"error": "InvalidRequest", "message": "Profile not found"}` (a profile); blocked -> 400
`{"error": "AccountTakedown"}` (a taken-down account, the post's author's for a post); error / flaky:N
-> 503; rate_limited -> 429 with the `ratelimit-*` headers only (`ratelimit-reset` in epoch seconds,
30 s ahead: the client waits for the reset, there is no `retry-after`). Free: no credits
(`unservable`). A handle's DID is derived from the handle, so one account keeps one key.
"""

from __future__ import annotations

import math
import re
import time
from typing import Any

import httpx

from social_recording.domain.urls import CanonicalUrl
from social_recording.sandbox import fake_api as api
from social_recording.sandbox.fake_api import fake_content as fake

BLUESKY_HOSTS = frozenset({"public.api.bsky.app"})
_POST_URI = re.compile(r"^at://([^/]+)/app\.bsky\.feed\.post/([^/?#]+)$")
_B32 = "abcdefghijklmnopqrstuvwxyz234567"
_CDN = "https://cdn.bsky.app/img"


def did_for(actor: str) -> str:
    """The DID behind `actor`: itself when it is one, else one derived from the handle."""
    if actor.startswith("did:"):
        return actor
    return "did:plc:" + api.Det("bluesky-did", actor.lower()).alnum("did", 24, _B32)


def handle_for(actor: str) -> str:
    if not actor.startswith("did:"):
        return actor.lower()
    return f"{fake.handle_for(api.Det('bluesky-handle', actor)).lower()}.bsky.social"


def bluesky_profile(actor: str) -> dict[str, Any]:
    did, det = did_for(actor), api.Det("bluesky-profile", did_for(actor))
    handle = handle_for(actor)
    followers = det.skewed("followers", 150_000)
    return {
        "did": did,
        "handle": handle,
        "displayName": fake.display_name(det, handle.split(".")[0]),
        "avatar": f"{_CDN}/avatar/plain/{did}/{det.alnum('avatar', 59, _B32)}@jpeg",
        "associated": {"lists": 0, "feedgens": 0, "starterPacks": 0, "labeler": False},
        "labels": [],
        "createdAt": api.iso_ms(fake.created_date(det)),
        "description": f"{fake.sentence(det, 'bio').capitalize()} https://{handle.split('.')[0]}.example",
        "indexedAt": api.iso_ms(fake.created_date(det, "indexed")),
        "followersCount": followers,
        "followsCount": det.num("follows", 0, 2_000),
        "postsCount": det.num("posts", 1, 20_000),
    }


def bluesky_thread(actor: str, rkey: str) -> dict[str, Any]:
    profile = bluesky_profile(actor)
    did = profile["did"]
    det = api.Det("bluesky-post", did, rkey)
    created = api.iso_ms(fake.created_date(det))
    text = f"{fake.sentence(det, 'text').capitalize()} https://x.com/{profile['handle'].split('.')[0][:15]}"
    author = {k: profile[k] for k in ("did", "handle", "displayName", "avatar", "labels", "createdAt")}
    return {"thread": {
        "$type": "app.bsky.feed.defs#threadViewPost",
        "post": {
            "uri": f"at://{did}/app.bsky.feed.post/{rkey}",
            "cid": "bafyrei" + det.alnum("cid", 52, _B32),
            "author": author,
            "record": {"$type": "app.bsky.feed.post", "createdAt": created, "langs": ["en"], "text": text},
            "replyCount": det.skewed("replies", 400),
            "repostCount": det.skewed("reposts", 2_000),
            "likeCount": det.skewed("likes", 20_000),
            "quoteCount": det.skewed("quotes", 200),
            "indexedAt": created,
            "labels": [],
        },
        "replies": [],
    }}


class BlueskyProvider(api.TargetProvider):
    service = "bluesky"
    hosts = BLUESKY_HOSTS

    def describe(self, request: httpx.Request) -> api.Call:
        params = request.url.params
        if request.url.path == "/xrpc/app.bsky.feed.getPostThread":
            match = _POST_URI.match(params.get("uri", ""))
            if match:
                subject = f"post:{match.group(1)}/{match.group(2)}"
                return api.Call(self.service, subject, [self._outcomes.target_for(subject)],
                                args={"actor": match.group(1), "rkey": match.group(2)})
        if request.url.path == "/xrpc/app.bsky.actor.getProfile" and params.get("actor"):
            subject = f"profile:{params['actor']}"
            return api.Call(self.service, subject, [self._outcomes.target_for(subject)], args={"actor": params["actor"]})
        return api.Call(self.service, f"path:{request.url.path}")

    def answer(self, request: httpx.Request, call: api.Call) -> api.Reply:
        if "actor" not in call.args:
            return api.json_reply(400, {"error": "InvalidRequest", "message": "Input/uri must be a valid at-uri"})
        effect = self._outcomes.effective(call.targets[0])
        failed = api.FailureLadder(
            error=lambda: api.json_reply(503, {"error": "UpstreamFailure", "message": "Upstream Failure"}),
            rate_limited=lambda: self.too_many_requests(request, _scripted_window()),
        ).reply(effect)
        if failed is not None:
            return failed
        actor, rkey = str(call.args["actor"]), call.args.get("rkey")
        if effect is api.OutcomeKind.BLOCKED:
            return api.json_reply(400, {"error": "AccountTakedown", "message": "Account has been suspended"})
        if effect is api.OutcomeKind.NOT_FOUND:
            if rkey is None:
                return api.json_reply(400, {"error": "InvalidRequest", "message": "Profile not found"})
            return api.json_reply(400, {"error": "NotFound", "message": f"Post not found: at://{actor}/app.bsky.feed.post/{rkey}"})
        if rkey is None:
            return api.json_reply(200, bluesky_profile(actor))
        return api.json_reply(200, bluesky_thread(actor, str(rkey)))

    def too_many_requests(self, request: httpx.Request, window: api.RateWindow) -> api.Reply:
        return api.json_reply(429, {"error": "RateLimitExceeded", "message": "Rate Limit Exceeded"},
                              {"ratelimit-limit": str(window.limit),
                               "ratelimit-remaining": "0", "ratelimit-reset": str(int(window.reset_at)),
                               "ratelimit-policy": f"{window.limit};w={int(window.per_seconds)}"})


SCRIPTED_RESET_S = 30
"""How far ahead a scripted `rate_limited` answer puts its window's reset."""


def _scripted_window() -> api.RateWindow:
    """The AppView's 5-minute window of 3,000 requests, spent, resetting SCRIPTED_RESET_S from now."""
    return api.RateWindow(3000, 300.0, math.ceil(time.time()) + SCRIPTED_RESET_S, SCRIPTED_RESET_S)


def make_fakes(world: api.FakeWorld) -> list[api.Provider]:
    return [BlueskyProvider(world.outcomes)]


def subjects(parsed: CanonicalUrl) -> list[str]:
    seg = parsed.segments
    if len(seg) == 2 and seg[0] == "profile":
        return [f"profile:{seg[1]}"]
    if len(seg) == 4 and seg[0] == "profile" and seg[2] == "post":
        return [f"post:{seg[1]}/{seg[3]}"]
    return []


def unservable(kind: api.OutcomeKind, parsed: CanonicalUrl) -> str | None:
    if kind is api.OutcomeKind.CREDIT_EXHAUSTED:
        return "Bluesky's public AppView is free: it has no credits, only rate limits. Use `rate_limited`"
    return None
