"""Fake Discord invite endpoint: `GET /api/v10/invites/<code>?with_counts=true` on discord.com.

Outcomes: not_found -> 404 `{"message": "Unknown Invite", "code": 10006}`; error / flaky:N -> 503;
rate_limited -> 429 with `retry_after` in the body and `Retry-After` / `X-RateLimit-*` headers, as
Discord sends them. Discord has no blocked invite and no credits (`unservable`).
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

import httpx

from social_recording.domain.urls import CanonicalUrl
from social_recording.sandbox import fake_api as api
from social_recording.sandbox.fake_api import fake_content as fake

DISCORD_HOSTS = frozenset({"discord.com"})
_INVITE_PATH = re.compile(r"^/api/v\d+/invites/([^/]+)/?$")
_EPOCH_MS = 1_420_070_400_000  # Discord's snowflake epoch (2015-01-01)


def guild_id(code: str) -> str:
    """A snowflake for the server behind invite `code` (deterministic; one per code)."""
    det = api.Det("discord-guild", code.lower())
    created_ms = det.num("created", 1_600_000_000_000, 1_780_000_000_000) - _EPOCH_MS
    return str((created_ms << 22) | det.num("worker", 0, (1 << 22) - 1))


def discord_invite(code: str) -> dict[str, Any]:
    det = api.Det("discord-invite", code.lower())
    gid = guild_id(code)
    name = fake.display_name(det, code)
    members = det.skewed("members", 200_000)
    return {
        "type": 0,
        "code": code,
        "expires_at": None,
        "inviter": {"id": str(int(gid) + 7), "username": fake.handle_for(det, "inviter")},
        "guild": {
            "id": gid,
            "name": name,
            "splash": None,
            "banner": None,
            "description": f"{fake.sentence(det, 'desc').capitalize()} https://x.com/{code.lower()[:15]}",
            "icon": det.hexstr("icon", 32),
            "features": sorted({"COMMUNITY", det.pick("feature", ("NEWS", "INVITE_SPLASH", "DISCOVERABLE"))}),
            "verification_level": det.num("verification", 0, 3),
            "vanity_url_code": None,
            "nsfw_level": 0,
            "nsfw": False,
            "premium_subscription_count": det.num("boosts", 0, 30),
        },
        "guild_id": gid,
        "channel": {"id": str(int(gid) + 1), "type": 0, "name": det.pick("channel", ("general", "welcome", "rules"))},
        "approximate_member_count": members,
        "approximate_presence_count": max(1, members // det.num("online_share", 3, 12)),
        "created_at": api.iso_s(fake.created_date(det)),
    }


class DiscordProvider(api.TargetProvider):
    service = "discord"
    hosts = DISCORD_HOSTS

    def describe(self, request: httpx.Request) -> api.Call:
        match = _INVITE_PATH.match(request.url.path)
        code = unquote(match.group(1)) if match else ""
        subject = f"invite:{code}"
        return api.Call(self.service, subject, [self._outcomes.target_for(subject)], args={"code": code})

    def answer(self, request: httpx.Request, call: api.Call) -> api.Reply:
        code = str(call.args["code"])
        if not code or request.method.upper() != "GET":
            return api.json_reply(404, {"message": "404: Not Found", "code": 0})
        effect = self._outcomes.effective(call.targets[0])
        failed = api.FailureLadder(
            error=lambda: api.json_reply(503, {"message": "upstream connect error", "code": 0}),
            rate_limited=lambda: self.too_many_requests(request, api.RateWindow(1, 1.0, 0.0, 2)),
        ).reply(effect)
        if failed is not None:
            return failed
        if effect is api.OutcomeKind.NOT_FOUND:
            return api.json_reply(404, {"message": "Unknown Invite", "code": 10006})
        return api.json_reply(200, discord_invite(code))

    def too_many_requests(self, request: httpx.Request, window: api.RateWindow) -> api.Reply:
        wait = float(window.reset_after_s)
        return api.json_reply(429, {"message": "You are being rate limited.", "retry_after": wait, "global": False},
                              {"retry-after": str(window.reset_after_s), "x-ratelimit-limit": str(window.limit),
                               "x-ratelimit-remaining": "0", "x-ratelimit-reset-after": f"{wait:.3f}",
                               "x-ratelimit-scope": "user"})


def make_fakes(world: api.FakeWorld) -> list[api.Provider]:
    return [DiscordProvider(world.outcomes)]


def subjects(parsed: CanonicalUrl) -> list[str]:
    seg = parsed.segments
    if len(seg) >= 2 and seg[0] == "invite" and seg[1]:
        return [f"invite:{seg[1]}"]
    return []


def unservable(kind: api.OutcomeKind, parsed: CanonicalUrl) -> str | None:
    if kind is api.OutcomeKind.BLOCKED:
        return "a Discord invite works or is unknown: there is no blocked answer. Use `not_found`"
    if kind is api.OutcomeKind.CREDIT_EXHAUSTED:
        return "Discord's invite endpoint is free: it has no credits, only rate limits. Use `rate_limited`"
    return None
