"""Instagram in the sandbox: its items are served by the Apify fake (platforms/apify/fake.py); this
module says which Apify inputs a Instagram URL turns into."""

from __future__ import annotations

from social_recording.domain.urls import CanonicalUrl
from social_recording.platforms.instagram.generator import classify_instagram_url
from social_recording.sandbox.fake_api import NO_CALL


def subjects(parsed: CanonicalUrl) -> list[str]:
    return [f"apify:{parsed.url}"] if classify_instagram_url(parsed)[0] not in NO_CALL else []
