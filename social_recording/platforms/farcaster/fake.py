"""Fake Neynar v2 API on api.neynar.com: `GET /v2/farcaster/cast?identifier=<client URL>&type=url`,
`GET /v2/farcaster/user/by_username?username=<u>`, `GET /v2/farcaster/channel?id=<id>`, each billed.

Outcomes, as Neynar answers them: not_found -> 404 `{"code": "NotFound", "message": ...}`; error /
flaky:N -> 503; rate_limited -> 429; credit_exhausted -> 402 (the plan's units are spent). Casts,
users and channels are public: there is no blocked answer (`unservable`). A cast URL carries a prefix
of the hash: the answer's full hash extends it, the same for every request naming that prefix.
"""

from __future__ import annotations

import re
from typing import Any

import httpx

from social_recording.domain.urls import CanonicalUrl
from social_recording.platforms.farcaster.spec import RESERVED
from social_recording.sandbox import fake_api as api
from social_recording.sandbox.fake_api import fake_content as fake

NEYNAR_HOSTS = frozenset({"api.neynar.com"})
_CAST_URL = re.compile(r"^https://(?:warpcast\.com|farcaster\.xyz)/([^/]+)/(0x[0-9a-fA-F]+)$")
_HEX = "0123456789abcdef"


def full_hash(prefix: str) -> str:
    """The cast hash a URL's prefix names (40 hex digits after `0x`, deterministic)."""
    head = prefix.lower()[2:]
    return "0x" + head + api.Det("farcaster-hash", head).alnum("rest", 40 - len(head), _HEX)


def fid_for(username: str) -> int:
    return api.Det("farcaster-fid", username.lower()).num("fid", 2, 1_200_000)


def neynar_user(username: str) -> dict[str, Any]:
    det = api.Det("farcaster-user", username.lower())
    return {
        "object": "user",
        "fid": fid_for(username),
        "username": username.lower(),
        "display_name": fake.display_name(det, username.split(".")[0]),
        "pfp_url": f"https://i.imgur.com/{det.alnum('pfp', 7)}.png",
        "custody_address": "0x" + det.alnum("custody", 40, _HEX),
        "profile": {"bio": {"text": f"{fake.sentence(det, 'bio')} https://{username.split('.')[0]}.example"}},
        "follower_count": det.skewed("followers", 250_000),
        "following_count": det.num("following", 0, 3_000),
        "verifications": ["0x" + det.alnum("verification", 40, _HEX)],
        "power_badge": det.chance("badge", 1, 4),
    }


def neynar_channel(channel_id: str) -> dict[str, Any]:
    det = api.Det("farcaster-channel", channel_id.lower())
    return {
        "object": "channel",
        "id": channel_id.lower(),
        "url": f"https://warpcast.com/~/channel/{channel_id.lower()}",
        "name": fake.display_name(det, channel_id),
        "description": f"{fake.sentence(det, 'desc').capitalize()}",
        "created_at": det.num("created", 1_690_000_000, 1_780_000_000),
        "follower_count": det.skewed("followers", 120_000),
        "image_url": f"https://i.imgur.com/{det.alnum('image', 7)}.png",
        "lead": neynar_user(fake.handle_for(det, "lead").lower()[:20]),
    }


def neynar_cast(username: str, prefix: str) -> dict[str, Any]:
    cast_hash = full_hash(prefix)
    det = api.Det("farcaster-cast", cast_hash)
    channel = det.pick("channel", ("base", "memes", "solana", None))
    return {"cast": {
        "object": "cast",
        "hash": cast_hash,
        "thread_hash": cast_hash,
        "parent_hash": None,
        "parent_url": f"https://warpcast.com/~/channel/{channel}" if channel else None,
        "author": neynar_user(username),
        "text": f"{fake.sentence(det, 'text').capitalize()} https://x.com/{username.split('.')[0][:15]}",
        "timestamp": api.iso_ms(fake.created_date(det)),
        "embeds": [],
        "reactions": {"likes_count": det.skewed("likes", 5_000), "recasts_count": det.skewed("recasts", 800),
                      "likes": [], "recasts": []},
        "replies": {"count": det.skewed("replies", 300)},
        "channel": None if channel is None else {k: v for k, v in neynar_channel(channel).items()
                                                  if k in ("id", "name", "image_url")} | {"object": "channel_dehydrated"},
        "mentioned_profiles": [],
    }}


def _not_found(what: str) -> api.Reply:
    return api.json_reply(404, {"code": "NotFound", "message": f"{what} not found", "property": "identifier"})


_FAILURES = api.FailureLadder(
    error=lambda: api.json_reply(503, {"code": "ServiceUnavailable", "message": "Service temporarily unavailable"}),
    rate_limited=lambda: api.json_reply(429, {"code": "RateLimitExceeded", "message": "Too many requests"},
                                        {"retry-after": "60"}),
    credit_exhausted=lambda: api.json_reply(402, {"code": "PaymentRequired",
                                                  "message": "Your plan's compute units are used up"}),
)


class NeynarProvider(api.TargetProvider):
    service = "neynar"
    hosts = NEYNAR_HOSTS

    def describe(self, request: httpx.Request) -> api.Call:
        path, params = request.url.path, request.url.params
        subject, args = f"path:{path}", {}
        if path == "/v2/farcaster/cast" and params.get("type") == "url":
            match = _CAST_URL.match(params.get("identifier", ""))
            if match:
                subject, args = f"cast:{match.group(1).lower()}/{match.group(2).lower()}", {
                    "kind": "cast", "username": match.group(1), "prefix": match.group(2)}
        elif path == "/v2/farcaster/user/by_username" and params.get("username"):
            subject, args = f"user:{params['username'].lower()}", {"kind": "user", "username": params["username"]}
        elif path == "/v2/farcaster/channel" and params.get("id"):
            subject, args = f"channel:{params['id'].lower()}", {"kind": "channel", "id": params["id"]}
        targets = [self._outcomes.target_for(subject)] if args else []
        return api.Call(self.service, subject, targets, args=args)

    def answer(self, request: httpx.Request, call: api.Call) -> api.Reply:
        if not request.headers.get("x-api-key", "").strip():
            return api.json_reply(401, {"code": "Unauthorized", "message": "API key is missing or invalid"})
        kind = call.args.get("kind")
        if kind is None:
            return api.json_reply(400, {"code": "InvalidField", "message": "identifier or type is invalid"})
        effect = self._outcomes.effective(call.targets[0])
        failed = _FAILURES.reply(effect)
        if failed is not None:
            return failed
        if effect is api.OutcomeKind.NOT_FOUND:
            return _not_found(str(kind).capitalize())
        if kind == "user":
            return api.json_reply(200, {"user": neynar_user(str(call.args["username"]))})
        if kind == "channel":
            return api.json_reply(200, {"channel": neynar_channel(str(call.args["id"]))})
        return api.json_reply(200, neynar_cast(str(call.args["username"]), str(call.args["prefix"])))


def make_fakes(world: api.FakeWorld) -> list[api.Provider]:
    return [NeynarProvider(world.outcomes)]


def subjects(parsed: CanonicalUrl) -> list[str]:
    seg = list(parsed.segments)
    if len(seg) == 3 and seg[:2] == ["~", "channel"]:
        return [f"channel:{seg[2]}"]
    if len(seg) == 1 and seg[0] not in RESERVED:
        return [f"user:{seg[0]}"]
    if len(seg) == 2 and seg[1].startswith("0x"):
        return [f"cast:{seg[0]}/{seg[1]}"]
    return []


def unservable(kind: api.OutcomeKind, parsed: CanonicalUrl) -> str | None:
    if kind is api.OutcomeKind.BLOCKED:
        return ("Farcaster casts, users and channels are public: Neynar has no blocked answer. Use `not_found`")
    return None
