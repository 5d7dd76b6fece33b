"""Bluesky, through the public AppView (`public.api.bsky.app`): free, no key. Its descriptor and URL
rules; its generator and sandbox fake are in `social_recording.platforms.bluesky` (`PACKAGE`).
Pure data: docs/architecture.md, "Providers in one place" and "Layers".

URL rules: a profile is `bsky.app/profile/<actor>`, a post `bsky.app/profile/<actor>/post/<rkey>`,
where the actor is a handle (a domain name: case-insensitive, so lower-cased, a written `@` dropped)
or a DID (`did:plc:…`, `did:web:…`, kept as written). A post's views (`/liked-by`, `/reposted-by`,
`/quotes`) and a profile's tabs fold onto the post or the profile. The handle in a URL is mutable, so
the keys come from the answer: the account is its DID, the post its AT URI with the DID."""

from __future__ import annotations

import re

from social_recording.domain.platform import Platform, PlatformDescriptor, ProviderAccount, Rate
from social_recording.domain.url_rules import Pairs, UrlRules

PACKAGE = "social_recording.platforms.bluesky"
"""The platform's package: its generator and its sandbox fake."""

DID_RE = re.compile(r"^did:(?:plc:[a-z2-7]{24}|web:[A-Za-z0-9.%:-]+)\Z")
"""A DID as Bluesky accounts have them: `did:plc:` + 24 base32 characters, or `did:web:<host>`."""
HANDLE_RE = re.compile(r"^(?=.{1,253}\Z)(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)+[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?\Z")
"""A handle: a domain name of at least two labels, lower case (the rules lower-case it first)."""
RKEY_RE = re.compile(r"^[A-Za-z0-9._:~-]{1,512}\Z")
"""A record key (a post's is a 13-character TID, but any record key is valid in a URL)."""
_POST_VIEWS = frozenset({"liked-by", "reposted-by", "quotes"})
_PROFILE_TABS = frozenset({"follows", "followers", "known-followers", "media", "likes", "replies", "videos",
                           "feed", "lists", "starter-pack", "posts"})


def actor(segment: str) -> str | None:
    """The canonical actor of a URL segment (a DID as written, a handle in lower case), or None."""
    written = segment[1:] if segment.startswith("@") else segment
    if DID_RE.match(written):
        return written
    lowered = written.lower()
    return lowered if HANDLE_RE.match(lowered) else None


def rules(origin: str, segs: list[str], pairs: Pairs) -> tuple[list[str], Pairs]:
    """`/profile/<actor>` and `/profile/<actor>/post/<rkey>`, each in one form; other paths (search,
    feeds, lists) stay as written."""
    if len(segs) < 2 or segs[0].lower() != "profile":
        return segs, pairs
    who = actor(segs[1])
    if who is None:
        return segs, pairs
    rest = segs[2:]
    if len(rest) >= 2 and rest[0].lower() == "post" and RKEY_RE.match(rest[1]):
        tail = [s.lower() for s in rest[2:]]
        if not tail or (len(tail) == 1 and tail[0] in _POST_VIEWS):
            return ["profile", who, "post", rest[1]], pairs
        return ["profile", who, "post", *rest[1:]], pairs
    if not rest or (len(rest) == 1 and rest[0].lower() in _PROFILE_TABS):
        return ["profile", who], pairs
    return ["profile", who, *rest], pairs


URL_RULES = UrlRules(
    hosts=frozenset({"bsky.app"}),
    path=rules,
    examples=(
        ("https://bsky.app/profile/Alice.BSKY.social", "https://bsky.app/profile/alice.bsky.social"),
        ("https://www.bsky.app/profile/@alice.bsky.social/", "https://bsky.app/profile/alice.bsky.social"),
        ("https://bsky.app/profile/alice.bsky.social/followers", "https://bsky.app/profile/alice.bsky.social"),
        ("https://bsky.app/profile/did:plc:ic6zqvuw5ulmfpjiwnhsr2ns",
         "https://bsky.app/profile/did:plc:ic6zqvuw5ulmfpjiwnhsr2ns"),
        ("https://bsky.app/profile/did:web:example.com", "https://bsky.app/profile/did:web:example.com"),
        ("https://bsky.app/profile/Example.COM/post/3k7qmjev5lr2s",
         "https://bsky.app/profile/example.com/post/3k7qmjev5lr2s"),
        ("https://bsky.app/profile/did:plc:ic6zqvuw5ulmfpjiwnhsr2ns/post/3k7qmjev5lr2s/liked-by?utm_source=x",
         "https://bsky.app/profile/did:plc:ic6zqvuw5ulmfpjiwnhsr2ns/post/3k7qmjev5lr2s"),
        ("https://bsky.app/profile/alice.bsky.social/post/3k7qmjev5lr2s/quotes",
         "https://bsky.app/profile/alice.bsky.social/post/3k7qmjev5lr2s"),
        ("https://bsky.app/search?q=pepe", "https://bsky.app/search?q=pepe"),
        ("https://bsky.app/profile/alice.bsky.social/feed/whats-hot",
         "https://bsky.app/profile/alice.bsky.social/feed/whats-hot"),
    ),
)

BLUESKY = ProviderAccount(
    name="bluesky",
    paid=False,
    # The public AppView allows about 3,000 requests per 5 minutes per address (its `RateLimit-Policy:
    # 3000;w=300` header): 600 a minute never spends a 5-minute window early.
    rates=(Rate(600, 60),),
    concurrency=4,
    package=PACKAGE,
)

DESCRIPTOR = PlatformDescriptor(Platform.BLUESKY, BLUESKY, URL_RULES, package=PACKAGE)
