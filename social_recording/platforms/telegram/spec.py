"""Telegram, through t.me's public preview pages: free, no key. Its descriptor and URL rules; its generator
and sandbox fake are in `social_recording.platforms.telegram` (`PACKAGE`).
Pure data: docs/architecture.md, "Providers in one place" and "Layers".

URL rules: t.me path rules: `/s/<name>` is `/<name>`, usernames lower-cased, invite codes keep their case."""

from __future__ import annotations

import re

from social_recording.domain.platform import Platform, PlatformDescriptor, ProviderAccount
from social_recording.domain.url_rules import Pairs, UrlRules

PACKAGE = "social_recording.platforms.telegram"
"""The platform's package: its generator and its sandbox fake."""

TELEGRAM_USERNAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{2,31}\Z")
"""A public username: a letter first, then letters, digits, underscores; at most 32 characters (the
lower bound is generous: 3, although Telegram issues 4+)."""

TELEGRAM_PRIVATE_PATHS: frozenset[str] = frozenset({"joinchat", "c", "addlist", "m"})
"""First segments of links no public page answers (invites, private chats, folders, business links);
`+<code>` invites are the other private form."""

TELEGRAM_NON_CHAT_PATHS: frozenset[str] = frozenset(
    {"share", "addstickers", "addemoji", "addtheme", "setlanguage", "proxy", "socks", "iv", "bg", "login"}
)
"""First segments of t.me's own pages (share sheet, sticker sets, settings links): they name no chat."""

TELEGRAM_VENUE_PREFIXES: frozenset[str] = frozenset({"s", "boost"})
"""`t.me/s/<name>` and `t.me/boost/<name>` show the chat `<name>`."""


def rules(origin: str, segs: list[str], pairs: Pairs) -> tuple[list[str], Pairs]:
    """`/s/<name>` is the web preview of `/<name>`; usernames are case-insensitive, invites are not."""
    if len(segs) >= 2 and segs[0].lower() == "s":
        segs = segs[1:]
    if segs and TELEGRAM_USERNAME_RE.match(segs[0]):
        segs[0] = segs[0].lower()
    return segs, pairs


URL_RULES = UrlRules(
    hosts=frozenset({"t.me"}),
    aliases={"telegram.me": "t.me", "telegram.dog": "t.me"},  # www.t.me loses its www. generically
    path=rules,
)

TELEGRAM = ProviderAccount(
    name="telegram",
    paid=False,
    # No documented limit: a few pages at once, and its 429s are honoured.
    concurrency=2,
    package=PACKAGE,
)

DESCRIPTOR = PlatformDescriptor(
    Platform.TELEGRAM,
    TELEGRAM,
    URL_RULES,
    package=PACKAGE,
    reusable=False,  # the key is a username, which its owner can give away
)
