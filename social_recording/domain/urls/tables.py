"""Host and parameter tables: which hosts are one service, which host is which platform, which
hosts are shortlinks, which query parameters are tracking noise."""

from __future__ import annotations

from social_recording.domain.urls.model import Platform

HOST_ALIASES: dict[str, str] = {
    # x (one row per alias and mirror)
    "twitter.com": "x.com",
    "mobile.twitter.com": "x.com",
    "m.twitter.com": "x.com",
    "mobile.x.com": "x.com",
    "m.x.com": "x.com",
    "fxtwitter.com": "x.com",
    "vxtwitter.com": "x.com",
    "fixupx.com": "x.com",
    "fixvx.com": "x.com",
    # youtube
    "youtu.be": "youtube.com",
    "m.youtube.com": "youtube.com",
    "music.youtube.com": "youtube.com",
    "youtube-nocookie.com": "youtube.com",
    # instagram
    "instagr.am": "instagram.com",
    "m.instagram.com": "instagram.com",
    # reddit (redd.it is a shortlink host: resolved upstream, never folded here)
    "old.reddit.com": "reddit.com",
    "new.reddit.com": "reddit.com",
    "np.reddit.com": "reddit.com",
    "m.reddit.com": "reddit.com",
    "i.reddit.com": "reddit.com",
    "amp.reddit.com": "reddit.com",
    # telegram (www.t.me loses its www. by the generic rule)
    "telegram.me": "t.me",
    "telegram.dog": "t.me",
    # tiktok (vm./vt. are shortlink hosts: kept)
    "m.tiktok.com": "tiktok.com",
    # discord
    "discord.gg": "discord.com",
    "discordapp.com": "discord.com",
    "ptb.discord.com": "discord.com",
    "canary.discord.com": "discord.com",
}
"""Alias host (after `www.` removal) -> canonical host of the same service."""

PLATFORM_HOSTS: dict[str, Platform] = {
    "x.com": Platform.X,
    "tiktok.com": Platform.TIKTOK,
    "vm.tiktok.com": Platform.TIKTOK,
    "vt.tiktok.com": Platform.TIKTOK,
    "instagram.com": Platform.INSTAGRAM,
    "reddit.com": Platform.REDDIT,
    "redd.it": Platform.REDDIT,
    "youtube.com": Platform.YOUTUBE,
    "github.com": Platform.GITHUB,
    "t.me": Platform.TELEGRAM,
    "discord.com": Platform.DISCORD,
}
"""Canonical host -> platform. Exact hosts only: help.x.com, gist.github.com, *.github.io are web."""

SHORTENER_HOSTS: frozenset[str] = frozenset(
    {
        "t.co",
        "bit.ly",
        "tinyurl.com",
        "goo.gl",
        "ow.ly",
        "buff.ly",
        "is.gd",
        "v.gd",
        "rebrand.ly",
        "cutt.ly",
        "lnkd.in",
        "t.ly",
        "shorturl.at",
        "tiny.cc",
        "rb.gy",
        "dlvr.it",
        "trib.al",
        "fb.me",
        "s.id",
        "surl.li",
        "vm.tiktok.com",
        "vt.tiktok.com",
        "redd.it",
        "reddit.app.link",
    }
)
"""Hosts whose every path is a redirect to be resolved by the entry (canonical host form).

youtu.be is not here: it folds directly to youtube.com/watch?v=ID. t.co keeps platform `web`: its
target can be any site."""

GLOBAL_TRACKING_PARAMS: frozenset[str] = frozenset(
    {
        "fbclid", "gclid", "dclid", "msclkid", "yclid", "twclid", "ttclid", "gbraid", "wbraid",
        "mc_cid", "mc_eid", "_ga", "_gl", "srsltid", "mkt_tok", "_hsenc", "_hsmi",
    }
)  # fmt: skip
"""Stripped on every host, plus every `utm_*`."""

PLATFORM_TRACKING_PARAMS: dict[Platform, frozenset[str]] = {
    Platform.X: frozenset({"s", "t", "src", "ref_src", "ref_url", "cn"}),
    Platform.YOUTUBE: frozenset({"si", "feature", "pp", "kw"}),
    Platform.INSTAGRAM: frozenset({"igsh", "igshid", "img_index"}),
    Platform.TIKTOK: frozenset(
        {
            "_r", "_t", "_d", "u_code", "share_app_name", "share_iid", "timestamp", "user_id",
            "source", "preview_pb", "is_from_webapp", "sender_device", "is_copy_url",
            # share-sheet parameters seen on real share links (same family as the list above)
            "_s", "checksum", "sec_user_id", "share_app_id", "share_link_id", "share_item_id",
            "social_share_type", "social_sharing", "tt_from", "share_author_id", "enter_from",
            "enter_method", "web_id", "refer",
        }
    ),
    Platform.REDDIT: frozenset({"share_id", "rdt", "ref_source", "ref_campaign", "correlation_id", "ref"}),
}  # fmt: skip
"""Stripped on that platform's hosts only (on an arbitrary site `s`, `t` or `ref` may be content)."""
