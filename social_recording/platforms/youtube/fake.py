"""Fake YouTube Data API v3: `videos`, `channels` (by id, `forHandle`, `forUsername`) and `playlists`,
behind `key=`.

Outcomes: not_found and blocked -> 200 without the item (the Data API hides missing, private and
blocked targets alike); error / flaky:N -> 503 backendError; rate_limited -> 429 rateLimitExceeded;
credit_exhausted -> 403 quotaExceeded.
"""

from __future__ import annotations

from typing import Any

import httpx

from social_recording.domain.urls import CanonicalUrl
from social_recording.platforms.youtube.spec import YOUTUBE_VIDEO_PATHS
from social_recording.sandbox import fake_api as api
from social_recording.sandbox.fake_api import fake_content as fake

YOUTUBE_HOSTS = frozenset({"www.googleapis.com", "youtube.googleapis.com"})
_KINDS = {"videos": "video", "channels": "channel", "playlists": "playlist"}


def youtube_channel_id(seed: str) -> str:
    return "UC" + api.Det("yt-channel", seed.lower().lstrip("@")).b64url("id", 22)


def _yt_thumbs_video(video_id: str) -> dict[str, Any]:
    base = f"https://i.ytimg.com/vi/{video_id}"
    return {
        "default": {"url": f"{base}/default.jpg", "width": 120, "height": 90},
        "medium": {"url": f"{base}/mqdefault.jpg", "width": 320, "height": 180},
        "high": {"url": f"{base}/hqdefault.jpg", "width": 480, "height": 360},
        "standard": {"url": f"{base}/sddefault.jpg", "width": 640, "height": 480},
        "maxres": {"url": f"{base}/maxresdefault.jpg", "width": 1280, "height": 720},
    }


def youtube_video(video_id: str) -> dict[str, Any]:
    det = api.Det("yt-video", video_id)
    channel_handle = fake.handle_for(det, "channel")
    title = fake.sentence(det, "title").capitalize()
    description = f"{fake.sentence(det, 'desc')}\n\nWebsite: {fake.site_for(channel_handle)}\nX: https://x.com/{channel_handle}"
    stats: dict[str, str] = {"viewCount": str(det.skewed("views", 20_000_000))}
    if not det.chance("hide_likes", 1, 6):  # likeCount is missing when the owner hides it
        stats["likeCount"] = str(det.skewed("likes", 500_000))
    stats["favoriteCount"] = "0"
    stats["commentCount"] = str(det.skewed("comments", 20_000))
    return {
        "kind": "youtube#video",
        "etag": det.etag(),
        "id": video_id,
        "snippet": {
            "publishedAt": api.iso_s(fake.created_date(det)),
            "channelId": youtube_channel_id(channel_handle),
            "title": title,
            "description": description,
            "thumbnails": _yt_thumbs_video(video_id),
            "channelTitle": fake.display_name(det, channel_handle),
            "tags": [det.pick("tag", fake.TOPICS), "solana"],
            "categoryId": det.pick("category", ("22", "24", "28")),
            "liveBroadcastContent": "none",
            "defaultAudioLanguage": "en",
            "localized": {"title": title, "description": description},
        },
        "statistics": stats,
    }


def youtube_channel(channel_id: str, handle: str) -> dict[str, Any]:
    det = api.Det("yt-channel", channel_id)
    title = fake.display_name(det, handle)
    description = f"{fake.sentence(det, 'desc')}. {fake.site_for(handle)}"
    hidden = det.chance("hidden", 1, 8)
    avatar = f"https://yt3.ggpht.com/{det.b64url('avatar', 60)}"
    return {
        "kind": "youtube#channel",
        "etag": det.etag(),
        "id": channel_id,
        "snippet": {
            "title": title,
            "description": description,
            "customUrl": f"@{handle.lower()}",
            "publishedAt": api.iso_ms(fake.created_date(det)),
            "thumbnails": {
                "default": {"url": f"{avatar}=s88-c-k-c0x00ffffff-no-rj", "width": 88, "height": 88},
                "medium": {"url": f"{avatar}=s240-c-k-c0x00ffffff-no-rj", "width": 240, "height": 240},
                "high": {"url": f"{avatar}=s800-c-k-c0x00ffffff-no-rj", "width": 800, "height": 800},
            },
            "localized": {"title": title, "description": description},
            "country": det.pick("country", fake.COUNTRIES),
        },
        "statistics": {
            "viewCount": str(det.skewed("views", 900_000_000)),
            "subscriberCount": "0" if hidden else str(det.skewed("subs", 5_000_000)),
            "hiddenSubscriberCount": hidden,
            "videoCount": str(det.skewed("videos", 3_000)),
        },
    }


def youtube_playlist(playlist_id: str) -> dict[str, Any]:
    det = api.Det("yt-playlist", playlist_id)
    channel_handle = fake.handle_for(det, "channel")
    title = fake.sentence(det, "title").capitalize()
    return {
        "kind": "youtube#playlist",
        "etag": det.etag(),
        "id": playlist_id,
        "snippet": {
            "publishedAt": api.iso_s(fake.created_date(det)),
            "channelId": youtube_channel_id(channel_handle),
            "title": title,
            "description": fake.sentence(det, "desc"),
            "thumbnails": _yt_thumbs_video(det.b64url("cover", 11)),
            "channelTitle": fake.display_name(det, channel_handle),
            "localized": {"title": title, "description": fake.sentence(det, "desc")},
        },
        "contentDetails": {"itemCount": det.num("items", 1, 200)},
    }


def youtube_list(kind: str, items: list[dict[str, Any]], seed: str, *, omit_empty_items: bool) -> dict[str, Any]:
    """A `*ListResponse`. The API omits `items` for channels when nothing matches, sends `[]` for videos."""
    body: dict[str, Any] = {"kind": f"youtube#{kind}ListResponse", "etag": api.Det("yt-list", seed).etag()}
    body["pageInfo"] = {"totalResults": len(items), "resultsPerPage": max(len(items), 5 if omit_empty_items else 0)}
    if items or not omit_empty_items:
        body["items"] = items
    return body


def google_error(code: int, status: str, message: str, reason: str, domain: str = "global") -> dict[str, Any]:
    return {"error": {"code": code, "message": message,
                      "errors": [{"message": message, "domain": domain, "reason": reason}], "status": status}}


def _quota_exceeded() -> api.Reply:
    message = ('The request cannot be completed because you have exceeded your '
               '<a href="/youtube/v3/getting-started#quota">quota</a>.')
    return api.json_reply(403, {"error": {"code": 403, "message": message, "errors": [
        {"message": message, "domain": "youtube.quota", "reason": "quotaExceeded"}]}})


class YouTubeProvider(api.TargetProvider):
    service = "youtube"
    hosts = YOUTUBE_HOSTS

    def describe(self, request: httpx.Request) -> api.Call:
        path = request.url.path.rstrip("/")
        params = request.url.params
        endpoint = path.removeprefix("/youtube/v3/")
        if endpoint in ("videos", "playlists"):
            ids = [i.strip() for i in params.get("id", "").split(",") if i.strip()]
            subjects = [f"{_KINDS[endpoint]}:{i}" for i in ids]
        elif endpoint == "channels":
            if params.get("id"):
                ids = [i.strip() for i in params["id"].split(",") if i.strip()]
                subjects = [f"channel:{i}" for i in ids]
            elif params.get("forHandle"):
                ids = [params["forHandle"].strip()]
                subjects = [f"channel:{ids[0] if ids[0].startswith('@') else '@' + ids[0]}"]
            elif params.get("forUsername"):
                ids = [params["forUsername"].strip()]
                subjects = [f"channel:{ids[0]}"]
            else:
                ids, subjects = [], []
        else:
            return api.Call(self.service, f"path:{path}")
        return api.Call(self.service, f"{_KINDS[endpoint]}:" + ",".join(s.split(":", 1)[1] for s in subjects),
                        [self._outcomes.target_for(s) for s in subjects],
                        args={"endpoint": endpoint, "ids": ids})

    def answer(self, request: httpx.Request, call: api.Call) -> api.Reply:
        if "endpoint" not in call.args:
            return api.json_reply(404, google_error(404, "NOT_FOUND", "Not Found", "notFound"))
        endpoint, ids = call.args["endpoint"], call.args["ids"]
        params = request.url.params
        if not params.get("key", "").strip():
            return api.json_reply(403, google_error(
                403, "PERMISSION_DENIED",
                "Method doesn't allow unregistered callers (callers without established identity). "
                "Please use API Key or other form of API consumer identity to call this API.", "forbidden"))
        if not ids:
            return api.json_reply(400, google_error(
                400, "INVALID_ARGUMENT", "No filter selected. Expected one of: id, forHandle, forUsername, mine.",
                "missingRequiredParameter", domain="youtube.parameter"))
        effects = self._outcomes.effects(call.targets)
        failed = api.FailureLadder(
            error=lambda: api.json_reply(503, google_error(503, "UNAVAILABLE", "The service is currently unavailable.",
                                                           "backendError")),
            rate_limited=self._rate_limited,
            credit_exhausted=_quota_exceeded,
        ).reply(api.Outcomes.http_failure(effects))
        if failed is not None:
            return failed
        items: list[dict[str, Any]] = []
        for ident, effect in zip(ids, effects, strict=True):
            if effect in api.MISSING:
                continue
            if endpoint == "videos":
                items.append(youtube_video(ident))
            elif endpoint == "playlists":
                items.append(youtube_playlist(ident))
            elif params.get("id"):
                items.append(youtube_channel(ident, fake.handle_for(api.Det("yt-channel-handle", ident))))
            else:
                handle = ident.lstrip("@")
                items.append(youtube_channel(youtube_channel_id(handle), handle))
        return api.json_reply(200, youtube_list(_KINDS[endpoint], items, str(request.url),
                                                omit_empty_items=endpoint != "videos"))

    @staticmethod
    def _rate_limited(headers: dict[str, str] | None = None) -> api.Reply:
        return api.json_reply(429, google_error(
            429, "RESOURCE_EXHAUSTED", "The request cannot be completed because you have exceeded the rate limit.",
            "rateLimitExceeded", domain="youtube.quota"), headers)

    def too_many_requests(self, request: httpx.Request, window: api.RateWindow) -> api.Reply:
        return self._rate_limited({"retry-after": str(window.reset_after_s)})


def make_fakes(world: api.FakeWorld) -> list[api.Provider]:
    return [YouTubeProvider(world.outcomes)]


def subjects(parsed: CanonicalUrl) -> list[str]:
    """What the generator asks the Data API about for `parsed`."""
    seg, query = parsed.segments, dict(parsed.query)
    if not seg:
        return []
    first = seg[0]
    if first == "watch":
        return [f"video:{query['v']}"] if query.get("v") else []
    if first in YOUTUBE_VIDEO_PATHS and len(seg) >= 2:
        return [f"video:{seg[1]}"]
    if first == "channel" and len(seg) >= 2:
        return [f"channel:{seg[1]}"]
    if first.startswith("@") and len(first) > 1:
        return [f"channel:{first}"]
    if first == "user" and len(seg) >= 2:
        return [f"channel:{seg[1]}"]
    if first == "playlist" and query.get("list"):
        return [f"playlist:{query['list']}"]
    return []


def unservable(kind: api.OutcomeKind, parsed: CanonicalUrl) -> str | None:
    if kind is api.OutcomeKind.BLOCKED:
        return ("the YouTube Data API hides private or blocked videos, channels and playlists like missing "
                "ones (200 without items), so the sandbox answers it as not found. Use `not_found`")
    return None
