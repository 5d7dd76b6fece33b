"""Instagram, through an Apify actor: paid per run. Its descriptor and URL rules; its generator and sandbox
fake are in `social_recording.platforms.instagram` (`PACKAGE`).
Pure data: docs/architecture.md, "Providers in one place" and "Layers".

URL rules: instagram.com path rules: one form per media (`instagram.com/p/<code>`), usernames lower-cased."""

from __future__ import annotations

import re

from social_recording.domain.platform import Platform, PlatformDescriptor
from social_recording.domain.url_rules import Pairs, UrlRules
from social_recording.platforms.apify.spec import APIFY

PACKAGE = "social_recording.platforms.instagram"
"""The platform's package: its generator and its sandbox fake."""

_IG_MEDIA = frozenset({"p", "reel", "reels", "tv"})
INSTAGRAM_RESERVED: frozenset[str] = _IG_MEDIA | frozenset(
    {"explore", "accounts", "about", "developer", "legal", "direct", "stories", "web", "emails", "share",
     "challenge", "privacy", "terms", "session", "oauth", "graphql", "api", "static", "locations",
     "directory", "topics", "ar", "press", "blog"}
)  # fmt: skip
"""First path segments that are Instagram's own pages (or a media prefix), never a username. The
canonicaliser, the Instagram generator and the sandbox read this one set."""
_IG_CODE_RE = re.compile(r"^[A-Za-z0-9_\-]{1,64}\Z")
_IG_NOT_CODES = frozenset({"audio"})  # instagram.com/reels/audio/<id> is a sound's page, not a reel


def rules(origin: str, segs: list[str], pairs: Pairs) -> tuple[list[str], Pairs]:
    """Usernames are lower-case on Instagram; a shortcode is the media whatever path prefixes it:
    `/reel/`, `/reels/`, `/tv/` and `/<user>/p/` all fold to `/p/<code>` (instagram.com/p/<code>
    serves reels and IGTV too; the media kind comes from the API's `productType`, not the URL)."""
    if not segs:
        return segs, pairs
    segs[0] = segs[0].lower()
    if len(segs) >= 3 and segs[0] not in INSTAGRAM_RESERVED and segs[1].lower() in _IG_MEDIA:
        segs = segs[1:]
        segs[0] = segs[0].lower()
    if len(segs) >= 2 and segs[0] in _IG_MEDIA and _IG_CODE_RE.match(segs[1]) and segs[1] not in _IG_NOT_CODES:
        segs[0] = "p"
        if len(segs) >= 3 and segs[2].lower() == "embed":
            segs = segs[:2]
    return segs, pairs


def _is_share_link(host: str, segs: list[str]) -> bool:
    """`instagram.com/share/<code>` redirects to the post or reel it shares."""
    return host == "instagram.com" and len(segs) >= 2 and segs[0] == "share"


URL_RULES = UrlRules(
    hosts=frozenset({"instagram.com"}),
    aliases={"instagr.am": "instagram.com", "m.instagram.com": "instagram.com"},
    tracking_params=frozenset({"igsh", "igshid", "img_index"}),
    path=rules,
    is_shortlink=_is_share_link,
)

DESCRIPTOR = PlatformDescriptor(Platform.INSTAGRAM, APIFY, URL_RULES, package=PACKAGE)
