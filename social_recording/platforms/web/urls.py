"""Websites: any host that is no platform's. No path rule (a site's paths mean what the site says)."""

from __future__ import annotations

from social_recording.domain.url_rules import UrlRules

URL_RULES = UrlRules()
