"""YouTube, through the Data API v3: free, a daily quota. Its descriptor and URL rules; its generator and
sandbox fake are in `social_recording.platforms.youtube` (`PACKAGE`).
Pure data: docs/architecture.md, "Providers in one place" and "Layers".

URL rules: youtube.com path rules: every video URL folds to `watch?v=<id>`; handles lower-cased; channel
tabs dropped."""

from __future__ import annotations

import re

from social_recording.domain.platform import Platform, PlatformDescriptor, ProviderAccount, Rate
from social_recording.domain.url_rules import Pairs, UrlRules, strip_params

PACKAGE = "social_recording.platforms.youtube"
"""The platform's package: its generator and its sandbox fake."""

YOUTUBE_VIDEO_TARGET_PARAMS: frozenset[str] = frozenset({"t", "list", "index", "ab_channel"})
"""Stripped when a youtube URL targets a video (watch?v=...): start time and playlist context."""

YOUTUBE_EMBED_PLAYER_PARAMS: frozenset[str] = frozenset(
    {
        "autoplay", "mute", "controls", "rel", "start", "end", "loop", "playlist", "modestbranding",
        "enablejsapi", "origin", "playsinline", "showinfo", "cc_load_policy", "iv_load_policy", "fs",
        "hl", "color", "widget_referrer", "disablekb", "cc_lang_pref",
    }
)  # fmt: skip
"""Embed player settings: meaningless once `/embed/ID` is folded to the watch form."""

_YT_ID_RE = re.compile(r"^[A-Za-z0-9_\-]{11}\Z")
YOUTUBE_VIDEO_PATHS: frozenset[str] = frozenset({"embed", "shorts", "live", "v", "e"})
"""First segments followed by a video id (`/shorts/<id>`, ...); the canonical form folds them to
`watch?v=<id>`, and the generator and the sandbox read any that remain the same way."""
_YT_VIDEO_PREFIXES = YOUTUBE_VIDEO_PATHS | {"watch"}
_YT_EMBED_PREFIXES = frozenset({"embed", "v", "e"})
_YT_CHANNEL_TABS = frozenset(
    {"featured", "videos", "shorts", "streams", "about", "community", "playlists", "podcasts",
     "releases", "channels", "store", "posts"}
)  # fmt: skip


def rules(origin: str, segs: list[str], pairs: Pairs) -> tuple[list[str], Pairs]:
    """Every video URL shape folds to watch?v=ID: the video id is the object, the shape is not."""
    embed = False
    if origin == "youtu.be":
        if segs:
            pairs = [("v", segs[0].replace("&", "%26")), *[p for p in pairs if p[0] != "v"]]
            segs = ["watch"]
    elif len(segs) >= 2 and segs[0].lower() in _YT_VIDEO_PREFIXES:
        prefix = segs[0].lower()
        if prefix == "embed" and segs[1].lower() == "videoseries":
            segs = ["playlist"]
            embed = True
        elif _YT_ID_RE.match(segs[1]):
            pairs = [("v", segs[1]), *[p for p in pairs if p[0] != "v"]]
            segs = ["watch"]
            embed = prefix in _YT_EMBED_PREFIXES
    if embed:
        pairs = strip_params(pairs, YOUTUBE_EMBED_PLAYER_PARAMS)
    if segs and segs[0].startswith("@"):
        segs[0] = segs[0].lower()
    is_channel = (segs and segs[0].startswith("@") and len(segs) == 2) or (
        len(segs) == 3 and segs[0].lower() in ("channel", "c", "user")
    )
    if is_channel and segs[-1].lower() in _YT_CHANNEL_TABS:
        segs = segs[:-1]
    if segs == ["watch"] and any(p[0] == "v" for p in pairs):
        pairs = strip_params(pairs, YOUTUBE_VIDEO_TARGET_PARAMS)
    return segs, pairs


URL_RULES = UrlRules(
    hosts=frozenset({"youtube.com"}),
    aliases={host: "youtube.com" for host in ("youtu.be", "m.youtube.com", "music.youtube.com", "youtube-nocookie.com")},
    tracking_params=frozenset({"si", "feature", "pp", "kw"}),
    path=rules,
)

YOUTUBE = ProviderAccount(
    name="youtube",
    paid=False,
    key_variable="YOUTUBE_API_KEY",
    # 10,000 quota units a day by default; the list calls we make cost 1 unit each (search.list, 100
    # units, is never used). Its day ends at midnight Pacific: a moving 24-hour window never exceeds
    # the quota of any such day.
    rates=(Rate(10_000, 86_400),),
    concurrency=16,
    package=PACKAGE,
)

DESCRIPTOR = PlatformDescriptor(Platform.YOUTUBE, YOUTUBE, URL_RULES, package=PACKAGE, title="YouTube")
