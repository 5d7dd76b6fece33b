"""Reddit, through an Apify actor: paid per run. Its descriptor; see docs/architecture.md, "Providers in
one place"."""

from social_recording.domain.platform import Platform, PlatformDescriptor
from social_recording.platforms.apify import APIFY
from social_recording.platforms.reddit.urls import URL_RULES

DESCRIPTOR = PlatformDescriptor(Platform.REDDIT, APIFY, URL_RULES, package=__name__)
