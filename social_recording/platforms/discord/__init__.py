"""Discord invites. Its descriptor; see docs/architecture.md, "Providers in one place"."""

from social_recording.domain.platform import Platform, PlatformDescriptor, ProviderAccount
from social_recording.platforms.discord.urls import URL_RULES

DISCORD = ProviderAccount(name="discord", paid=False, concurrency=2)

DESCRIPTOR = PlatformDescriptor(Platform.DISCORD, DISCORD, URL_RULES, package=__name__, has_generator=False)
