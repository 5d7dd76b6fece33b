"""Which provider subject(s) a canonical target URL turns into (the ledger's subjects).

Why: a scenario names outcomes per canonical URL, but a request only carries what the real client
asks the provider (`tweet_ids=123`, an actor input, `forHandle=@foo`). The sandbox builds an index
subject -> target from these functions, so each request finds the outcome of the URL it came from.
The rules are the real generators' own: the X and Apify-backed platforms are read by the generators'
routers (`classify_*_url`), the others by the same reserved-path sets the generators and the
canonicaliser read (`domain.urls`); a URL that makes no request (search pages, invites, discord,
shapes no generator can read) has no subject.

Subjects are compared case-insensitively (`subject_key`): handles, logins and usernames are
case-insensitive at every provider, and the canonical form already lower-cases most of them.
"""

from __future__ import annotations

import re

from social_recording.domain.urls import (
    GITHUB_RESERVED,
    TELEGRAM_NON_CHAT_PATHS,
    TELEGRAM_PRIVATE_PATHS,
    TELEGRAM_VENUE_PREFIXES,
    X_RESERVED,
    YOUTUBE_VIDEO_PATHS,
    Platform,
    parse_canonical,
    to_canonical,
)
from social_recording.platforms.instagram import classify_instagram_url
from social_recording.platforms.reddit import classify_reddit_url
from social_recording.platforms.tiktok import classify_tiktok_url
from social_recording.platforms.x import classify_x_url

_DIGITS = re.compile(r"^[0-9]{1,25}$")
_NO_CALL = ("zero", "none")
"""The Apify routers' kinds that make no request."""


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
    if m is None or m.group(1).lower() in X_RESERVED:
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
            handle = seg[0] if i == 1 and seg[0].lower() not in X_RESERVED else None
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
        target = classify_x_url(parsed)
        if target.kind == "tweet":
            return [f"tweet:{target.value}"]
        return [f"user:{target.value}"] if target.kind == "profile" else []
    if platform is Platform.TIKTOK:
        kind, value = classify_tiktok_url(parsed)
        if kind == "profile":  # the actor input names the handle; the sandbox reads it back as this URL
            return [f"apify:https://tiktok.com/@{value}"]
        return [f"apify:{url}"] if kind not in _NO_CALL else []
    if platform is Platform.INSTAGRAM:
        return [f"apify:{url}"] if classify_instagram_url(parsed)[0] not in _NO_CALL else []
    if platform is Platform.REDDIT:
        return [f"apify:{url}"] if classify_reddit_url(parsed)[0] not in _NO_CALL else []
    if platform is Platform.YOUTUBE:
        return _youtube_subjects(seg, dict(parsed.query))
    if platform is Platform.GITHUB:
        return _github_subjects(seg)
    if platform is Platform.TELEGRAM:
        if not seg or seg[0].startswith("+") or seg[0].lower() in TELEGRAM_PRIVATE_PATHS | TELEGRAM_NON_CHAT_PATHS:
            return []
        name = seg[1] if seg[0].lower() in TELEGRAM_VENUE_PREFIXES and len(seg) >= 2 else seg[0]
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


def _github_subjects(seg: tuple[str, ...]) -> list[str]:
    if not seg:
        return []
    first = seg[0].lower()
    if first in ("orgs", "sponsors"):
        return [f"github-user:{seg[1]}"] if len(seg) >= 2 else []
    if first in GITHUB_RESERVED:
        return []
    if len(seg) == 1:
        return [f"github-user:{seg[0]}"]
    repo = seg[1][:-4] if seg[1].lower().endswith(".git") and len(seg[1]) > 4 else seg[1]
    return [f"repo:{seg[0]}/{repo}"]
