"""X (twitter), through twitterapi.io: paid per request. Its descriptor; see docs/architecture.md,
"Providers in one place"."""

from social_recording.domain.platform import Platform, PlatformDescriptor, ProviderAccount, Rate
from social_recording.platforms.x.urls import URL_RULES

TWITTERAPI = ProviderAccount(
    name="twitterapi",
    paid=True,
    key_variable="TWITTERAPI_IO_KEY",
    # Per key, per second: 20 for any topped-up account (Starter, Builder, Pro), 50 on Scale, 500 on
    # Business; a never-topped-up account gets 1 per 5 s (set it with SOCIAL_RECORDING_RATE_LIMITS).
    rates=(Rate(20, 1),),
    # One to three requests per URL: 8 calls in flight stay well inside the rate.
    concurrency=8,
    # twitterapi.io bills credits (100,000 to the dollar) with a minimum of 15 credits per request, which
    # a one-tweet or one-user lookup costs (https://twitterapi.io/pricing): $0.00015 per request.
    unit_price_usd=0.00015,
    package=__name__,
)

DESCRIPTOR = PlatformDescriptor(Platform.X, TWITTERAPI, URL_RULES, package=__name__)
