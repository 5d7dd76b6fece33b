"""Log-safe text: URLs without credentials, short error descriptions, key=value lines."""

from __future__ import annotations

import re

from social_recording.domain.graph import SocialContractError
from social_recording.domain.urls import redact_url
from social_recording.platforms.base import ExternalFetchError

_USERINFO = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@?#]*@")
_MAX_URL = 300
_MAX_DETAIL = 200


def safe_url(url: str) -> str:
    """A URL fit for logs: `user:password@` and secret-looking query values masked, length capped."""
    cleaned = redact_url(_USERINFO.sub(r"\1***@", url))
    return cleaned if len(cleaned) <= _MAX_URL else cleaned[:_MAX_URL] + "..."


def describe_error(exc: BaseException) -> str:
    """Short reason text. Only our own error types contribute their message (their contract keeps
    secrets out); anything else is named by class only, since a foreign message (an httpx error
    with a query string, say) may carry a provider key."""
    if isinstance(exc, ExternalFetchError | SocialContractError):
        text = f"{type(exc).__name__}: {exc}"
    else:
        text = type(exc).__name__
    return text if len(text) <= _MAX_DETAIL else text[:_MAX_DETAIL] + "..."


def kv(**fields: object) -> str:
    """One structured line: `key=value` pairs; values with spaces are quoted."""
    parts = []
    for key, value in fields.items():
        text = "" if value is None else str(value)
        if not text or any(c.isspace() for c in text) or '"' in text:
            text = '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
        parts.append(f"{key}={text}")
    return " ".join(parts)
