"""Instagram, through an Apify actor: paid per run: its generator and sandbox fake. Its descriptor and URL
rules are pure data in `social_recording/domain/specs/instagram.py`, re-exported here
(docs/architecture.md, "Layers")."""

from social_recording.domain.specs.instagram import DESCRIPTOR

__all__ = ["DESCRIPTOR"]
