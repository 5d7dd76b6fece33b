"""YouTube, through the Data API v3: free, a daily quota: its generator and sandbox fake. Its descriptor and
URL rules are pure data in `social_recording/domain/specs/youtube.py`, re-exported here
(docs/architecture.md, "Layers")."""

from social_recording.domain.specs.youtube import DESCRIPTOR, YOUTUBE

__all__ = ["DESCRIPTOR", "YOUTUBE"]
