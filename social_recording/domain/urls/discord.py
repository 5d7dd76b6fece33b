"""discord path rules: `discord.gg/<code>` is `discord.com/invite/<code>`."""

from __future__ import annotations

from social_recording.domain.urls.normalise import Pairs


def rules(origin: str, segs: list[str], pairs: Pairs) -> tuple[list[str], Pairs]:
    """discord.gg/<code> is discord.com/invite/<code>; invite codes are case-sensitive."""
    if segs and segs[0].lower() == "invite":
        segs[0] = "invite"
    elif origin == "discord.gg" and segs:
        segs = ["invite", *segs]
    return segs, pairs

