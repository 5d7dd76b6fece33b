"""X (twitter), through twitterapi.io: paid per request: its generator and sandbox fake. Its descriptor and
URL rules are pure data in its
`spec.py`, re-exported here (docs/architecture.md,
"Layers")."""

from social_recording.platforms.x.spec import DESCRIPTOR, TWITTERAPI

__all__ = ["DESCRIPTOR", "TWITTERAPI"]
