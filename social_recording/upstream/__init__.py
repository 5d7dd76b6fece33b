"""Upstreams: the tracker client, the shortlink resolver and the token profile reader — the single
place a URL enters the system and is transformed."""

from social_recording.upstream.profile import TokenInfoSource, TokenProfileReader, UrlResolver
from social_recording.upstream.shortlinks import ShortlinkError, ShortlinkResolver
from social_recording.upstream.tracker import TokenInfo, TrackedToken, TrackerClient, TrackerError

__all__ = [
    "ShortlinkError",
    "ShortlinkResolver",
    "TokenInfo",
    "TokenInfoSource",
    "TokenProfileReader",
    "TrackedToken",
    "TrackerClient",
    "TrackerError",
    "UrlResolver",
]
