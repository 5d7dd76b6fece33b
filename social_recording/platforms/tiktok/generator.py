"""TikTok generator, via the Apify actor clockworks~tiktok-scraper (paid: one run per URL).

URL shapes, requests, status mapping and the decisions behind them: social_recording/platforms/tiktok/README.md."""

from __future__ import annotations

import re
from typing import Any

from social_recording.domain.graph import GraphGroup, SocialObject
from social_recording.domain.urls import CanonicalUrl, Platform
from social_recording.platforms import shaping
from social_recording.platforms.apify.client import TIKTOK_ACTOR, ApifyGenerator, first_usable
from social_recording.platforms.base import ErrorCode, ExternalFetchError, GenerateResult, PaidRequests
from social_recording.platforms.tiktok.spec import TIKTOK_NON_POST_PATHS

_DIGITS = re.compile(r"^[0-9]{1,25}$")
_HANDLE = re.compile(r"^@[A-Za-z0-9_.]{1,24}$")
_SHORT_HOSTS = frozenset({"vm.tiktok.com", "vt.tiktok.com"})

_ZERO_CALL_SUBTYPES: dict[str, str] = {"tag": "hashtag", "discover": "discover", "search": "search"}
"""The zero-call subtype of tiktok.com's own pages (TIKTOK_NON_POST_PATHS) that are not "page"."""

_POST_FIELDS = ("text", "createTime", "createTimeISO", "webVideoUrl", "isSlideshow", "isAd", "isPinned")
_POST_METRICS = {"playCount": "views", "diggCount": "likes", "commentCount": "comments",
                 "shareCount": "shares", "collectCount": "saves"}
_AUTHOR_FIELDS = ("name", "nickName", "verified", "signature", "privateAccount", "region", "profileUrl")
_AUTHOR_METRICS = {"fans": "followers", "following": "following", "heart": "likes", "video": "videos",
                   "digg": "liked"}


def classify_tiktok_url(parsed: CanonicalUrl) -> tuple[str, str]:
    """("post", "video"|"photo"|"auto") | ("profile", handle) | ("zero", subtype) | ("none", "")."""
    seg = list(parsed.segments)
    if parsed.host in _SHORT_HOSTS:
        return ("post", "auto") if seg else ("none", "")
    if not seg:
        return ("zero", "page")
    first = seg[0]
    if first.lower() in TIKTOK_NON_POST_PATHS:
        return ("zero", _ZERO_CALL_SUBTYPES.get(first.lower(), "page"))
    if first == "t" and len(seg) == 2:
        return ("post", "auto")  # tiktok.com/t/<code>: an unresolved shortlink, the actor follows it
    if first == "@" and len(seg) == 3 and seg[1] in ("video", "photo") and _DIGITS.match(seg[2]):
        return ("post", seg[1])  # tiktok.com/@/video/<id>: the canonical post form
    if _HANDLE.match(first) and len(seg) == 1:
        return ("profile", first[1:])
    return ("none", "")


def post_group(item: dict[str, Any], subtype: str) -> GraphGroup:
    video_meta = shaping.as_dict(item.get("videoMeta"))
    media = [*(item.get("mediaUrls") or []), video_meta.get("coverUrl"), video_meta.get("originalCoverUrl")]
    content = shaping.item_object(
        Platform.TIKTOK, f"tiktok:{shaping.id_str(item.get('id')) or ''}", subtype, item,
        fields=_POST_FIELDS, metric_names=_POST_METRICS,
        links=shaping.urls_in_text(item.get("text")), media=media,
    )
    author = shaping.as_dict(item.get("authorMeta"))
    account = author_object(author) if shaping.id_str(author.get("id")) else None
    return GraphGroup(ref=shaping.ROOT_REF, content=content, account=account)


def author_object(author: dict[str, Any]) -> SocialObject:
    bio_link = author.get("bioLink")
    links: list[object] = [shaping.as_dict(bio_link).get("link") if isinstance(bio_link, dict) else bio_link]
    links += shaping.urls_in_text(author.get("signature"))
    return shaping.item_object(
        Platform.TIKTOK, f"tiktok:{shaping.id_str(author.get('id')) or ''}", "user", author,
        fields=_AUTHOR_FIELDS, metric_names=_AUTHOR_METRICS, links=links,
        avatar_url=shaping.first_str(author.get("avatar"), author.get("originalAvatarUrl")),
    )


class TikTokGenerator(ApifyGenerator):
    platform: Platform = Platform.TIKTOK
    classify = staticmethod(classify_tiktok_url)

    def fetch(self, parsed: CanonicalUrl, kind: str, value: str, requests: PaidRequests) -> GenerateResult:
        if kind == "profile":
            return self._profile(value, requests)
        return self._post(parsed.url, value, requests)

    def _post(self, url: str, subtype: str, requests: PaidRequests) -> GenerateResult:
        run = self._apify.run(TIKTOK_ACTOR, {"postURLs": [url]}, requests)
        item = first_usable(run.items, service="tiktok", what=f"post {url}")
        if shaping.id_str(item.get("id")) is None:
            if shaping.as_dict(item.get("authorMeta")).get("privateAccount") is True:
                raise ExternalFetchError(ErrorCode.TARGET_BLOCKED, f"tiktok: post {url} belongs to a private account")
            raise ExternalFetchError(ErrorCode.NOT_FOUND, f"tiktok: post {url} not found (item has no id)")
        if subtype == "auto":
            subtype = "photo" if item.get("isSlideshow") is True else "video"
        return shaping.finish(lambda: [post_group(item, subtype)], requests=run.requests)

    def _profile(self, handle: str, requests: PaidRequests) -> GenerateResult:
        run = self._apify.run(TIKTOK_ACTOR, {"profiles": [handle], "resultsPerPage": 1}, requests)
        item = first_usable(run.items, service="tiktok", what=f"profile @{handle}")
        author = shaping.as_dict(item.get("authorMeta"))
        if author.get("privateAccount") is True:
            raise ExternalFetchError(ErrorCode.TARGET_BLOCKED, f"tiktok: profile @{handle} is private")
        if shaping.id_str(author.get("id")) is None:
            raise ExternalFetchError(ErrorCode.NOT_FOUND, f"tiktok: profile @{handle} not found (no authorMeta.id)")
        return shaping.finish(lambda: [GraphGroup(ref=shaping.ROOT_REF, account=author_object(author))], requests=run.requests)


make_generator = TikTokGenerator.make
