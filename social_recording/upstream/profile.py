"""TokenProfileReader: the single place a URL enters the system and is transformed (seed 003, DESIGN §3).

Everything after this reader only *reads* URLs (`parse_canonical`, `platform_of`); nothing downstream
ever "fixes" one. So every transformation happens here, once, in this order:

1. take the tracker's four raw fields (`website`, `twitter`, `telegram`, `discord`);
2. drop junk placeholders ("none", "null", "TBA", "-", "N/A", "", "0", …), values with whitespace
   inside, and anything that is not an http(s) URL after trimming — each with a logged reason;
   one exception, chosen deliberately: a bare `@handle` in the `twitter` field (a valid X handle,
   1–15 of [A-Za-z0-9_]) becomes `https://x.com/<handle>` — the field can only mean that account.
   A bare word without `@` ("soon", "foo") is dropped: it is as likely a placeholder as a handle;
3. resolve shortlinks (the resolver returns a NON-canonical location — seed 003 §2);
4. `to_canonical` (ValueError -> dropped with a warning);
5. de-duplicate, keeping the first occurrence's position (field order above).

A token without an image is not recorded at all (seed 000 §1.4: `image` is required on a token, and
the reader returns None so the engine has no branch for it). The image URL is a display URL and is
kept exactly as received, never canonicalised (seed 003 §7).

Bad URL values never raise: one broken link must not cost the token its other links. Tracker
failures (`TrackerError`) do propagate — "lookup failed" must stay distinguishable from "token has
no links" (seed 004 §5.2), and the caller decides what a failed lookup means.
"""

from __future__ import annotations

import logging
import re
from typing import Protocol

from social_recording.domain.models import TokenProfile
from social_recording.domain.urls import to_canonical
from social_recording.upstream.tracker import TokenInfo

log = logging.getLogger(__name__)

SOCIAL_FIELDS: tuple[str, ...] = ("website", "twitter", "telegram", "discord")
"""The tracker fields that carry social links, in the order their URLs appear in a profile."""

JUNK_VALUES = frozenset(
    {"none", "null", "nil", "undefined", "tba", "tbd", "-", "--", "n/a", "na", "0", "", "soon"}
)
"""Placeholders the tracker passes through from token metadata, compared case-insensitively after trim."""

_TWITTER_HANDLE = re.compile(r"@([A-Za-z0-9_]{1,15})")
_HTTP_PREFIX = re.compile(r"https?://", re.IGNORECASE)
_LOG_CHARS = 200


class TokenInfoSource(Protocol):
    """What the reader needs from the tracker client."""

    def token_by_address(self, address: str) -> TokenInfo | None: ...


class UrlResolver(Protocol):
    """What the reader needs from the shortlink resolver: `resolve` returns its input for a URL that is
    not a shortlink, and raises ValueError (ShortlinkError) when a shortlink cannot be resolved."""

    def resolve(self, url: str) -> str: ...


def _show(value: str) -> str:
    text = repr(value)
    return text if len(text) <= _LOG_CHARS else text[:_LOG_CHARS] + "…'"


def junk_reason(value: str) -> str | None:
    """Why a trimmed raw value is not a usable URL, or None when it may be one."""
    if value.casefold() in JUNK_VALUES:
        return "placeholder value"
    if any(c.isspace() for c in value):
        return "contains whitespace"
    if not _HTTP_PREFIX.match(value):
        return "not an http(s) URL"
    return None


def _has_image(image_url: str | None) -> bool:
    if image_url is None:
        return False
    trimmed = image_url.strip()
    return bool(trimmed) and trimmed.casefold() not in JUNK_VALUES


class TokenProfileReader:
    """Turns the tracker's token info into a TokenProfile with canonical, de-duplicated URLs."""

    def __init__(self, tracker: TokenInfoSource, resolver: UrlResolver) -> None:
        self._tracker = tracker
        self._resolver = resolver

    def read(self, address: str) -> TokenProfile | None:
        """Fetch and transform one token; None when the tracker does not know it or it has no image.
        Raises TrackerError when the tracker lookup finally fails."""
        info = self._tracker.token_by_address(address)
        if info is None:
            log.info("token %s: unknown to the tracker; not recorded", address)
            return None
        return self.read_info(info)

    def read_info(self, info: TokenInfo) -> TokenProfile | None:
        """The same transformation from an already fetched TokenInfo (batch lookups)."""
        if not _has_image(info.image_url):
            log.info(
                "token %s: no image (imageUrl=%s); not recorded (seed 000 §1.4)",
                info.address,
                _show(info.image_url or ""),
            )
            return None
        urls: list[str] = []
        seen: set[str] = set()
        for field in SOCIAL_FIELDS:
            raw = getattr(info, field)
            if raw is None:
                continue
            canonical = self._entry_url(info.address, field, raw)
            if canonical is None:
                continue
            if canonical in seen:
                log.debug(
                    "token %s: %s %s duplicates an earlier link; dropped", info.address, field, _show(raw)
                )
                continue
            seen.add(canonical)
            urls.append(canonical)
        return TokenProfile(
            address=info.address,
            symbol=info.symbol,
            image=info.image_url,
            first_transfer_at=info.first_transfer_at,
            urls=urls,
        )

    def _entry_url(self, address: str, field: str, raw: str) -> str | None:
        """One raw field value -> its canonical URL, or None (logged) when it must be dropped."""
        value = raw.strip()
        if field == "twitter":
            handle = _TWITTER_HANDLE.fullmatch(value)
            if handle:
                value = f"https://x.com/{handle.group(1)}"
        reason = junk_reason(value)
        if reason is not None:
            log.info("token %s: %s value %s dropped: %s", address, field, _show(raw), reason)
            return None
        try:
            resolved = self._resolver.resolve(value)
        except ValueError as exc:
            log.warning("token %s: %s value %s dropped: %s", address, field, _show(raw), exc)
            return None
        try:
            return to_canonical(resolved)
        except ValueError as exc:
            log.warning(
                "token %s: %s value %s (resolved %s) dropped: not canonicalisable: %s",
                address,
                field,
                _show(raw),
                _show(resolved),
                exc,
            )
            return None
