"""Apify: the paid scraper account behind TikTok, Instagram and Reddit. Its client and its sandbox fake,
shared by the three, are in `social_recording.platforms.apify` (`PACKAGE`).
Pure data: docs/architecture.md, "Providers in one place" and "Layers"."""

from __future__ import annotations

from social_recording.domain.platform import ProviderAccount

PACKAGE = "social_recording.platforms.apify"
"""The account's package: its client and its sandbox fake."""

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
    package=PACKAGE,
)
