"""Fake twitterapi.io: tweets (with their quote chains) and user profiles in twitterapi.io's shapes.

Outcomes: not_found -> `tweets: []` / a user `status: "error"` without data; blocked -> a suspended
user (`unavailable: true`; a tweet has no blocked shape and reads as missing); error / flaky:N -> 503;
rate_limited -> 429; credit_exhausted -> 402 "Credits is not enough"; invalid -> a quote cycle A -> B
-> A (the only payload of any provider that can break the graph contract). A multi-tweet lookup's
subject joins the ids: `tweet:a,b`.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from social_recording.domain.urls import CanonicalUrl
from social_recording.platforms.x.generator import classify_x_url
from social_recording.platforms.x.spec import X_RESERVED
from social_recording.sandbox import fake_api as api
from social_recording.sandbox.fake_api import fake_content as fake


def x_user_id(handle: str) -> str:
    """The account's immutable numeric id: derived from the handle, case-insensitively."""
    return api.Det("x-user", handle.lower()).digits("id", 18)


def x_user(handle: str) -> dict[str, Any]:
    """A twitterapi.io user object (the `author` of a tweet and the `data` of /twitter/user/info)."""
    det = api.Det("x-user", handle.lower())
    uid = x_user_id(handle)
    site = fake.site_for(handle)
    short = f"https://t.co/{det.alnum('tco', 10)}"
    bio = f"{fake.sentence(det, 'bio')} | {det.pick('topic', fake.TOPICS)}"
    url_entity = {"display_url": site.removeprefix("https://"), "expanded_url": site, "url": short,
                  "indices": [0, 23]}
    return {
        "type": "user",
        "userName": handle,
        "url": f"https://x.com/{handle}",
        "twitterUrl": f"https://twitter.com/{handle}",
        "id": uid,
        "name": fake.display_name(det, handle),
        "isVerified": False,
        "isBlueVerified": det.chance("blue", 1, 3),
        "verifiedType": None,
        "profilePicture": f"https://pbs.twimg.com/profile_images/{det.digits('pic', 19)}/{det.alnum('picname', 8)}_normal.jpg",
        "coverPicture": f"https://pbs.twimg.com/profile_banners/{uid}/{det.num('banner', 1_600_000_000, 1_790_000_000)}",
        "description": bio,
        "location": det.pick("place", fake.PLACES),
        "followers": det.skewed("followers", 2_000_000),
        "following": det.skewed("following", 5_000),
        "status": "",
        "canDm": det.chance("dm", 1, 2),
        "canMediaTag": True,
        "createdAt": api.twitter_date(fake.created_date(det)),
        "entities": {"description": {"urls": []}, "url": {"urls": [url_entity]}},
        "fastFollowersCount": 0,
        "favouritesCount": det.skewed("favourites", 100_000),
        "hasCustomTimelines": det.chance("timelines", 1, 4),
        "isTranslator": False,
        "mediaCount": det.skewed("media", 5_000),
        "statusesCount": det.skewed("statuses", 50_000),
        "withheldInCountries": [],
        "affiliatesHighlightedLabel": {},
        "possiblySensitive": False,
        "pinnedTweetIds": [],
        "profile_bio": {
            "description": bio,
            "entities": {"description": {}, "url": {"urls": [url_entity]}},
        },
        "isAutomated": False,
        "automatedBy": None,
    }


def x_user_info(handle: str, *, unavailable_reason: str | None = None) -> dict[str, Any]:
    """`GET /twitter/user/info` body. A suspended account keeps its id but is `unavailable`."""
    data = x_user(handle)
    if unavailable_reason is None:
        data.update({"unavailable": False, "unavailableReason": "", "message": ""})
    else:
        data = {
            "id": data["id"],
            "userName": handle,
            "unavailable": True,
            "unavailableReason": unavailable_reason,
            "message": f"User is {unavailable_reason.lower()}",
        }
    return {"data": data, "status": "success", "msg": "success"}


_SNOWFLAKE_EPOCH_MS = 1_288_834_974_657


def _tweet_time(tweet_id: str, det: api.Det) -> datetime:
    """A tweet's time from its snowflake id (as on X); a non-snowflake id gets a derived date."""
    try:
        ms = (int(tweet_id) >> 22) + _SNOWFLAKE_EPOCH_MS
        when = datetime.fromtimestamp(ms / 1000, tz=UTC).replace(microsecond=0)
        if datetime(2012, 1, 1, tzinfo=UTC) <= when <= datetime(2030, 1, 1, tzinfo=UTC):
            return when
    except (ValueError, OverflowError):
        pass
    return fake.created_date(det, "created")


def _snowflake_before(seed: str, when: datetime) -> str:
    """A tweet id whose snowflake time is a little before `when` (a quoted tweet predates its quote)."""
    det = api.Det("x-snowflake", seed)
    earlier = when - timedelta(seconds=det.num("gap", 600, 40 * 86_400))
    ms = int(earlier.timestamp() * 1000) - _SNOWFLAKE_EPOCH_MS
    return str((max(ms, 0) << 22) | det.num("low", 0, (1 << 22) - 1))


def quote_plan(tweet_id: str) -> list[tuple[str, str]]:
    """The (id, author handle) chain this tweet quotes on the sandbox's X: about one tweet in four
    quotes another, depth 1 or 2. Deterministic from the id."""
    det = api.Det("x-tweet", tweet_id)
    if not det.chance("quotes", 1, 4):
        return []
    chain: list[tuple[str, str]] = []
    when = _tweet_time(tweet_id, det)
    current = tweet_id
    for level in range(det.num("depth", 1, 2)):
        qid = _snowflake_before(f"{current}/{level}", when)
        qdet = api.Det("x-tweet", qid)
        chain.append((qid, fake.handle_for(qdet, "author")))
        when = _tweet_time(qid, qdet)
        current = qid
    return chain


def x_tweet(tweet_id: str, handle: str | None, *, quotes: list[tuple[str, str]] | None = None) -> dict[str, Any]:
    """A twitterapi.io tweet with its author; `quotes` is the chain it quotes, outermost first (None:
    the tweet's own deterministic plan; pass a chain to build a cycle for `invalid`)."""
    det = api.Det("x-tweet", tweet_id)
    author_handle = handle or fake.handle_for(det, "author")
    author = x_user(author_handle)
    chain = quote_plan(tweet_id) if quotes is None else quotes
    when = _tweet_time(tweet_id, det)
    text = fake.sentence(det, "text")
    urls: list[dict[str, Any]] = []
    if det.chance("link", 1, 3):
        site = fake.site_for(author_handle)
        short = f"https://t.co/{det.alnum('tco', 10)}"
        start = len(text) + 1
        text = f"{text} {short}"
        urls.append({"display_url": site.removeprefix("https://"), "expanded_url": site, "url": short,
                     "indices": [start, start + len(short)]})
    tweet: dict[str, Any] = {
        "type": "tweet",
        "id": tweet_id,
        "url": f"https://x.com/{author_handle}/status/{tweet_id}",
        "twitterUrl": f"https://twitter.com/{author_handle}/status/{tweet_id}",
        "text": text,
        "source": det.pick("source", ("Twitter for iPhone", "Twitter Web App", "Twitter for Android")),
        "retweetCount": det.skewed("retweets", 20_000),
        "replyCount": det.skewed("replies", 5_000),
        "likeCount": det.skewed("likes", 100_000),
        "quoteCount": det.skewed("quotes.n", 2_000),
        "viewCount": det.skewed("views", 5_000_000),
        "createdAt": api.twitter_date(when),
        "lang": "en",
        "bookmarkCount": det.skewed("bookmarks", 3_000),
        "isReply": False,
        "inReplyToId": None,
        "conversationId": tweet_id,
        "displayTextRange": [0, len(text)],
        "inReplyToUserId": None,
        "inReplyToUsername": None,
        "author": author,
        "extendedEntities": {},
        "card": None,
        "place": {},
        "entities": {"hashtags": [], "urls": urls, "user_mentions": []},
        "quoted_tweet": None,
        "retweeted_tweet": None,
        "isLimitedReply": False,
        "article": None,
    }
    if chain:
        (qid, qhandle), rest = chain[0], chain[1:]
        tweet["quoted_tweet"] = x_tweet(qid, qhandle, quotes=rest)
    return tweet


def x_quote_cycle(tweet_id: str, handle: str | None) -> dict[str, Any]:
    """The `invalid` payload: tweet A quotes B, which quotes A again (a cycle no real chain can have)."""
    det = api.Det("x-tweet", tweet_id)
    other = _snowflake_before(f"{tweet_id}/cycle", _tweet_time(tweet_id, det))
    author = handle or fake.handle_for(det, "author")
    return x_tweet(tweet_id, author, quotes=[(other, fake.handle_for(api.Det("x-tweet", other), "author")), (tweet_id, author)])


def x_tweets(tweets: list[dict[str, Any]], message: str = "") -> dict[str, Any]:
    return {"tweets": tweets, "status": "success", "message": message}


def x_error(message: str) -> dict[str, Any]:
    return {"status": "error", "msg": message, "message": message}


# ------------------------------------------------------------------------------------------ the API


def tweet_authors(scenario: api.Scenario, redirects: api.Redirects) -> dict[str, str]:
    """tweet id -> the handle written in a raw X status URL the scenario mentions (a target key or a
    token field, through its redirect hops). Canonical tweet URLs carry no handle: the raw values
    may, and the answers then agree with what the tracker said."""
    raws: list[str] = list(scenario.targets)
    for token in scenario.tokens:
        for value in token.social_values().values():
            if isinstance(value, str) and value.strip():
                raws.extend(redirects.hops(value.strip()))
    authors: dict[str, str] = {}
    for raw in raws:
        hint = x_tweet_author_hint(raw)
        if hint is not None:
            authors.setdefault(hint[0], hint[1])
    return authors


_FAILURES = api.FailureLadder(
    error=lambda: api.json_reply(503, x_error("Service Unavailable")),
    rate_limited=lambda: api.json_reply(429, x_error("Too many requests, please slow down"), {"retry-after": "5"}),
    credit_exhausted=lambda: api.json_reply(402, x_error("Credits is not enough.Please recharge")),
)


class TwitterApiProvider(api.TargetProvider):
    """api.twitterapi.io: `GET /twitter/tweets?tweet_ids=` and `GET /twitter/user/info?userName=`,
    behind `X-API-Key`."""

    service = "twitterapi"
    hosts = frozenset({"api.twitterapi.io"})

    def __init__(self, outcomes: api.Outcomes, authors: dict[str, str]) -> None:
        super().__init__(outcomes)
        self._authors = authors

    def describe(self, request: httpx.Request) -> api.Call:
        path = request.url.path.rstrip("/")
        params = request.url.params
        target = self._outcomes.target_for
        if path == "/twitter/tweets":
            ids = [i.strip() for v in params.get_list("tweet_ids") for i in v.split(",") if i.strip()]
            return api.Call(self.service, "tweet:" + ",".join(ids), [target(f"tweet:{i}") for i in ids],
                            args={"ids": ids, "what": "tweet_ids"})
        if path == "/twitter/user/info":
            handle = params.get("userName", "").strip().lstrip("@")
            return api.Call(self.service, f"user:{handle}", [target(f"user:{handle}")],
                            args={"handle": handle, "what": "userName"})
        return api.Call(self.service, f"path:{path}")

    def answer(self, request: httpx.Request, call: api.Call) -> api.Reply:
        if "what" not in call.args:
            return api.json_reply(404, x_error("Not Found"))
        if not request.headers.get("x-api-key", "").strip():
            return api.json_reply(401, x_error("Unauthorized: missing or invalid X-API-Key"))
        if not call.subject.split(":", 1)[1]:
            return api.json_reply(400, x_error(f"{call.args['what']} is required"))
        effects = self._outcomes.effects(call.targets)
        failed = _FAILURES.reply(api.Outcomes.http_failure(effects))
        if failed is not None:
            return failed
        if "ids" in call.args:
            tweets: list[dict[str, Any]] = []
            for tweet_id, effect in zip(call.args["ids"], effects, strict=True):
                if effect in api.MISSING:
                    continue
                author = self._authors.get(tweet_id)
                tweets.append(x_quote_cycle(tweet_id, author) if effect is api.OutcomeKind.INVALID
                              else x_tweet(tweet_id, author))
            return api.json_reply(200, x_tweets(tweets))
        handle = call.args["handle"]
        if effects[0] is api.OutcomeKind.NOT_FOUND:
            return api.json_reply(200, {"status": "error", "msg": "User not found"})
        if effects[0] is api.OutcomeKind.BLOCKED:
            return api.json_reply(200, x_user_info(handle, unavailable_reason="Suspended"))
        return api.json_reply(200, x_user_info(handle))

    def too_many_requests(self, request: httpx.Request, window: api.RateWindow) -> api.Reply:
        return api.json_reply(429, x_error("Too many requests, please slow down"),
                              {"retry-after": str(window.reset_after_s)})


def make_fakes(world: api.FakeWorld) -> list[api.Provider]:
    return [TwitterApiProvider(world.outcomes, tweet_authors(world.scenario, world.redirects))]


def subjects(parsed: CanonicalUrl) -> list[str]:
    target = classify_x_url(parsed)
    if target.kind == "tweet":
        return [f"tweet:{target.value}"]
    return [f"user:{target.value}"] if target.kind == "profile" else []


SERVES_INVALID = True
"""A tweet's quote chain can carry a payload that breaks the graph contract (a quote cycle)."""


def unservable(kind: api.OutcomeKind, parsed: CanonicalUrl) -> str | None:
    tweet = classify_x_url(parsed).kind == "tweet"
    if kind is api.OutcomeKind.BLOCKED and tweet:
        return ("twitterapi.io has no shape for a blocked tweet, so the sandbox answers it as not found. Use "
                "`not_found`, or put `blocked` on the author's profile (https://x.com/<handle>: suspended)")
    return api.INVALID_UNSERVABLE if kind is api.OutcomeKind.INVALID and not tweet else None


_RAW_X_STATUS = re.compile(
    r"^https?://(?:(?:www|mobile|m)\.)?(?:x|twitter|fxtwitter|vxtwitter|fixupx|fixvx)\.com/+@?([A-Za-z0-9_]{1,15})/+"
    r"status(?:es)?/+([0-9]{1,25})(?:[/?#]|$)",
    re.IGNORECASE,
)


def x_tweet_author_hint(raw: str) -> tuple[str, str] | None:
    """(tweet id, handle) written in a RAW (tracker-side, not canonical) X status URL: the canonical
    tweet form drops the handle, so the fake learns who wrote a tweet from the raw values a scenario's
    tokens carry, to agree with what the tracker said. Only a hint for payloads, never an identity."""
    m = _RAW_X_STATUS.match(raw.strip())
    if m is None or m.group(1).lower() in X_RESERVED:
        return None
    return m.group(2), m.group(1)
