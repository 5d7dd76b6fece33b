"""Farcaster casts, profiles and channels, through Neynar (paid per request): its generator and sandbox
fake. Its descriptor and URL rules are pure data in its `spec.py`, re-exported here
(docs/architecture.md, "Layers")."""

from social_recording.platforms.farcaster.spec import DESCRIPTOR, NEYNAR

__all__ = ["DESCRIPTOR", "NEYNAR"]
