"""Telegram, through t.me's public preview pages: free, no key. Its descriptor; see
docs/architecture.md, "Providers in one place"."""

from social_recording.domain.platform import Platform, PlatformDescriptor, ProviderAccount
from social_recording.platforms.telegram.urls import URL_RULES

TELEGRAM = ProviderAccount(
    name="telegram",
    paid=False,
    # No documented limit: a few pages at once, and its 429s are honoured.
    concurrency=2,
    package=__name__,
)

DESCRIPTOR = PlatformDescriptor(
    Platform.TELEGRAM,
    TELEGRAM,
    URL_RULES,
    package=__name__,
    reusable=False,  # the key is a username, which its owner can give away
)
