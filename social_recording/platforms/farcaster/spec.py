"""Farcaster, through Neynar's API: paid per request, so spend budgets apply. Its descriptor and URL
rules; its generator and sandbox fake are in `social_recording.platforms.farcaster` (`PACKAGE`).
Pure data: docs/architecture.md, "Providers in one place" and "Layers".

URL rules: the Farcaster client serves the same paths on `farcaster.xyz` and its old host
`warpcast.com` (folded onto `farcaster.xyz`): a cast `/<username>/<0x hash prefix>`, a profile
`/<username>`, a channel `/~/channel/<id>`. Usernames (`[a-z0-9-]`, `.eth` names) and hashes are
lower-cased, a written `@` dropped. A cast URL carries only a prefix of the cast's hash, so the content
key is the full hash from the answer; the account key is the fid, never the username (it can change)."""

from __future__ import annotations

import re

from social_recording.domain.platform import Platform, PlatformDescriptor, ProviderAccount, Rate
from social_recording.domain.url_rules import Pairs, UrlRules

PACKAGE = "social_recording.platforms.farcaster"
"""The platform's package: its generator and its sandbox fake."""

USERNAME_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,19}(?:\.eth)?\Z")
"""A username as the client writes it in a path (an fname, or an ENS name ending `.eth`)."""
HASH_PREFIX_RE = re.compile(r"^0x[0-9a-f]{6,40}\Z")
"""A cast hash or its prefix (the client shortens it to 8 hex digits, `0x` and 6 or more)."""
CHANNEL_RE = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}\Z")
RESERVED: frozenset[str] = frozenset({"~", "settings", "notifications", "search", "explore", "login", "signup",
                                      "download", "privacy", "terms", "frames", "miniapps", "developers"})
"""First path segments that are the client's own pages, never a username."""


def rules(origin: str, segs: list[str], pairs: Pairs) -> tuple[list[str], Pairs]:
    """One form per cast, profile and channel; anything else stays as written."""
    if not segs:
        return segs, pairs
    if len(segs) >= 3 and segs[0] == "~" and segs[1].lower() in ("channel", "channels"):
        channel = segs[2].lower()
        return (["~", "channel", channel], pairs) if CHANNEL_RE.match(channel) else (segs, pairs)
    name = (segs[0][1:] if segs[0].startswith("@") else segs[0]).lower()
    if name in RESERVED or not USERNAME_RE.match(name):
        return segs, pairs
    if len(segs) >= 2 and HASH_PREFIX_RE.match(segs[1].lower()):
        return [name, segs[1].lower()], pairs
    if len(segs) == 1:
        return [name], pairs
    return [name, *segs[1:]], pairs


URL_RULES = UrlRules(
    hosts=frozenset({"farcaster.xyz"}),
    aliases={"warpcast.com": "farcaster.xyz"},
    path=rules,
    examples=(
        ("https://warpcast.com/rish/0x9288c1", "https://farcaster.xyz/rish/0x9288c1"),
        ("https://www.warpcast.com/Rish/0x9288C1E8", "https://farcaster.xyz/rish/0x9288c1e8"),
        ("https://farcaster.xyz/rish/0x9288c1e862aa72bd69d0e383a28b9a76b63cbdb4",
         "https://farcaster.xyz/rish/0x9288c1e862aa72bd69d0e383a28b9a76b63cbdb4"),
        ("https://warpcast.com/@Vitalik.eth", "https://farcaster.xyz/vitalik.eth"),
        ("https://farcaster.xyz/neynar/", "https://farcaster.xyz/neynar"),
        ("https://warpcast.com/~/channel/Farcaster", "https://farcaster.xyz/~/channel/farcaster"),
        ("https://farcaster.xyz/~/channel/base?utm_source=x", "https://farcaster.xyz/~/channel/base"),
        ("https://warpcast.com/~/settings", "https://farcaster.xyz/~/settings"),
    ),
)

NEYNAR = ProviderAccount(
    name="neynar",
    paid=True,
    key_variable="NEYNAR_API_KEY",
    # Per plan and endpoint; the paid plans allow several hundred requests a minute (300 on the lowest,
    # set another with SOCIAL_RECORDING_RATE_LIMITS). Over the plan's units Neynar answers 402 or 429.
    rates=(Rate(300, 60),),
    concurrency=4,
    # An estimate: Neynar sells plans in compute units (https://neynar.com/#pricing: from $9 a month for
    # about a million units) and one cast, user or channel lookup costs a few units: about $0.0001.
    unit_price_usd=0.0001,
    package=PACKAGE,
)

DESCRIPTOR = PlatformDescriptor(Platform.FARCASTER, NEYNAR, URL_RULES, package=PACKAGE)
