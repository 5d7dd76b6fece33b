"""Discord generator: an invite -> its server (guild) as a venue, through Discord's public invite
endpoint (free, no key).

URL shapes, requests, status mapping and the decisions behind them: social_recording/platforms/discord/README.md."""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel, Field

from social_recording.domain.graph import GraphGroup, SocialGraph, SocialObject
from social_recording.domain.urls import CanonicalUrl, Platform
from social_recording.platforms import shaping
from social_recording.platforms.base import ErrorCode, GenerateContext, GenerateResult
from social_recording.platforms.discord import DISCORD
from social_recording.platforms.http import HttpPolicy, HttpResponse, ProviderHttp

API_BASE = "https://discord.com/api/v10"
CDN_BASE = "https://cdn.discordapp.com"
SERVICE = DISCORD.name
UNKNOWN_INVITE = 10006
"""Discord's JSON error code for an invite that does not exist or has expired."""
GUILD_INVITE = 0

_OWN_PAGES = frozenset({"", "app", "download", "nitro", "safety", "company", "careers", "developers", "terms",
                        "privacy", "guidelines", "branding", "servers", "blog", "login", "register", "discovery"})


class _Guild(BaseModel):
    id: str = Field(min_length=1)
    name: str | None = None
    icon: str | None = None
    description: str | None = None
    features: list[str] = Field(default_factory=list)
    vanity_url_code: str | None = None
    verification_level: int | None = None
    nsfw_level: int | None = None
    premium_subscription_count: Any = None


class _Channel(BaseModel):
    id: str | None = None
    name: str | None = None


class _Invite(BaseModel):
    code: str | None = None
    type: int = GUILD_INVITE
    expires_at: str | None = None
    guild: _Guild | None = None
    channel: _Channel | None = None
    approximate_member_count: Any = None
    approximate_presence_count: Any = None


@dataclass(frozen=True)
class _InviteTarget:
    code: str


def _route(parsed: CanonicalUrl) -> _InviteTarget | shaping.ZeroCallShape | shaping.NoCallShape:
    seg = parsed.segments
    if not seg or (len(seg) == 1 and seg[0].lower() in _OWN_PAGES):
        return shaping.ZeroCallShape("page")
    if seg[0] == "invite" and len(seg) >= 2 and seg[1]:
        return _InviteTarget(seg[1])
    return shaping.unsupported_shape(f"no invite code in /{'/'.join(seg)}")


class DiscordGenerator(shaping.PerCallHttpGenerator[_InviteTarget]):
    """canonical Discord invite URL -> the guild it invites to, as a venue
    (social_recording/platforms/discord/README.md)."""

    platform: Platform = Platform.DISCORD
    default_base_url = API_BASE

    def route(self, parsed: CanonicalUrl) -> _InviteTarget | shaping.ZeroCallShape | shaping.NoCallShape:
        return _route(parsed)

    def fetch(self, parsed: CanonicalUrl, target: _InviteTarget, ctx: GenerateContext) -> GenerateResult:
        with closing(self._client(HttpPolicy.free(SERVICE), default_headers={"Accept": "application/json"})) as http:
            response = http.get(f"{self._base_url}/invites/{quote(target.code, safe='')}",
                                params={"with_counts": "true"})
            _STATUS.check(response, http, target.code)
            invite = shaping.parse_payload(_Invite, response.json(), SERVICE, http)
            graph = _guild_graph(target.code, invite, http)
        return shaping.finish(graph, requests=http.requests_made)


def _is_unknown_invite(response: HttpResponse, body: dict[str, Any]) -> bool:
    return body.get("code") == UNKNOWN_INVITE


_STATUS = shaping.StatusTable(
    rules=(
        shaping.StatusRule(ErrorCode.NOT_FOUND, "discord: invite {what} is unknown or expired (HTTP {status})",
                           frozenset({404}), _is_unknown_invite),
        shaping.StatusRule(ErrorCode.NOT_FOUND, "discord: invite {what} not found (HTTP 404)", frozenset({404})),
        shaping.StatusRule(ErrorCode.RATE_LIMITED, "discord: rate limited (HTTP 429)", frozenset({429})),
    ),
    fallback="discord: HTTP {status} for invite {what}",
)


def _guild_graph(code: str, invite: _Invite, http: ProviderHttp) -> SocialGraph:
    if invite.type != GUILD_INVITE or invite.guild is None:
        raise shaping.fetch_error(ErrorCode.TARGET_BLOCKED, f"discord: invite {code} is not to a server (type {invite.type})",
                                  http)
    guild = invite.guild
    venue = SocialObject(
        platform=Platform.DISCORD,
        platform_key=f"discord:{guild.id}",
        subtype="guild",
        fields={
            "guild_id": guild.id,
            "name": guild.name,
            "description": guild.description,
            "invite_code": code,
            "vanity_url_code": guild.vanity_url_code,
            "features": list(guild.features),
            "verification_level": guild.verification_level,
            "nsfw_level": guild.nsfw_level,
            "channel_name": invite.channel.name if invite.channel else None,
            "expires_at": invite.expires_at,
        },
        outbound_urls=shaping.canonical_links(shaping.urls_in_text(guild.description)),
        icon_url=f"{CDN_BASE}/icons/{guild.id}/{guild.icon}.png" if guild.icon else None,
        metrics=shaping.metrics(
            {
                "members": invite.approximate_member_count,
                "online": invite.approximate_presence_count,
                "boosts": guild.premium_subscription_count,
            },
            commas=False,
        ),
    )
    return SocialGraph(groups=[GraphGroup(ref=shaping.ROOT_REF, venue=venue)])


make_generator = DiscordGenerator.make
"""The Discord generator for the registry (no key)."""
