"""Log-safe text: URLs without credentials, short error descriptions (key=value lines: `log_line`)."""

from __future__ import annotations

from social_recording.domain.graph import SocialContractError
from social_recording.domain.redaction import cap, redact_url
from social_recording.platforms.base import ExternalFetchError
from social_recording.recording.log_line import kv

__all__ = ["describe_error", "kv", "safe_url"]

_MAX_URL = 300
_MAX_DETAIL = 200


def safe_url(url: str) -> str:
    """A URL fit for logs: `user:password@` and secret-looking query values masked, length capped."""
    return cap(redact_url(url), _MAX_URL)


def describe_error(exc: BaseException) -> str:
    """Short reason text. Only our own error types contribute their message (their contract keeps
    secrets out); anything else is named by class only, since a foreign message (an httpx error
    with a query string, say) may carry a provider key."""
    if isinstance(exc, ExternalFetchError | SocialContractError):
        text = f"{type(exc).__name__}: {exc}"
    else:
        text = type(exc).__name__
    return text if len(text) <= _MAX_DETAIL else text[:_MAX_DETAIL] + "..."
