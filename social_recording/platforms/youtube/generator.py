"""YouTube generator: YouTube Data API v3 (free, daily quota), `https://www.googleapis.com/youtube/v3`.

URL shapes, requests, status mapping and the decisions behind them: social_recording/platforms/youtube/README.md."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field

from social_recording.domain.graph import GraphGroup, SocialGraph, SocialObject
from social_recording.domain.urls import CanonicalUrl, Platform
from social_recording.platforms import shaping
from social_recording.platforms.base import ErrorCode, GenerateContext, GenerateResult
from social_recording.platforms.http import HttpPolicy, HttpResponse, ProviderHttp
from social_recording.platforms.youtube import YOUTUBE
from social_recording.platforms.youtube.spec import YOUTUBE_VIDEO_PATHS

API_BASE = "https://www.googleapis.com/youtube/v3"
AUTH_HOSTS = frozenset({"www.googleapis.com", "youtube.googleapis.com"})
SERVICE = YOUTUBE.name

_QUOTA_REASONS = frozenset({"quotaExceeded", "dailyLimitExceeded", "dailyLimitExceededUnreg"})
_RATE_REASONS = frozenset({"rateLimitExceeded", "userRateLimitExceeded"})
_ZERO_CALL_FIRST = {"results": "search", "feed": "feed", "hashtag": "hashtag"}


# ---------------------------------------------------------------- payloads (the API's own shapes)


class _Thumb(BaseModel):
    url: str | None = None


class _Snippet(BaseModel):
    title: str | None = None
    description: str | None = None
    publishedAt: str | None = None
    channelId: str | None = None
    channelTitle: str | None = None
    customUrl: str | None = None
    country: str | None = None
    thumbnails: dict[str, _Thumb] = Field(default_factory=dict)


class _Item(BaseModel):
    id: str = Field(min_length=1)
    snippet: _Snippet = Field(default_factory=_Snippet)
    statistics: dict[str, Any] = Field(default_factory=dict)
    contentDetails: dict[str, Any] = Field(default_factory=dict)


class _ListResponse(BaseModel):
    items: list[_Item] = Field(default_factory=list)


# ---------------------------------------------------------------- routing


@dataclass(frozen=True)
class _Fetch:
    endpoint: str  # videos | channels | playlists
    params: dict[str, str]
    what: str  # for messages: "video abc", "channel @foo"


def _no_lookup(reason: str) -> shaping.NoCallShape:
    """A channel / video the Data API cannot look up: UNSUPPORTED, no call
    (social_recording/platforms/youtube/README.md, "Decisions")."""
    return shaping.unsupported_shape(reason)


def _route(parsed: CanonicalUrl) -> _Fetch | shaping.ZeroCallShape | shaping.NoCallShape:
    seg = parsed.segments
    query = dict(parsed.query)
    if not seg:
        return shaping.ZeroCallShape("page")
    first = seg[0]
    if first == "watch":
        video_id = query.get("v", "").strip()
        if not video_id:
            return _no_lookup("watch URL without a v= video id")
        return _Fetch("videos", {"part": "snippet,statistics", "id": video_id}, f"video {video_id}")
    if first in YOUTUBE_VIDEO_PATHS and len(seg) >= 2:
        return _Fetch("videos", {"part": "snippet,statistics", "id": seg[1]}, f"video {seg[1]}")
    if first == "channel" and len(seg) >= 2:
        return _Fetch("channels", {"part": "snippet,statistics", "id": seg[1]}, f"channel {seg[1]}")
    if first.startswith("@") and len(first) > 1:
        return _Fetch("channels", {"part": "snippet,statistics", "forHandle": first}, f"channel {first}")
    if first == "user" and len(seg) >= 2:
        return _Fetch(
            "channels", {"part": "snippet,statistics", "forUsername": seg[1]}, f"channel user/{seg[1]}"
        )
    if first == "playlist":
        list_id = query.get("list", "").strip()
        if not list_id:
            return _no_lookup("playlist URL without a list= id")
        return _Fetch("playlists", {"part": "snippet,contentDetails", "id": list_id}, f"playlist {list_id}")
    if first in _ZERO_CALL_FIRST:
        return shaping.ZeroCallShape(_ZERO_CALL_FIRST[first])
    if first == "c":
        return _no_lookup("the Data API has no lookup for /c/<custom> channel URLs")
    return _no_lookup(f"no Data API lookup for YouTube path /{first}")


# ---------------------------------------------------------------- generator


class YouTubeGenerator(shaping.PerCallHttpGenerator[_Fetch]):
    """canonical YouTube URL -> video / playlist content and channel venue
    (social_recording/platforms/youtube/README.md, "Decisions").

    Constructed as `YouTubeGenerator(api_key | None, *, transport=None, sleep=time.sleep, api_base=API_BASE)`."""

    platform: Platform = Platform.YOUTUBE
    secret_name = "key"
    key_variable = YOUTUBE.key_variable
    default_base_url = API_BASE

    def route(self, parsed: CanonicalUrl) -> _Fetch | shaping.ZeroCallShape | shaping.NoCallShape:
        return _route(parsed)

    def fetch(self, parsed: CanonicalUrl, target: _Fetch, ctx: GenerateContext) -> GenerateResult:
        api_key = self._required_secret()
        # One client per invocation: requests_made then counts exactly this invocation's requests.
        with closing(
            self._client(
                HttpPolicy.free(SERVICE),
                auth_hosts=AUTH_HOSTS,
                auth_params={"key": api_key},
                default_headers={"Accept": "application/json"},
            )
        ) as http:
            item = self._fetch_one(http, target)
            if target.endpoint == "videos":
                graph = _video_graph(item, http)
            elif target.endpoint == "playlists":
                graph = _playlist_graph(item, http)
            else:
                graph = SocialGraph(groups=[GraphGroup(ref=shaping.ROOT_REF, venue=_channel_venue(item))])
        return shaping.finish(graph, requests=http.requests_made)

    def _fetch_one(self, http: ProviderHttp, route: _Fetch) -> _Item:
        response = http.get(f"{self._base_url}/{route.endpoint}", params=route.params)
        _STATUS.check(response, http, route.what)
        body = shaping.parse_payload(_ListResponse, response.json(), SERVICE, http)
        if not body.items:
            # The Data API answers 200 with no items for missing, private and deleted targets.
            raise shaping.fetch_error(ErrorCode.NOT_FOUND, f"youtube: {route.what} not found", http)
        return body.items[0]


def _error_reasons(body: dict[str, Any]) -> set[str]:
    """`error.errors[].reason` of a Google API error body (`{}` for a non-JSON body: none)."""
    error = body.get("error")
    if not isinstance(error, dict):
        return set()
    out: set[str] = set()
    for entry in error.get("errors") or []:
        if isinstance(entry, dict) and isinstance(entry.get("reason"), str):
            out.add(entry["reason"])
    return out


def _has_reason(reasons: frozenset[str]) -> Callable[[HttpResponse, dict[str, Any]], bool]:
    return lambda response, body: bool(_error_reasons(body) & reasons)


_STATUS = shaping.StatusTable(
    rules=(
        shaping.StatusRule(ErrorCode.NOT_FOUND, "youtube: {what} not found (HTTP 404)", frozenset({404})),
        shaping.StatusRule(
            ErrorCode.CREDIT_EXHAUSTED,
            "youtube: quota exhausted (HTTP {status}, reason {reasons})",
            when=_has_reason(_QUOTA_REASONS),
        ),
        shaping.StatusRule(ErrorCode.RATE_LIMITED, "youtube: rate limited (HTTP {status}, reason {reasons})",
                           frozenset({429})),
        shaping.StatusRule(ErrorCode.RATE_LIMITED, "youtube: rate limited (HTTP {status}, reason {reasons})",
                           when=_has_reason(_RATE_REASONS)),
    ),
    fallback="youtube: HTTP {status} for {what} (reason {reasons})",
    details=lambda response, body: {"reasons": ",".join(sorted(_error_reasons(body))) or "-"},
)
"""404 / quota / rate limit in this order; anything else UPSTREAM."""


def _best_thumbnail(snippet: _Snippet) -> str | None:
    """The largest thumbnail URL, exactly as received."""
    for size in ("maxres", "standard", "high", "medium", "default"):
        thumb = snippet.thumbnails.get(size)
        if thumb is not None and thumb.url:
            return thumb.url
    return None


def _channel_stub(channel_id: str, title: str | None) -> SocialObject:
    """A channel venue from a video/playlist snippet alone, no extra call
    (social_recording/platforms/youtube/README.md, "Decisions")."""
    return SocialObject(
        platform=Platform.YOUTUBE,
        platform_key=f"youtube:{channel_id}",
        subtype="channel",
        fields={"channel_id": channel_id, "title": title},
    )


def _video_graph(item: _Item, http: ProviderHttp) -> SocialGraph:
    stats = item.statistics
    values = {"views": stats.get("viewCount"), "likes": stats.get("likeCount"), "comments": stats.get("commentCount")}
    return _content_graph(item, http, "video", shaping.metrics(values, commas=False))


def _playlist_graph(item: _Item, http: ProviderHttp) -> SocialGraph:
    return _content_graph(item, http, "playlist", shaping.metrics({"items": item.contentDetails.get("itemCount")}, commas=False))


def _content_graph(item: _Item, http: ProviderHttp, subtype: str, numbers: dict[str, float]) -> SocialGraph:
    """A video or playlist as content (`<subtype>_id` field) with its channel as the venue, all from
    the item's own snippet (one call: social_recording/platforms/youtube/README.md, "Decisions")."""
    snippet = item.snippet
    if not snippet.channelId:
        raise shaping.fetch_error(ErrorCode.UPSTREAM, "unexpected youtube payload shape (snippet.channelId)", http)
    thumb = _best_thumbnail(snippet)
    content = SocialObject(
        platform=Platform.YOUTUBE,
        platform_key=f"youtube:{item.id}",
        subtype=subtype,
        fields={
            f"{subtype}_id": item.id,
            "title": snippet.title,
            "description": snippet.description,
            "published_at": snippet.publishedAt,
            "channel_id": snippet.channelId,
            "channel_title": snippet.channelTitle,
        },
        outbound_urls=shaping.canonical_links(shaping.urls_in_text(snippet.description)),
        media_urls=[thumb] if thumb else [],
        metrics=numbers,
    )
    venue = _channel_stub(snippet.channelId, snippet.channelTitle)
    return SocialGraph(groups=[GraphGroup(ref=shaping.ROOT_REF, content=content, venue=venue)])


def _channel_venue(item: _Item) -> SocialObject:
    snippet = item.snippet
    stats = item.statistics
    hidden = stats.get("hiddenSubscriberCount") is True
    return SocialObject(
        platform=Platform.YOUTUBE,
        platform_key=f"youtube:{item.id}",
        subtype="channel",
        fields={
            "channel_id": item.id,
            "title": snippet.title,
            "description": snippet.description,
            "custom_url": snippet.customUrl,
            "published_at": snippet.publishedAt,
            "country": snippet.country,
            "hidden_subscriber_count": hidden,
        },
        outbound_urls=shaping.canonical_links(shaping.urls_in_text(snippet.description)),
        avatar_url=_best_thumbnail(snippet),
        metrics=shaping.metrics(
            {
                "subscribers": None if hidden else stats.get("subscriberCount"),
                "views": stats.get("viewCount"),
                "videos": stats.get("videoCount"),
            },
            commas=False,
        ),
    )


make_generator = YouTubeGenerator.make
"""The YouTube generator for the registry; a missing key fails per URL (attempted=False)."""
