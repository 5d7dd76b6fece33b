"""Reddit generator, via the Apify actor trudax~reddit-scraper-lite (paid: one run per URL).

URL shapes, requests, status mapping and the decisions behind them: social_recording/platforms/reddit/README.md."""

from __future__ import annotations

import re
from typing import Any

from social_recording.domain.graph import GraphGroup, SocialObject
from social_recording.domain.urls import CanonicalUrl, Platform
from social_recording.platforms.apify.client import (
    REDDIT_ACTOR,
    ApifyGenerator,
    error_item_code,
    error_item_message,
)
from social_recording.platforms.base import ErrorCode, ExternalFetchError, GenerateResult, PaidRequests
from social_recording.platforms.shaping import ROOT_REF, finish, first_str, id_str, item_object, urls_in_text

_SUB = re.compile(r"^[A-Za-z0-9_]{2,21}$")
_USER = re.compile(r"^[A-Za-z0-9_-]{3,20}$")
_POST_ID = re.compile(r"^[a-z0-9]{1,12}$")
_LISTINGS = frozenset({"hot", "new", "top", "rising", "controversial", "best", "gilded"})
_USER_TABS = frozenset({"submitted", "comments", "overview", "posts"})
_DELETED = frozenset({"[deleted]", "[removed]", ""})

_POST_FIELDS = ("title", "body", "url", "link", "createdAt", "over18", "flair", "isVideo", "isAd",
                "communityName", "parsedId")
_POST_METRICS = {"upVotes": "upvotes", "numberOfComments": "comments", "upVoteRatio": "upvote_ratio"}
_COMMUNITY_FIELDS = ("title", "description", "createdAt", "over18", "url", "displayName")
_COMMUNITY_METRICS = {"numberOfMembers": "members"}
_USER_FIELDS = ("username", "description", "createdAt", "over18", "url", "userId")
_USER_METRICS = {"postKarma": "post_karma", "commentKarma": "comment_karma"}


def classify_reddit_url(parsed: CanonicalUrl) -> tuple[str, str]:
    """("post", id) | ("subreddit", name) | ("user", name) | ("zero", subtype) | ("none", "")."""
    seg = list(parsed.segments)
    if parsed.host == "redd.it":
        # An unresolved shortlink (the entry resolves these; this one failed): the actor follows it.
        return ("post", seg[0]) if len(seg) == 1 else ("none", "")
    if not seg:
        return ("zero", "page")
    first = seg[0].lower()
    if first == "search":
        return ("zero", "search")
    if first == "comments" and len(seg) == 2 and _POST_ID.match(seg[1]):
        return ("post", seg[1])  # reddit.com/comments/<id>: every post URL folds to this (its URL rules)
    if first == "r" and len(seg) >= 2 and _SUB.match(seg[1]):
        rest = [s.lower() for s in seg[2:]]
        if not rest or rest[0] in _LISTINGS:
            return ("subreddit", seg[1])
        if rest[0] == "s" and len(seg) == 4:
            return ("post", "")
        if rest[0] == "search":
            return ("zero", "search")
        return ("none", "")
    if (first in ("user", "u") and len(seg) >= 2 and _USER.match(seg[1])
            and (len(seg) == 2 or seg[2].lower() in _USER_TABS)):
        return ("user", seg[1])
    return ("none", "")


def _by_type(items: list[dict[str, Any]], data_type: str) -> dict[str, Any] | None:
    return next((i for i in items if i.get("dataType") == data_type and error_item_code(i) is None), None)


def _no_item(items: list[dict[str, Any]], url: str) -> ExternalFetchError:
    """Nothing of the wanted kind came back: an error item maps by its text, otherwise not found."""
    for item in items:
        code = error_item_code(item)
        if code is not None:
            return ExternalFetchError(code, f"reddit: {url}: {error_item_message(item)[:200]}")
    return ExternalFetchError(ErrorCode.NOT_FOUND, f"reddit: {url} not found (no matching item)")


def post_group(item: dict[str, Any]) -> GraphGroup:
    links: list[object] = []
    link = first_str(item.get("link"))
    if link and "reddit.com" not in link and "redd.it" not in link:
        links.append(link)
    links += urls_in_text(item.get("body"))
    media = [*(item.get("imageUrls") or []), item.get("thumbnailUrl")]
    content = item_object(
        Platform.REDDIT, f"reddit:{id_str(item.get('id')) or ''}", "post", item,
        fields=_POST_FIELDS, metric_names=_POST_METRICS, links=links, media=media,
    )
    username = first_str(item.get("username"))
    account = None
    if username is not None and username not in _DELETED:
        fields = {"username": username, **({"userId": item["userId"]} if item.get("userId") else {})}
        account = SocialObject(platform=Platform.REDDIT, platform_key=f"reddit-user:{username}", subtype="user",
                               fields=fields)
    venue = subreddit_from_post(item) if first_str(item.get("parsedCommunityName")) else None
    return GraphGroup(ref=ROOT_REF, content=content, account=account, venue=venue)


def subreddit_from_post(item: dict[str, Any]) -> SocialObject:
    name = first_str(item.get("parsedCommunityName")) or ""
    return SocialObject(platform=Platform.REDDIT, platform_key=f"reddit-sub:{name.lower()}", subtype="subreddit",
                        fields={"name": name})


def community_object(item: dict[str, Any], url_sub: str) -> SocialObject:
    """The subreddit from a community item. Its name field is not pinned down by the docs, so the
    first of displayName / parsedCommunityName / "r/<name>" communityName is used, else the name the
    canonical URL already names (same key as a post's `parsedCommunityName`, lower-cased)."""
    community_name = first_str(item.get("communityName")) or ""
    name = (
        first_str(item.get("displayName"), item.get("parsedCommunityName"))
        or (community_name[2:] if community_name.lower().startswith("r/") else None)
        or url_sub
    )
    return item_object(
        Platform.REDDIT, f"reddit-sub:{name.lower()}", "subreddit", item,
        fields=_COMMUNITY_FIELDS, metric_names=_COMMUNITY_METRICS, leading_fields={"name": name},
        links=urls_in_text(item.get("description")),
        icon_url=first_str(item.get("iconImage"), item.get("communityIcon"), item.get("headerImage")),
    )


def user_object(item: dict[str, Any]) -> SocialObject:
    username = str(item["username"])
    return item_object(
        Platform.REDDIT, f"reddit-user:{username}", "user", item,
        fields=_USER_FIELDS, metric_names=_USER_METRICS, links=urls_in_text(item.get("description")),
        avatar_url=first_str(item.get("userIcon")),
    )


class RedditGenerator(ApifyGenerator):
    platform: Platform = Platform.REDDIT
    classify = staticmethod(classify_reddit_url)

    def fetch(self, parsed: CanonicalUrl, kind: str, value: str, requests: PaidRequests) -> GenerateResult:
        run = self._apify.run(
            REDDIT_ACTOR, {"startUrls": [{"url": parsed.url}], "maxItems": 1, "skipComments": True}, requests
        )
        items = run.items
        if not items:
            raise ExternalFetchError(ErrorCode.NOT_FOUND, f"reddit: {parsed.url} not found (empty dataset)")
        if kind == "post":
            post = _by_type(items, "post")
            if post is None or id_str(post.get("id")) is None:
                raise _no_item(items, parsed.url)
            return finish(lambda: [post_group(post)], requests=run.requests)
        if kind == "subreddit":
            return self._subreddit(items, value, parsed.url, run.requests)
        return self._user(items, value, parsed.url, run.requests)

    def _subreddit(self, items: list[dict[str, Any]], sub: str, url: str, requests: int) -> GenerateResult:
        community = _by_type(items, "community")
        if community is not None:
            return finish(lambda: [GraphGroup(ref=ROOT_REF, venue=community_object(community, sub))], requests=requests)
        # No community item: a post of that subreddit still names it (same key either way).
        post = _by_type(items, "post")
        if post is not None and (first_str(post.get("parsedCommunityName")) or "").lower() == sub.lower():
            return finish(lambda: [GraphGroup(ref=ROOT_REF, venue=subreddit_from_post(post))], requests=requests)
        raise _no_item(items, url)

    def _user(self, items: list[dict[str, Any]], name: str, url: str, requests: int) -> GenerateResult:
        user = _by_type(items, "user")
        if user is not None and first_str(user.get("username")) not in (None, *_DELETED):
            return finish(lambda: [GraphGroup(ref=ROOT_REF, account=user_object(user))], requests=requests)
        post = _by_type(items, "post")
        if post is not None and (first_str(post.get("username")) or "").lower() == name.lower():
            username = str(post["username"])
            account = SocialObject(platform=Platform.REDDIT, platform_key=f"reddit-user:{username}", subtype="user",
                                   fields={"username": username})
            return finish(lambda: [GraphGroup(ref=ROOT_REF, account=account)], requests=requests)
        raise _no_item(items, url)


make_generator = RedditGenerator.make
