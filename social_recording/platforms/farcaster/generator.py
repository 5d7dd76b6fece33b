"""Farcaster generator: a cast -> its content, author and channel; a profile -> its account; a channel
-> its venue, through Neynar's v2 API (paid per request: one attempt, whatever happens).

URL shapes, requests, status mapping and the decisions behind them: social_recording/platforms/farcaster/README.md."""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from social_recording.domain.graph import GraphGroup, SocialGraph, SocialObject
from social_recording.domain.urls import CanonicalUrl, Platform
from social_recording.platforms import shaping
from social_recording.platforms.base import ErrorCode, GenerateContext, GenerateResult
from social_recording.platforms.farcaster.spec import NEYNAR, RESERVED
from social_recording.platforms.http import HttpPolicy, ProviderHttp

API_BASE = "https://api.neynar.com/v2/farcaster"
AUTH_HOSTS = frozenset({"api.neynar.com"})
CLIENT_URL = "https://warpcast.com"
"""The host Neynar's `type=url` lookup is documented with (the client serves the same paths on both)."""
SERVICE = NEYNAR.name


class _Bio(BaseModel):
    text: str | None = None


class _Profile(BaseModel):
    bio: _Bio | None = None


class _User(BaseModel):
    fid: int
    username: str | None = None
    display_name: str | None = None
    pfp_url: str | None = None
    profile: _Profile | None = None
    follower_count: Any = None
    following_count: Any = None
    verifications: list[str] = Field(default_factory=list)
    power_badge: bool | None = None


class _Channel(BaseModel):
    id: str = Field(min_length=1)
    name: str | None = None
    description: str | None = None
    image_url: str | None = None
    follower_count: Any = None
    created_at: Any = None
    lead: _User | None = None


class _Reactions(BaseModel):
    likes_count: Any = None
    recasts_count: Any = None


class _Replies(BaseModel):
    count: Any = None


class _Cast(BaseModel):
    hash: str = Field(pattern=r"^0x[0-9a-fA-F]{40}$")
    thread_hash: str | None = None
    parent_hash: str | None = None
    parent_url: str | None = None
    author: _User
    text: str | None = None
    timestamp: str | None = None
    embeds: list[dict[str, Any]] = Field(default_factory=list)
    reactions: _Reactions | None = None
    replies: _Replies | None = None
    channel: _Channel | None = None


class _CastAnswer(BaseModel):
    cast: _Cast


class _UserAnswer(BaseModel):
    user: _User


class _ChannelAnswer(BaseModel):
    channel: _Channel


@dataclass(frozen=True)
class _Target:
    kind: str
    """"cast", "user" or "channel"."""
    path: str
    params: tuple[tuple[str, str], ...]
    what: str


def _route(parsed: CanonicalUrl) -> _Target | shaping.ZeroCallShape | shaping.NoCallShape:
    seg = list(parsed.segments)
    if not seg or (seg[0] == "~" and seg[1:2] != ["channel"]) or (len(seg) == 1 and seg[0] in RESERVED):
        return shaping.ZeroCallShape("page")
    if seg[0] == "~" and len(seg) == 3:
        return _Target("channel", "/channel", (("id", seg[2]),), f"channel {seg[2]}")
    if len(seg) == 1:
        return _Target("user", "/user/by_username", (("username", seg[0]),), f"user {seg[0]}")
    if len(seg) == 2 and seg[1].startswith("0x"):
        url = f"{CLIENT_URL}/{seg[0]}/{seg[1]}"
        return _Target("cast", "/cast", (("identifier", url), ("type", "url")), f"cast {seg[0]}/{seg[1]}")
    return shaping.unsupported_shape(f"no cast, profile or channel in /{'/'.join(seg)}")


class FarcasterGenerator(shaping.PerCallHttpGenerator[_Target]):
    """canonical Farcaster URL -> a cast with its author and channel, a profile, or a channel
    (social_recording/platforms/farcaster/README.md)."""

    platform: Platform = Platform.FARCASTER
    secret_name = "key"
    key_variable = NEYNAR.key_variable
    default_base_url = API_BASE

    def route(self, parsed: CanonicalUrl) -> _Target | shaping.ZeroCallShape | shaping.NoCallShape:
        return _route(parsed)

    def fetch(self, parsed: CanonicalUrl, target: _Target, ctx: GenerateContext) -> GenerateResult:
        api_key = self._required_secret()
        with closing(self._client(HttpPolicy.paid_once(SERVICE), auth_hosts=AUTH_HOSTS,
                                  auth_headers={"x-api-key": api_key},
                                  default_headers={"Accept": "application/json"})) as http:
            response = http.get(f"{self._base_url}{target.path}", params=dict(target.params))
            _STATUS.check(response, http, target.what)
            graph = _graph(target, response.json(), http)
        return shaping.finish(graph, requests=http.requests_made)


_STATUS = shaping.StatusTable(
    rules=(
        shaping.StatusRule(ErrorCode.NOT_FOUND, "farcaster: {what} not found (HTTP {status})", frozenset({404})),
        shaping.StatusRule(ErrorCode.CREDIT_EXHAUSTED, "farcaster: Neynar's plan is spent (HTTP 402)", frozenset({402})),
        shaping.StatusRule(ErrorCode.RATE_LIMITED, "farcaster: rate limited (HTTP 429)", frozenset({429})),
    ),
    fallback="farcaster: HTTP {status} for {what}",
)


def _graph(target: _Target, data: Any, http: ProviderHttp) -> SocialGraph:
    if target.kind == "user":
        return SocialGraph(groups=[GraphGroup(ref=shaping.ROOT_REF, account=_account(
            shaping.parse_payload(_UserAnswer, data, SERVICE, http).user))])
    if target.kind == "channel":
        return SocialGraph(groups=[GraphGroup(ref=shaping.ROOT_REF, venue=_venue(
            shaping.parse_payload(_ChannelAnswer, data, SERVICE, http).channel))])
    cast = shaping.parse_payload(_CastAnswer, data, SERVICE, http).cast
    embedded = [str(e["url"]) for e in cast.embeds if isinstance(e.get("url"), str)]
    quoted = [str(e["cast_id"].get("hash")) for e in cast.embeds if isinstance(e.get("cast_id"), dict)]
    content = SocialObject(
        platform=Platform.FARCASTER,
        platform_key=f"farcaster:{cast.hash.lower()}",
        subtype="reply" if cast.parent_hash else "cast",
        fields={
            "hash": cast.hash.lower(),
            "thread_hash": cast.thread_hash,
            "parent_hash": cast.parent_hash,
            "parent_url": cast.parent_url,
            "text": cast.text,
            "timestamp": cast.timestamp,
            "channel_id": cast.channel.id if cast.channel else None,
            "quoted_hashes": quoted,
            "author_fid": cast.author.fid,
            "author_username": cast.author.username,
        },
        outbound_urls=shaping.canonical_links([*embedded, *shaping.urls_in_text(cast.text)]),
        metrics=shaping.metrics({"likes": cast.reactions.likes_count if cast.reactions else None,
                                 "recasts": cast.reactions.recasts_count if cast.reactions else None,
                                 "replies": cast.replies.count if cast.replies else None}, commas=False),
    )
    venue = _venue(cast.channel) if cast.channel else None
    return SocialGraph(groups=[GraphGroup(ref=shaping.ROOT_REF, content=content, account=_account(cast.author), venue=venue)])


def _account(user: _User) -> SocialObject:
    """The account, keyed by its fid: the username can be changed or given away."""
    bio = user.profile.bio.text if user.profile and user.profile.bio else None
    return SocialObject(
        platform=Platform.FARCASTER,
        platform_key=f"farcaster:{user.fid}",
        subtype="account",
        fields={"fid": user.fid, "username": user.username, "display_name": user.display_name, "bio": bio,
                "verifications": list(user.verifications), "power_badge": user.power_badge},
        outbound_urls=shaping.canonical_links(shaping.urls_in_text(bio)),
        avatar_url=user.pfp_url,
        metrics=shaping.metrics({"followers": user.follower_count, "following": user.following_count}, commas=False),
    )


def _venue(channel: _Channel) -> SocialObject:
    return SocialObject(
        platform=Platform.FARCASTER,
        platform_key=f"farcaster:{channel.id}",
        subtype="channel",
        fields={"channel_id": channel.id, "name": channel.name, "description": channel.description,
                "created_at": channel.created_at, "lead_fid": channel.lead.fid if channel.lead else None},
        outbound_urls=shaping.canonical_links(shaping.urls_in_text(channel.description)),
        icon_url=channel.image_url,
        metrics=shaping.metrics({"followers": channel.follower_count}, commas=False),
    )


make_generator = FarcasterGenerator.make
"""The Farcaster generator for the registry (key: NEYNAR_API_KEY)."""
