"""Websites, through urlscan.io (paid per scan) and RDAP (free enrichment): its generator and sandbox fake.
Its descriptor and URL rules are pure data in its
`spec.py`, re-exported here
(docs/architecture.md, "Layers")."""

from social_recording.platforms.web.spec import DESCRIPTOR, RDAP, URLSCAN

__all__ = ["DESCRIPTOR", "RDAP", "URLSCAN"]
