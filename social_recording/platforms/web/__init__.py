"""Websites, through urlscan.io (paid per scan) and RDAP (free enrichment): its generator and sandbox fake.
Its descriptor and URL rules are pure data in `social_recording/domain/specs/web.py`, re-exported here
(docs/architecture.md, "Layers")."""

from social_recording.domain.specs.web import DESCRIPTOR, RDAP, URLSCAN

__all__ = ["DESCRIPTOR", "RDAP", "URLSCAN"]
