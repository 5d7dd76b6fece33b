"""Discord invites, through Discord's public invite endpoint: free, no key. Its descriptor; see
docs/architecture.md, "Providers in one place"."""

from social_recording.domain.platform import Platform, PlatformDescriptor, ProviderAccount
from social_recording.platforms.discord.urls import URL_RULES

DISCORD = ProviderAccount(
    name="discord",
    paid=False,
    # Unauthenticated limits are low and undocumented: few at once, and every 429's `retry-after`
    # holds every process until then.
    concurrency=2,
    package=__name__,
)

DESCRIPTOR = PlatformDescriptor(Platform.DISCORD, DISCORD, URL_RULES, package=__name__)
