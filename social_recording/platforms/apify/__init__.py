"""Apify: the paid scraper account behind TikTok, Instagram and Reddit: its client and sandbox fake, shared by
the three. Its account is pure data in its
`spec.py`, re-exported here
(docs/architecture.md, "Layers")."""

from social_recording.platforms.apify.spec import APIFY

__all__ = ["APIFY"]
