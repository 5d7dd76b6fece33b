"""Telegram, through t.me's public preview pages: free, no key: its generator and sandbox fake. Its descriptor
and URL rules are pure data in its
`spec.py`, re-exported here
(docs/architecture.md, "Layers")."""

from social_recording.platforms.telegram.spec import DESCRIPTOR, TELEGRAM

__all__ = ["DESCRIPTOR", "TELEGRAM"]
