"""discord path rules: `discord.gg/<code>` is `discord.com/invite/<code>`."""

from __future__ import annotations

from social_recording.domain.url_rules import Pairs, UrlRules


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
