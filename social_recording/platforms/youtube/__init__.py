"""YouTube, through the Data API v3: free, a daily quota. Its descriptor; see docs/architecture.md,
"Providers in one place"."""

from social_recording.domain.platform import Platform, PlatformDescriptor, ProviderAccount, Rate
from social_recording.platforms.youtube.urls import URL_RULES

YOUTUBE = ProviderAccount(
    name="youtube",
    paid=False,
    key_variable="YOUTUBE_API_KEY",
    # 10,000 quota units a day by default; the list calls we make cost 1 unit each (search.list, 100
    # units, is never used). Its day ends at midnight Pacific: a moving 24-hour window never exceeds
    # the quota of any such day.
    rates=(Rate(10_000, 86_400),),
    concurrency=16,
    package=__name__,
)

DESCRIPTOR = PlatformDescriptor(Platform.YOUTUBE, YOUTUBE, URL_RULES, package=__name__)
