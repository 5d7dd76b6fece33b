"""Canonical URLs: `to_canonical` transforms (the entry only); `parse_canonical` and `platform_of`
read and never fix. The rules, generic and per platform, are described in docs/architecture.md
("URLs: transformed once, at the entry"); each platform's own live in its spec,
`platforms/<platform>/spec.py`."""

from social_recording.domain.redaction import redact_url
from social_recording.domain.urls.canonical import (
    is_shortlink,
    parse_canonical,
    platform_of,
    to_canonical,
    to_canonical_all,
)
from social_recording.domain.urls.model import CanonicalUrl, NonCanonicalUrl, Platform
from social_recording.domain.urls.tables import (
    GLOBAL_TRACKING_PARAMS,
    HOST_ALIASES,
    PLATFORM_HOSTS,
    PLATFORM_TRACKING_PARAMS,
    SHORTENER_HOSTS,
)

__all__ = [
    "GLOBAL_TRACKING_PARAMS",
    "HOST_ALIASES",
    "PLATFORM_HOSTS",
    "PLATFORM_TRACKING_PARAMS",
    "SHORTENER_HOSTS",
    "CanonicalUrl",
    "NonCanonicalUrl",
    "Platform",
    "is_shortlink",
    "parse_canonical",
    "platform_of",
    "redact_url",
    "to_canonical",
    "to_canonical_all",
]
