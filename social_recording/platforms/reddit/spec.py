"""Reddit, through an Apify actor: paid per run. Its descriptor and URL rules; its generator and sandbox fake
are in `social_recording.platforms.reddit` (`PACKAGE`).
Pure data: docs/architecture.md, "Providers in one place" and "Layers".

URL rules: reddit.com path rules: one form per post (`reddit.com/comments/<id>`), names lower-cased."""

from __future__ import annotations

import re

from social_recording.domain.platform import Platform, PlatformDescriptor
from social_recording.domain.url_rules import Pairs, UrlRules, strip_params
from social_recording.platforms.apify.spec import APIFY

PACKAGE = "social_recording.platforms.reddit"
"""The platform's package: its generator and its sandbox fake."""

_REDDIT_ID_RE = re.compile(r"^[a-z0-9]{1,12}\Z")  # as platforms/reddit.py reads it
REDDIT_POST_VIEW_PARAMS: frozenset[str] = frozenset({"context", "sort", "depth"})
"""Comment-thread display settings of a post page: stripped when a reddit URL targets a post."""


def rules(origin: str, segs: list[str], pairs: Pairs) -> tuple[list[str], Pairs]:
    """Subreddit and user names are case-insensitive. A post is its id: every post URL
    (`/r/<sub>/comments/<id>[/<slug>]`, `/user/<name>/comments/<id>/...`, `/gallery/<id>`) folds to
    `reddit.com/comments/<id>` (the subreddit comes from the API). A comment permalink
    (`.../comments/<id>/<slug>/<comment id>`, `.../comment/<comment id>`) folds to its post too: we
    record the post (the generator asks for the post, comments skipped), so keeping the permalink
    would pay again for the same post."""
    if origin == "redd.it" or not segs:
        return segs, pairs
    segs[0] = segs[0].lower()
    if segs[0] == "u":
        segs[0] = "user"
    base = 0
    if segs[0] in ("r", "user") and len(segs) >= 2:
        segs[1] = segs[1].lower()
        base = 2
    post_id: str | None = None
    if len(segs) >= base + 2 and segs[base].lower() == "comments":
        segs[base] = "comments"
        segs[base + 1] = segs[base + 1].lower()
        if _REDDIT_ID_RE.match(segs[base + 1]):
            post_id = segs[base + 1]
        elif len(segs) == base + 3:
            segs = segs[: base + 2]
    elif len(segs) == 2 and segs[0] == "gallery" and _REDDIT_ID_RE.match(segs[1].lower()):
        post_id = segs[1].lower()
    if post_id is not None:
        return ["comments", post_id], strip_params(pairs, REDDIT_POST_VIEW_PARAMS)
    return segs, pairs


def _is_share_link(host: str, segs: list[str]) -> bool:
    """`reddit.com/r/<sub>/s/<code>` redirects to the post it shares."""
    return host == "reddit.com" and len(segs) >= 4 and segs[0] == "r" and segs[2] == "s"


URL_RULES = UrlRules(
    hosts=frozenset({"reddit.com", "redd.it"}),
    aliases={host: "reddit.com" for host in (
        "old.reddit.com", "new.reddit.com", "np.reddit.com", "m.reddit.com", "i.reddit.com", "amp.reddit.com")},
    tracking_params=frozenset({"share_id", "rdt", "ref_source", "ref_campaign", "correlation_id", "ref"}),
    path=rules,
    shortlink_hosts=frozenset({"redd.it", "reddit.app.link"}),
    is_shortlink=_is_share_link,
)

DESCRIPTOR = PlatformDescriptor(Platform.REDDIT, APIFY, URL_RULES, package=PACKAGE)
