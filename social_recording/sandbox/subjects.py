"""Which provider subject(s) a canonical target URL turns into (DESIGN §12 ledger subjects).

Why: a scenario names outcomes per canonical URL, but a request only carries what the real client
asks the provider (`tweet_ids=123`, an actor input, `forHandle=@foo`). The sandbox builds an index
subject -> target from these functions, so each request finds the outcome of the URL it came from.
The rules mirror what the real generators request (platforms/*.py); a URL that makes no request
(search pages, invites, discord) has no subject.

Subjects are compared case-insensitively (`subject_key`): handles, logins and usernames are
case-insensitive at every provider, and the canonical form already lower-cases most of them.
"""

from __future__ import annotations

import re

from social_recording.domain.urls import Platform, parse_canonical, to_canonical

_DIGITS = re.compile(r"^[0-9]{1,25}$")
_X_HANDLE = re.compile(r"^[A-Za-z0-9_]{1,15}$")
_X_NOT_HANDLES = frozenset(
    {"i", "search", "intent", "share", "hashtag", "home", "explore", "settings", "messages", "notifications",
     "compose", "login", "logout", "signup", "tos", "privacy", "about", "jobs", "download", "status", "statuses"}
)
_TIKTOK_NOT_POSTS = frozenset(
    {"tag", "discover", "search", "explore", "foryou", "following", "friends", "live", "music", "channel"}
)
_GITHUB_RESERVED = frozenset(
    {"about", "account", "apps", "blog", "codespaces", "collections", "contact", "copilot", "customer-stories",
     "dashboard", "enterprise", "enterprises", "events", "explore", "features", "home", "issues", "join",
     "login", "logout", "marketplace", "new", "notifications", "organizations", "password_reset", "pricing",
     "pulls", "readme", "search", "security", "sessions", "settings", "signup", "site", "solutions",
     "stars", "team", "topics", "trending", "watching"}
)
_TELEGRAM_NO_PAGE = frozenset(
    {"joinchat", "c", "addlist", "m", "share", "addstickers", "addemoji", "addtheme", "setlanguage", "proxy",
     "socks", "iv", "bg", "login"}
)
_YOUTUBE_VIDEO_PREFIXES = frozenset({"shorts", "live", "embed", "v", "e"})


def subject_key(subject: str) -> str:
    """The form subjects are matched in (case-insensitive)."""
    return subject.casefold()


def canonical_or_none(url: str) -> str | None:
    """`to_canonical(url)`, or None when the value is not a URL it accepts."""
    try:
        return to_canonical(url)
    except ValueError:
        return None


_RAW_X_STATUS = re.compile(
    r"^https?://(?:(?:www|mobile|m)\.)?(?:x|twitter|fxtwitter|vxtwitter|fixupx|fixvx)\.com/+@?([A-Za-z0-9_]{1,15})/+"
    r"status(?:es)?/+([0-9]{1,25})(?:[/?#]|$)",
    re.IGNORECASE,
)


def x_tweet_author_hint(raw: str) -> tuple[str, str] | None:
    """(tweet id, handle) written in a RAW (tracker-side, not canonical) X status URL.

    The canonical tweet form `x.com/i/status/<id>` drops the handle (X serves a tweet under any handle),
    so the sandbox learns "who wrote tweet <id>" from the raw values a scenario's tokens carry, to make
    its answers agree with what the tracker said. Only a hint for payloads: never an identity."""
    m = _RAW_X_STATUS.match(raw.strip())
    if m is None or m.group(1).lower() in _X_NOT_HANDLES:
        return None
    return m.group(2), m.group(1)


def x_tweet(url: str) -> tuple[str, str | None] | None:
    """(tweet id, author handle or None) for a canonical x.com tweet URL (`x.com/i/status/<id>`: the
    handle is None; other status positions are read for robustness)."""
    parsed = parse_canonical(url)
    if parsed.platform is not Platform.X:
        return None
    seg = parsed.segments
    for i, s in enumerate(seg[:-1]):
        if s.lower() in ("status", "statuses") and i <= 2 and _DIGITS.match(seg[i + 1]):
            handle = seg[0] if i == 1 and seg[0].lower() not in _X_NOT_HANDLES else None
            return seg[i + 1], handle
    return None


def target_subjects(url: str) -> list[str]:
    """The subjects the real client requests for canonical `url`, the primary one first; [] when the
    URL makes no request (zero-call shapes, invites, discord, unparseable)."""
    try:
        parsed = parse_canonical(url)
    except ValueError:
        return []
    seg = parsed.segments
    platform = parsed.platform
    if platform is Platform.X:
        tweet = x_tweet(url)
        if tweet is not None:
            return [f"tweet:{tweet[0]}"]
        if len(seg) >= 1 and _X_HANDLE.match(seg[0]) and seg[0].lower() not in _X_NOT_HANDLES:
            return [f"user:{seg[0]}"]
        return []
    if platform is Platform.TIKTOK:
        if seg and seg[0].lower() in _TIKTOK_NOT_POSTS:
            return []
        if len(seg) == 1 and seg[0].startswith("@"):
            return [f"apify:https://tiktok.com/{seg[0]}"] if len(seg[0]) > 1 else []
        return [f"apify:{url}"] if seg else []
    if platform in (Platform.INSTAGRAM, Platform.REDDIT):
        if not seg or seg[0].lower() in ("explore", "search"):
            return []
        return [f"apify:{url}"]
    if platform is Platform.YOUTUBE:
        return _youtube_subjects(seg, dict(parsed.query))
    if platform is Platform.GITHUB:
        return _github_subjects(seg)
    if platform is Platform.TELEGRAM:
        if not seg or seg[0].startswith("+") or seg[0].lower() in _TELEGRAM_NO_PAGE:
            return []
        name = seg[1] if seg[0].lower() in ("s", "boost") and len(seg) >= 2 else seg[0]
        return [f"telegram:{name}"]
    if platform is Platform.WEB:
        return [f"scan:{url}"]
    return []


def _youtube_subjects(seg: tuple[str, ...], query: dict[str, str]) -> list[str]:
    if not seg:
        return []
    first = seg[0]
    if first == "watch":
        return [f"video:{query['v']}"] if query.get("v") else []
    if first in _YOUTUBE_VIDEO_PREFIXES and len(seg) >= 2:
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


def _github_subjects(seg: tuple[str, ...]) -> list[str]:
    if not seg:
        return []
    first = seg[0].lower()
    if first in ("orgs", "sponsors"):
        return [f"github-user:{seg[1]}"] if len(seg) >= 2 else []
    if first in _GITHUB_RESERVED:
        return []
    if len(seg) == 1:
        return [f"github-user:{seg[0]}"]
    repo = seg[1][:-4] if seg[1].lower().endswith(".git") and len(seg[1]) > 4 else seg[1]
    return [f"repo:{seg[0]}/{repo}"]


def registrable_domain(host: str) -> str:
    """A cheap approximation of the registrable domain (last two labels; three under a two-letter
    second level such as co.uk): enough to key the sandbox's RDAP answers."""
    labels = host.lower().strip(".").split(".")
    if len(labels) >= 3 and len(labels[-2]) <= 3 and len(labels[-1]) == 2:
        return ".".join(labels[-3:])
    return ".".join(labels[-2:])
