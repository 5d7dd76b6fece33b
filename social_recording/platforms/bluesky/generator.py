"""Bluesky generator: a post -> its content and author, a profile -> its account, through the public
AppView's XRPC (free, no key).

URL shapes, requests, status mapping and the decisions behind them: social_recording/platforms/bluesky/README.md."""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from social_recording.domain.graph import GraphGroup, SocialGraph, SocialObject
from social_recording.domain.urls import CanonicalUrl, Platform
from social_recording.platforms import shaping
from social_recording.platforms.base import ErrorCode, GenerateContext, GenerateResult
from social_recording.platforms.bluesky.spec import BLUESKY
from social_recording.platforms.http import HttpPolicy, HttpResponse, ProviderHttp

API_BASE = "https://public.api.bsky.app/xrpc"
SERVICE = BLUESKY.name
POST_COLLECTION = "app.bsky.feed.post"
GONE = frozenset({"AccountTakedown", "AccountDeactivated", "AccountSuspended", "BlockedActor", "BlockedByActor"})
"""XRPC error names that say the account exists but is not shown: `blocked`, never `not_found`."""
MISSING = frozenset({"NotFound", "InvalidRequest", "ProfileNotFound", "RecordNotFound", "AccountNotFound"})
_OWN_PAGES = frozenset({"", "search", "feeds", "notifications", "settings", "messages", "lists", "moderation",
                        "support", "starter-pack", "hashtag"})


class _Author(BaseModel):
    did: str = Field(min_length=1)
    handle: str | None = None
    displayName: str | None = None  # noqa: N815 (the API's names)
    description: str | None = None
    avatar: str | None = None
    createdAt: str | None = None  # noqa: N815
    followersCount: Any = None  # noqa: N815
    followsCount: Any = None  # noqa: N815
    postsCount: Any = None  # noqa: N815
    labels: list[dict[str, Any]] = Field(default_factory=list)


class _Post(BaseModel):
    uri: str = Field(min_length=1)
    cid: str | None = None
    author: _Author
    record: dict[str, Any] = Field(default_factory=dict)
    embed: dict[str, Any] | None = None
    replyCount: Any = None  # noqa: N815
    repostCount: Any = None  # noqa: N815
    likeCount: Any = None  # noqa: N815
    quoteCount: Any = None  # noqa: N815
    indexedAt: str | None = None  # noqa: N815


class _Thread(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    type: str = Field(default="", alias="$type")
    post: _Post | None = None
    notFound: bool = False  # noqa: N815
    blocked: bool = False


class _ThreadAnswer(BaseModel):
    thread: _Thread


@dataclass(frozen=True)
class _PostTarget:
    actor: str
    rkey: str

    @property
    def at_uri(self) -> str:
        return f"at://{self.actor}/{POST_COLLECTION}/{self.rkey}"


@dataclass(frozen=True)
class _ProfileTarget:
    actor: str


def _route(parsed: CanonicalUrl) -> _PostTarget | _ProfileTarget | shaping.ZeroCallShape | shaping.NoCallShape:
    seg = parsed.segments
    if not seg or (len(seg) == 1 and seg[0].lower() in _OWN_PAGES):
        return shaping.ZeroCallShape("page")
    if seg[0] == "profile" and len(seg) == 2:
        return _ProfileTarget(seg[1])
    if seg[0] == "profile" and len(seg) == 4 and seg[2] == "post":
        return _PostTarget(seg[1], seg[3])
    return shaping.unsupported_shape(f"no post or profile in /{'/'.join(seg)}")


class BlueskyGenerator(shaping.PerCallHttpGenerator[_PostTarget | _ProfileTarget]):
    """canonical Bluesky URL -> a post with its author, or a profile (social_recording/platforms/bluesky/README.md)."""

    platform: Platform = Platform.BLUESKY
    default_base_url = API_BASE

    def route(self, parsed: CanonicalUrl) -> _PostTarget | _ProfileTarget | shaping.ZeroCallShape | shaping.NoCallShape:
        return _route(parsed)

    def fetch(self, parsed: CanonicalUrl, target: _PostTarget | _ProfileTarget,
              ctx: GenerateContext) -> GenerateResult:
        with closing(self._client(HttpPolicy.free(SERVICE), default_headers={"Accept": "application/json"})) as http:
            if isinstance(target, _ProfileTarget):
                response = http.get(f"{self._base_url}/app.bsky.actor.getProfile", params={"actor": target.actor})
                _STATUS.check(response, http, target.actor)
                graph = SocialGraph(groups=[GraphGroup(
                    ref=shaping.ROOT_REF, account=_account(shaping.parse_payload(_Author, response.json(), SERVICE, http)))])
            else:
                response = http.get(f"{self._base_url}/app.bsky.feed.getPostThread",
                                    params={"uri": target.at_uri, "depth": "0", "parentHeight": "0"})
                _STATUS.check(response, http, target.at_uri)
                thread = shaping.parse_payload(_ThreadAnswer, response.json(), SERVICE, http).thread
                graph = _post_graph(target, thread, http)
        return shaping.finish(graph, requests=http.requests_made)


def _error_name(response: HttpResponse, body: dict[str, Any]) -> str:
    return str(body.get("error") or "")


_STATUS = shaping.StatusTable(
    rules=(
        shaping.StatusRule(ErrorCode.TARGET_BLOCKED, "bluesky: the account of {what} is taken down or deactivated "
                           "(HTTP {status})", frozenset({400, 401, 403}), lambda r, b: _error_name(r, b) in GONE),
        shaping.StatusRule(ErrorCode.NOT_FOUND, "bluesky: {what} not found (HTTP {status})", frozenset({400}),
                           lambda r, b: _error_name(r, b) in MISSING),
        shaping.StatusRule(ErrorCode.NOT_FOUND, "bluesky: {what} not found (HTTP 404)", frozenset({404})),
        shaping.StatusRule(ErrorCode.RATE_LIMITED, "bluesky: rate limited (HTTP 429)", frozenset({429})),
    ),
    fallback="bluesky: HTTP {status} for {what}",
)


def _post_graph(target: _PostTarget, thread: _Thread, http: ProviderHttp) -> SocialGraph:
    if thread.blocked or thread.type.endswith("#blockedPost"):
        raise shaping.fetch_error(ErrorCode.TARGET_BLOCKED, f"bluesky: {target.at_uri} is blocked", http)
    if thread.notFound or thread.post is None:
        raise shaping.fetch_error(ErrorCode.NOT_FOUND, f"bluesky: {target.at_uri} not found", http)
    post = thread.post
    record = post.record
    text = record.get("text") if isinstance(record.get("text"), str) else None
    quoted = _quoted_uri(post.embed)
    content = SocialObject(
        platform=Platform.BLUESKY,
        platform_key=f"bluesky:{post.uri}",
        subtype="reply" if isinstance(record.get("reply"), dict) else "post",
        fields={
            "uri": post.uri,
            "cid": post.cid,
            "text": text,
            "created_at": record.get("createdAt"),
            "langs": [v for v in record.get("langs") or [] if isinstance(v, str)],
            "quoted_uri": quoted,
            "author_did": post.author.did,
            "author_handle": post.author.handle,
        },
        outbound_urls=shaping.canonical_links([*_facet_links(record), *shaping.urls_in_text(text)]),
        media_urls=_images(post.embed),
        metrics=shaping.metrics({"replies": post.replyCount, "reposts": post.repostCount, "likes": post.likeCount,
                                 "quotes": post.quoteCount}, commas=False),
    )
    return SocialGraph(groups=[GraphGroup(ref=shaping.ROOT_REF, content=content, account=_account(post.author))])


def _account(author: _Author) -> SocialObject:
    """The account, keyed by its DID: the handle can be changed or given away."""
    return SocialObject(
        platform=Platform.BLUESKY,
        platform_key=f"bluesky:{author.did}",
        subtype="account",
        fields={
            "did": author.did,
            "handle": author.handle,
            "display_name": author.displayName,
            "description": author.description,
            "created_at": author.createdAt,
            "labels": sorted({str(label.get("val")) for label in author.labels if label.get("val")}),
        },
        outbound_urls=shaping.canonical_links(shaping.urls_in_text(author.description)),
        avatar_url=author.avatar,
        metrics=shaping.metrics({"followers": author.followersCount, "follows": author.followsCount,
                                 "posts": author.postsCount}, commas=False),
    )


def _facet_links(record: dict[str, Any]) -> list[str]:
    links: list[str] = []
    for facet in record.get("facets") or []:
        for feature in (facet.get("features") or []) if isinstance(facet, dict) else []:
            if isinstance(feature, dict) and str(feature.get("$type", "")).endswith("#link"):
                links.append(str(feature.get("uri") or ""))
    return [link for link in links if link]


def _images(embed: dict[str, Any] | None) -> list[str]:
    media = (embed or {}).get("media") if "recordWithMedia" in str((embed or {}).get("$type", "")) else embed
    images = (media or {}).get("images") or []
    return [str(i.get("fullsize")) for i in images if isinstance(i, dict) and i.get("fullsize")]


def _quoted_uri(embed: dict[str, Any] | None) -> str | None:
    record = (embed or {}).get("record")
    if isinstance(record, dict) and isinstance(record.get("record"), dict):  # recordWithMedia#view
        record = record["record"]
    uri = record.get("uri") if isinstance(record, dict) else None
    return uri if isinstance(uri, str) else None


make_generator = BlueskyGenerator.make
"""The Bluesky generator for the registry (no key)."""
