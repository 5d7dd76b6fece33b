"""tiktok.com path rules: one form per post (`tiktok.com/@/video/<id>`), handles lower-cased."""

from __future__ import annotations

import re

from social_recording.domain.urls.normalise import DIGITS_RE, Pairs

TIKTOK_NON_POST_PATHS: frozenset[str] = frozenset(
    {"tag", "discover", "search", "explore", "foryou", "following", "friends", "live", "music", "channel"}
)
"""First segments of tiktok.com's own pages (hashtags, feeds, search): they name no post or account."""

_TT_V_HTML_RE = re.compile(r"^([0-9]{1,25})(?:\.html)?\Z")


def rules(origin: str, segs: list[str], pairs: Pairs) -> tuple[list[str], Pairs]:
    """TikTok usernames are case-insensitive; shortlink codes (vm./vt./t/) are case-sensitive. A post
    is its id: TikTok serves `/@/video/<id>` whatever the author, so `/@<anyone>/video/<id>` and the
    old `/v/<id>.html` fold to `tiktok.com/@/video/<id>` (photo posts to `/@/photo/<id>`)."""
    on_main_host = origin in ("tiktok.com", "m.tiktok.com")
    if not on_main_host or not segs:
        return segs, pairs
    if segs[0].startswith("@") or segs[0].lower() in ("t", "v"):
        segs[0] = segs[0].lower()
    if len(segs) == 3 and segs[0].startswith("@") and segs[1].lower() in ("video", "photo") and (
        DIGITS_RE.match(segs[2])
    ):
        segs = ["@", segs[1].lower(), segs[2]]
    elif len(segs) == 2 and segs[0] == "v" and (m := _TT_V_HTML_RE.match(segs[1])) is not None:
        segs = ["@", "video", m.group(1)]
    elif (
        len(segs) in (2, 3) and segs[0].lower() == "embed" and segs[-1].isdigit()
        and (len(segs) == 2 or segs[1].lower() == "v2")
    ):
        # The embed player `/embed/<id>`, `/embed/v2/<id>` shows the same post.
        segs, pairs = ["@", "video", segs[-1]], []
    return segs, pairs
