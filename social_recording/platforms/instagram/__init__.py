"""Instagram, through an Apify actor: paid per run: its generator and sandbox fake. Its descriptor and URL
rules are pure data in its
`spec.py`, re-exported here
(docs/architecture.md, "Layers")."""

from social_recording.platforms.instagram.spec import DESCRIPTOR

__all__ = ["DESCRIPTOR"]
