"""Bluesky posts and profiles, through the public AppView: free, no key: its generator and sandbox fake.
Its descriptor and URL rules are pure data in its `spec.py`, re-exported here (docs/architecture.md,
"Layers")."""

from social_recording.platforms.bluesky.spec import BLUESKY, DESCRIPTOR

__all__ = ["BLUESKY", "DESCRIPTOR"]
