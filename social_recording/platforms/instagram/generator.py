"""Instagram generator, via the Apify actor apify~instagram-scraper (paid: one run per URL).

URL shapes, requests, status mapping and the decisions behind them: social_recording/platforms/instagram/README.md."""

from __future__ import annotations

import re
from typing import Any

from social_recording.domain.graph import GraphGroup, SocialObject
from social_recording.domain.urls import CanonicalUrl, Platform
from social_recording.platforms.apify.client import INSTAGRAM_ACTOR, ApifyGenerator, first_usable
from social_recording.platforms.base import ErrorCode, ExternalFetchError, GenerateResult, PaidRequests
from social_recording.platforms.instagram.spec import INSTAGRAM_RESERVED
from social_recording.platforms.shaping import ROOT_REF, finish, first_str, id_str, item_object, urls_in_text

_CODE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_USERNAME = re.compile(r"^[A-Za-z0-9._]{1,30}$")
_PRODUCT_SUBTYPES = {"clips": "reel"}
"""The item's `productType` -> content subtype (default "post"): the canonical URL is /p/ for every kind."""

_POST_FIELDS = ("shortCode", "url", "type", "productType", "caption", "timestamp", "ownerUsername",
                "ownerFullName", "locationName", "isSponsored", "alt")
_POST_METRICS = {"likesCount": "likes", "commentsCount": "comments", "videoViewCount": "views",
                 "videoPlayCount": "plays"}
_PROFILE_FIELDS = ("username", "fullName", "biography", "verified", "private", "isBusinessAccount",
                   "businessCategoryName", "externalUrl", "url")
_PROFILE_METRICS = {"followersCount": "followers", "followsCount": "following", "postsCount": "posts",
                    "highlightReelCount": "highlights", "igtvVideoCount": "igtv_videos"}


def classify_instagram_url(parsed: CanonicalUrl) -> tuple[str, str]:
    """("post", "post") | ("profile", username) | ("zero", subtype) | ("none", "").

    A post's subtype is "post" until the item's `productType` says otherwise (`_post`)."""
    seg = list(parsed.segments)
    if not seg:
        return ("zero", "page")
    first = seg[0].lower()
    if first == "p" and len(seg) >= 2 and _CODE.match(seg[1]):
        return ("post", "post")
    if first == "share" and len(seg) >= 2:
        return ("post", "post")  # an unresolved share shortlink: the actor follows the redirect
    if first == "explore":
        if len(seg) >= 2 and seg[1].lower() == "tags":
            return ("zero", "hashtag")
        if len(seg) >= 2 and seg[1].lower() == "search":
            return ("zero", "search")
        return ("zero", "page")
    if first in INSTAGRAM_RESERVED:
        return ("none", "")
    if _USERNAME.match(seg[0]) and (len(seg) == 1 or seg[1].lower() in ("reels", "tagged", "guide", "feed")):
        return ("profile", seg[0])
    return ("none", "")


def post_group(item: dict[str, Any], subtype: str) -> GraphGroup:
    media = [item.get("displayUrl"), item.get("videoUrl"), *(item.get("images") or [])]
    content = item_object(
        Platform.INSTAGRAM, f"instagram:{id_str(item.get('id')) or ''}", subtype, item,
        fields=_POST_FIELDS, metric_names=_POST_METRICS,
        links=urls_in_text(item.get("caption")), media=media,
    )
    owner_id = id_str(item.get("ownerId"))
    account = None
    if owner_id is not None:
        owner_fields = {k: v for k, v in (("username", item.get("ownerUsername")),
                                          ("fullName", item.get("ownerFullName"))) if v is not None}
        account = SocialObject(
            platform=Platform.INSTAGRAM, platform_key=f"instagram:{owner_id}", subtype="user", fields=owner_fields
        )
    return GraphGroup(ref=ROOT_REF, content=content, account=account)


def profile_object(item: dict[str, Any]) -> SocialObject:
    links: list[object] = [item.get("externalUrl")]
    for extra in item.get("externalUrls") or []:
        links.append(extra.get("url") if isinstance(extra, dict) else extra)
    links += urls_in_text(item.get("biography"))
    return item_object(
        Platform.INSTAGRAM, f"instagram:{id_str(item.get('id')) or ''}", "user", item,
        fields=_PROFILE_FIELDS, metric_names=_PROFILE_METRICS, links=links,
        avatar_url=first_str(item.get("profilePicUrlHD"), item.get("profilePicUrl")),
    )


class InstagramGenerator(ApifyGenerator):
    platform: Platform = Platform.INSTAGRAM
    classify = staticmethod(classify_instagram_url)

    def fetch(self, parsed: CanonicalUrl, kind: str, value: str, requests: PaidRequests) -> GenerateResult:
        if kind == "profile":
            return self._profile(parsed.url, value, requests)
        return self._post(parsed.url, value, requests)

    def _post(self, url: str, subtype: str, requests: PaidRequests) -> GenerateResult:
        run = self._apify.run(
            INSTAGRAM_ACTOR, {"directUrls": [url], "resultsType": "posts", "resultsLimit": 1}, requests
        )
        item = first_usable(run.items, service="instagram", what=f"post {url}")
        if id_str(item.get("id")) is None:
            raise ExternalFetchError(ErrorCode.NOT_FOUND, f"instagram: post {url} not found (item has no id)")
        product = item.get("productType")
        subtype = _PRODUCT_SUBTYPES.get(product, subtype) if isinstance(product, str) else subtype
        return finish(lambda: [post_group(item, subtype)], requests=run.requests)

    def _profile(self, url: str, username: str, requests: PaidRequests) -> GenerateResult:
        run = self._apify.run(
            INSTAGRAM_ACTOR, {"directUrls": [url], "resultsType": "details", "resultsLimit": 1}, requests
        )
        item = first_usable(run.items, service="instagram", what=f"profile {username}")
        if item.get("private") is True:
            raise ExternalFetchError(ErrorCode.TARGET_BLOCKED, f"instagram: profile {username} is private")
        if id_str(item.get("id")) is None:
            raise ExternalFetchError(ErrorCode.NOT_FOUND, f"instagram: profile {username} not found (no id)")
        return finish(lambda: [GraphGroup(ref=ROOT_REF, account=profile_object(item))], requests=run.requests)


make_generator = InstagramGenerator.make
