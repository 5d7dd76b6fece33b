"""Apify: the paid scraper account behind TikTok, Instagram and Reddit (its client and its fake are
shared by the three). See docs/architecture.md, "Providers in one place"."""

from social_recording.domain.platform import ProviderAccount

APIFY = ProviderAccount(
    name="apify",
    paid=True,
    key_variable="APIFY_TOKEN",
    # No request rate: concurrent actor runs are bounded by the plan's memory, and a run over the
    # limit is refused (read as credit exhaustion for the rest of the run): keep few at once.
    concurrency=4,
    second_steps=("apify-run:", "apify-dataset:"),
    # An estimate: the three actors are priced per result (https://apify.com/store, each actor's
    # "Pricing" tab: a few dollars per 1,000 results) and one run of ours reads one post or profile,
    # so about $0.005 per run started.
    unit_price_usd=0.005,
    package=__name__,
)
