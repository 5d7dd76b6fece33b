"""Discord invites, through Discord's public invite endpoint: free, no key. Its descriptor and URL rules; its
generator and sandbox fake are in `social_recording.platforms.discord` (`PACKAGE`).
Pure data: docs/architecture.md, "Providers in one place" and "Layers".

URL rules: discord path rules: `discord.gg/<code>` is `discord.com/invite/<code>`."""

from __future__ import annotations

from social_recording.domain.platform import Platform, PlatformDescriptor, ProviderAccount
from social_recording.domain.url_rules import Pairs, UrlRules

PACKAGE = "social_recording.platforms.discord"
"""The platform's package: its generator and its sandbox fake."""

def rules(origin: str, segs: list[str], pairs: Pairs) -> tuple[list[str], Pairs]:
    """discord.gg/<code> is discord.com/invite/<code>; invite codes are case-sensitive."""
    if segs and segs[0].lower() == "invite":
        segs[0] = "invite"
    elif origin == "discord.gg" and segs:
        segs = ["invite", *segs]
    return segs, pairs


URL_RULES = UrlRules(
    hosts=frozenset({"discord.com"}),
    aliases={host: "discord.com" for host in ("discord.gg", "discordapp.com", "ptb.discord.com", "canary.discord.com")},
    path=rules,
)

DISCORD = ProviderAccount(
    name="discord",
    paid=False,
    # Unauthenticated limits are low and undocumented: few at once, and every 429's `retry-after`
    # holds every process until then.
    concurrency=2,
    package=PACKAGE,
)

DESCRIPTOR = PlatformDescriptor(Platform.DISCORD, DISCORD, URL_RULES, package=PACKAGE)
