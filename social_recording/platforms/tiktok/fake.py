"""TikTok in the sandbox: its items are served by the Apify fake (platforms/apify/fake.py); this
module says which Apify inputs a TikTok URL turns into."""

from __future__ import annotations

from social_recording.domain.urls import CanonicalUrl
from social_recording.platforms.tiktok.generator import classify_tiktok_url
from social_recording.sandbox.fake_api import NO_CALL


def subjects(parsed: CanonicalUrl) -> list[str]:
    kind, value = classify_tiktok_url(parsed)
    if kind == "profile":  # the actor input names the handle; the fake reads it back as this URL
        return [f"apify:https://tiktok.com/@{value}"]
    return [f"apify:{parsed.url}"] if kind not in NO_CALL else []
