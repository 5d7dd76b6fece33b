"""The registration of every platform: one line each. Everything else about a provider is read from
its descriptor (docs/architecture.md, "Providers in one place"). Pure: importing it loads URL rules
and records, never HTTP or sandbox code."""

from social_recording.domain.platform import Catalogue
from social_recording.domain.specs import (
    discord,
    github,
    instagram,
    reddit,
    telegram,
    tiktok,
    web,
    x,
    youtube,
)

CATALOGUE = Catalogue(
    (
        x.DESCRIPTOR,
        tiktok.DESCRIPTOR,
        instagram.DESCRIPTOR,
        reddit.DESCRIPTOR,
        youtube.DESCRIPTOR,
        github.DESCRIPTOR,
        telegram.DESCRIPTOR,
        discord.DESCRIPTOR,
        web.DESCRIPTOR,
    )
)
