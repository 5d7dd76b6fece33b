"""`redact_url`: what logs, lock-key warnings and run metadata show of a URL."""

from __future__ import annotations

import pytest

from social_recording.domain.urls import redact_url
from social_recording.recording._text import safe_url


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("https://example.com/a?b=1", "https://example.com/a?b=1"),
        ("https://user:pw@example.com/a", "https://***@example.com/a"),
        ("https://example.com/a?api_key=zzz&b=1", "https://example.com/a?api_key=***&b=1"),
        ("https://example.com/cb?access_token=abc#x", "https://example.com/cb?access_token=***#x"),
        ("https://example.com/?sig=1&Signature=2&session_id=3", "https://example.com/?sig=***&Signature=***&session_id=***"),
        ("social-url:https://example.com/a?token=abc", "social-url:https://example.com/a?token=***"),
        ("https://example.com/monkey?keyword=x", "https://example.com/monkey?keyword=***"),  # errs on the safe side
    ],
)
def test_redact_url(raw: str, shown: str) -> None:
    assert redact_url(raw) == shown


def test_safe_url_redacts_and_caps() -> None:
    long = "https://example.com/" + "a" * 400 + "?token=secret"
    out = safe_url(long)
    assert "secret" not in out and len(out) <= 303
    assert safe_url("https://example.com/x?password=hunter2") == "https://example.com/x?password=***"
