"""YouTube, through the Data API v3: free, a daily quota: its generator and sandbox fake. Its descriptor and
URL rules are pure data in its
`spec.py`, re-exported here
(docs/architecture.md, "Layers")."""

from social_recording.platforms.youtube.spec import DESCRIPTOR, YOUTUBE

__all__ = ["DESCRIPTOR", "YOUTUBE"]
