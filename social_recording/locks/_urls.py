"""Credential hygiene for lock URLs: a password never reaches a log line, an exception or a repr.

The rules live in `domain.redaction` (one masker for every URL the project shows); these names stay for
the lock code that calls them."""

from __future__ import annotations

from social_recording.domain.redaction import redact_url as mask_url
from social_recording.domain.redaction import scrub

__all__ = ["mask_url", "scrub"]
