"""Websites, through urlscan.io (paid per scan) and RDAP (free enrichment). Its descriptor and URL rules; its
generator and sandbox fake are in `social_recording.platforms.web` (`PACKAGE`).
Pure data: docs/architecture.md, "Providers in one place" and "Layers".

URL rules: Websites: any host that is no platform's. No path rule (a site's paths mean what the site says)."""

from __future__ import annotations

from social_recording.domain.platform import Platform, PlatformDescriptor, ProviderAccount, Rate
from social_recording.domain.url_rules import UrlRules

PACKAGE = "social_recording.platforms.web"
"""The platform's package: its generator and its sandbox fake."""

URL_RULES = UrlRules()

URLSCAN = ProviderAccount(
    name="urlscan",
    paid=True,
    key_variable="URLSCAN_API_KEY",
    # Quotas per action (scans, result reads, searches) per minute, hour and day, per account
    # (GET /api/v1/quotas lists them). 60 a minute is a cautious default for every request, polls
    # included; a spent hour or day answers 429 with X-Rate-Limit-Reset-After, held by every process.
    rates=(Rate(60, 60),),
    # Scans have per-minute quotas and each is polled for tens of seconds.
    concurrency=4,
    second_steps=("result:",),
    paid_polls=True,
    # urlscan sells scan quotas by subscription, not per scan (https://urlscan.io/pricing/): this is an
    # estimate, a Pro plan's monthly price over its monthly private-scan quota, about $0.002 per scan.
    unit_price_usd=0.002,
    package=PACKAGE,
)
RDAP = ProviderAccount(name="rdap", paid=False)
"""The registration date of a scanned page's domain: free, called inside urlscan's slot."""

DESCRIPTOR = PlatformDescriptor(Platform.WEB, URLSCAN, URL_RULES, package=PACKAGE, also_calls=(RDAP,),
                                title="the website")
