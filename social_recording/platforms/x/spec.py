"""X (twitter), through twitterapi.io: paid per request. Its descriptor and URL rules; its generator and
sandbox fake are in `social_recording.platforms.x` (`PACKAGE`).
Pure data: docs/architecture.md, "Providers in one place" and "Layers".

URL rules: x.com path rules: one form per tweet (`x.com/i/status/<id>`), one per profile
(`x.com/<handle>`)."""

from __future__ import annotations

import re

from social_recording.domain.platform import Platform, PlatformDescriptor, ProviderAccount, Rate
from social_recording.domain.url_rules import DIGITS_RE, Pairs, UrlRules

PACKAGE = "social_recording.platforms.x"
"""The platform's package: its generator and its sandbox fake."""

X_HANDLE_RE = re.compile(r"^[A-Za-z0-9_]{1,50}\Z")
"""A handle as written in a URL (legacy handles exceed the 15 characters X allows today)."""
X_RESERVED: frozenset[str] = frozenset(
    {"i", "home", "explore", "search", "hashtag", "intent", "settings", "messages", "notifications",
     "compose", "login", "logout", "signup", "tos", "privacy", "share", "account", "about", "jobs",
     "download", "status", "statuses"}
)  # fmt: skip
"""First path segments that are X's own pages, never a handle (X does not let anyone register them).
The canonicaliser, the X generator and the sandbox read this one set."""
_X_TWEET_VIEWS = frozenset({"analytics", "likes", "retweets", "quotes", "history", "photo", "video"})
_X_PROFILE_TABS = frozenset(
    {"with_replies", "media", "likes", "highlights", "articles", "followers", "following",
     "verified_followers", "followers_you_follow", "superfollows"}
)  # fmt: skip


def rules(origin: str, segs: list[str], pairs: Pairs) -> tuple[list[str], Pairs]:
    """The tweet id is the target: X serves a tweet under ANY handle (`x.com/<anyone>/status/<id>`),
    so the handle is decoration and every tweet URL folds to `/i/status/<id>` (the content key
    is the tweet id). Views of a tweet fold away too. Handles are case-insensitive; a leading
    `@` (`x.com/@Handle`) is written by people, not by X."""
    if not segs:
        return segs, pairs
    if segs[0].startswith("@") and X_HANDLE_RE.match(segs[0][1:]):
        segs[0] = segs[0][1:]
    if X_HANDLE_RE.match(segs[0]):
        segs[0] = segs[0].lower()
    status = ("status", "statuses")
    tweet_at: int | None = None
    if len(segs) >= 4 and segs[0] == "i" and segs[1].lower() == "web" and segs[2].lower() in status:
        tweet_at = 3  # /i/web/status/<id>
    elif len(segs) >= 3 and segs[1].lower() in status:
        tweet_at = 2  # /<any handle>/status/<id>, /i/status/<id>
    elif len(segs) >= 2 and segs[0].lower() in status:
        tweet_at = 1  # the old /statuses/<id>
    if tweet_at is not None and DIGITS_RE.match(segs[tweet_at]):
        tail = [s.lower() for s in segs[tweet_at + 1 :]]
        is_media = len(tail) == 2 and tail[0] in ("photo", "video") and DIGITS_RE.match(tail[1])
        is_view = (len(tail) == 1 and tail[0] in _X_TWEET_VIEWS) or tail == ["retweets", "with_comments"]
        segs = ["i", "status", *segs[tweet_at:]]
        if is_media or is_view:
            segs = segs[:3]
    elif len(segs) == 2 and segs[0] not in X_RESERVED and segs[1].lower() in _X_PROFILE_TABS:
        segs = segs[:1]
    return segs, pairs


URL_RULES = UrlRules(
    hosts=frozenset({"x.com"}),
    aliases={host: "x.com" for host in (
        "twitter.com", "mobile.twitter.com", "m.twitter.com", "mobile.x.com", "m.x.com",
        "fxtwitter.com", "vxtwitter.com", "fixupx.com", "fixvx.com")},
    tracking_params=frozenset({"s", "t", "src", "ref_src", "ref_url", "cn"}),
    path=rules,
    path_in_fragment=True,
)

TWITTERAPI = ProviderAccount(
    name="twitterapi",
    paid=True,
    key_variable="TWITTERAPI_IO_KEY",
    # Per key, per second: 20 for any topped-up account (Starter, Builder, Pro), 50 on Scale, 500 on
    # Business; a never-topped-up account gets 1 per 5 s (set it with SOCIAL_RECORDING_RATE_LIMITS).
    rates=(Rate(20, 1),),
    # One to three requests per URL: 8 calls in flight stay well inside the rate.
    concurrency=8,
    # twitterapi.io bills credits (100,000 to the dollar) with a minimum of 15 credits per request, which
    # a one-tweet or one-user lookup costs (https://twitterapi.io/pricing): $0.00015 per request.
    unit_price_usd=0.00015,
    package=PACKAGE,
)

DESCRIPTOR = PlatformDescriptor(Platform.X, TWITTERAPI, URL_RULES, package=PACKAGE, title="X")
