"""GitHub, through its REST API: free, an hourly limit. Its descriptor; see docs/architecture.md,
"Providers in one place"."""

from social_recording.domain.platform import Platform, PlatformDescriptor, ProviderAccount, Rate
from social_recording.platforms.github.urls import URL_RULES

GITHUB = ProviderAccount(
    name="github",
    paid=False,
    key_variable="GITHUB_TOKEN",
    key_optional=True,
    # 5,000 requests an hour with a token, 60 without (per address); secondary limits on bursts answer
    # 403/429 with `retry-after`, which every process honours.
    rates=(Rate(5000, 3600),),
    rates_without_key=(Rate(60, 3600),),
    concurrency=16,
    package=__name__,
)

DESCRIPTOR = PlatformDescriptor(Platform.GITHUB, GITHUB, URL_RULES, package=__name__)
