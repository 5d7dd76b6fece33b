"""Telegram, through t.me's public preview pages: free, no key: its generator and sandbox fake. Its descriptor
and URL rules are pure data in `social_recording/domain/specs/telegram.py`, re-exported here
(docs/architecture.md, "Layers")."""

from social_recording.domain.specs.telegram import DESCRIPTOR, TELEGRAM

__all__ = ["DESCRIPTOR", "TELEGRAM"]
