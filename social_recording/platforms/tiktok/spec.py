"""TikTok, through an Apify actor: paid per run. Its descriptor and URL rules; its generator and sandbox fake
are in `social_recording.platforms.tiktok` (`PACKAGE`).
Pure data: docs/architecture.md, "Providers in one place" and "Layers".

URL rules: tiktok.com path rules: one form per post (`tiktok.com/@/video/<id>`), handles lower-cased."""

from __future__ import annotations

import re

from social_recording.domain.platform import Platform, PlatformDescriptor
from social_recording.domain.url_rules import DIGITS_RE, Pairs, UrlRules
from social_recording.platforms.apify.spec import APIFY

PACKAGE = "social_recording.platforms.tiktok"
"""The platform's package: its generator and its sandbox fake."""

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


def _is_share_link(host: str, segs: list[str]) -> bool:
    """`tiktok.com/t/<code>` redirects like the vm./vt. shortlink hosts."""
    return host == "tiktok.com" and len(segs) >= 2 and segs[0] == "t"


URL_RULES = UrlRules(
    hosts=frozenset({"tiktok.com", "vm.tiktok.com", "vt.tiktok.com"}),
    aliases={"m.tiktok.com": "tiktok.com"},  # vm./vt. are shortlink hosts: kept
    tracking_params=frozenset(
        {
            "_r", "_t", "_d", "u_code", "share_app_name", "share_iid", "timestamp", "user_id",
            "source", "preview_pb", "is_from_webapp", "sender_device", "is_copy_url",
            # share-sheet parameters seen on real share links (same family as the list above)
            "_s", "checksum", "sec_user_id", "share_app_id", "share_link_id", "share_item_id",
            "social_share_type", "social_sharing", "tt_from", "share_author_id", "enter_from",
            "enter_method", "web_id", "refer",
        }
    ),  # fmt: skip
    path=rules,
    shortlink_hosts=frozenset({"vm.tiktok.com", "vt.tiktok.com"}),
    is_shortlink=_is_share_link,
)

DESCRIPTOR = PlatformDescriptor(Platform.TIKTOK, APIFY, URL_RULES, package=PACKAGE, title="TikTok")
