"""GitHub, through its REST API: free, an hourly limit: its generator and sandbox fake. Its descriptor and URL
rules are pure data in its
`spec.py`, re-exported here (docs/architecture.md,
"Layers")."""

from social_recording.platforms.github.spec import DESCRIPTOR, GITHUB

__all__ = ["DESCRIPTOR", "GITHUB"]
