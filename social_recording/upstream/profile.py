"""TokenProfileReader: the single place a URL enters the system and is transformed.

Everything after this reader only *reads* URLs (`parse_canonical`, `platform_of`); nothing downstream
ever "fixes" one. So every transformation happens here, once, in this order:

1. take the tracker's four raw fields (`website`, `twitter`, `telegram`, `discord`);
2. turn each trimmed value into an http(s) URL string, or drop it with a reason (`entry_url`):
   - junk placeholders ("none", "null", "TBA", "-", "N/A", "", "0", …) and values with whitespace
     inside are dropped;
   - `http://…` / `https://…` are taken as they are;
   - a scheme-less value whose first segment looks like a host (`www.site.io`, `x.com/user`,
     `telegram.me/chat`, `discord.gg/abc`; a dot, a TLD-like last label, no `@`) and a
     protocol-relative `//host/…` get `https://` in front: trackers pass links on like that, and
     `to_canonical` is strict about the scheme, so the entry (this reader) adds it, nobody else;
   - `@handle` means an account only where the field can mean nothing else: in `twitter` a valid
     X handle (1–15 of [A-Za-z0-9_]) becomes `https://x.com/<handle>`, in `telegram` a valid
     Telegram username (5–32 of [A-Za-z0-9_]) becomes `https://t.me/<name>`; elsewhere it is dropped;
   - a bare word ("soon", "foo", a discord "abc") is dropped: it is as likely a placeholder as a
     handle, and a bare word is not a Discord invite;
   - any other scheme (javascript:, ftp:, tg:, mailto:) and an e-mail address are dropped;
3. resolve shortlinks (the resolver returns a NON-canonical location). A resolution that fails for a
   transient reason (timeout, 5xx, 429, connection) does not drop the value: it is kept in
   `TokenProfile.unresolved` and resolved again later by the retry path (`resolve_value`), so a
   flaky shortener never costs a token its link;
4. `to_canonical` (ValueError -> dropped);
5. drop a URL whose host is a literal non-global IP (`http://192.168.1.1/admin`, `http://[::1]/`) or
   a `localhost` name: it would be sent to the paid web scanner and can only be an internal address.
   No DNS lookup here (only shortlinks are ever requested by the entry);
6. de-duplicate, keeping the first occurrence's position (field order above).

Every dropped value is logged (logger `social_recording.upstream.profile`; WARNING, or INFO for a
mere placeholder like "TBA") with the token,
the field, the value (truncated, secret-looking query values and passwords masked) and the reason,
and is listed in `TokenProfile.dropped` so the jobs can surface it: a real link that silently
disappears is a data loss nobody can see (QA finding). A duplicate is not a drop (its link is kept).

A token without an image is not recorded at all (`image` is required on a token, and
the reader returns None so the engine has no branch for it). The image URL is a display URL and is
kept exactly as received, never canonicalised (a display URL is fetched as is, never compared).

Bad URL values never raise: one broken link must not cost the token its other links. Tracker
failures (`TrackerError`) do propagate — "lookup failed" must stay distinguishable from "token has
no links", and the caller decides what a failed lookup means.
"""

from __future__ import annotations

import logging
import re
from typing import Protocol
from urllib.parse import urlsplit

from social_recording.domain.models import DroppedTrackerValue, TokenProfile, UnresolvedValue, utcnow
from social_recording.domain.redaction import cap, show
from social_recording.domain.redaction import redact_url as mask_secrets
from social_recording.domain.urls import to_canonical
from social_recording.outbound.guard import blocked_reason, literal_ip
from social_recording.upstream.tracker import TokenInfo

log = logging.getLogger(__name__)

SOCIAL_FIELDS: tuple[str, ...] = ("website", "twitter", "telegram", "discord")
"""The tracker fields that carry social links, in the order their URLs appear in a profile."""

JUNK_VALUES = frozenset(
    {"none", "null", "nil", "undefined", "tba", "tbd", "-", "--", "n/a", "na", "0", "", "soon"}
)
"""Placeholders the tracker passes through from token metadata, compared case-insensitively after trim."""

_X_HANDLE = re.compile(r"[A-Za-z0-9_]{1,15}")
_TELEGRAM_USERNAME = re.compile(r"[A-Za-z0-9_]{5,32}")
_HTTP_PREFIX = re.compile(r"https?://", re.IGNORECASE)
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
_PORT = re.compile(r"[0-9]{1,5}")
_TLD = re.compile(r"(?:xn--[a-z0-9\-]{1,59}|[^\W\d_]{2,63})", re.IGNORECASE)
_SHOW_CHARS = 160
_REASON_CHARS = 400


class TokenInfoSource(Protocol):
    """What the reader needs from the tracker client."""

    def token_by_address(self, address: str) -> TokenInfo | None: ...


class UrlResolver(Protocol):
    """What the reader needs from the shortlink resolver: `resolve` returns its input for a URL that is
    not a shortlink, and raises ValueError (ShortlinkError) when a shortlink cannot be resolved."""

    def resolve(self, url: str) -> str: ...


PLACEHOLDER_REASON = "placeholder value"


class DroppedValue(ValueError):
    """A raw field value that is not a usable URL, for good; the message is the reason (no secret)."""


class UnresolvedValueError(ValueError):
    """A raw value whose shortlink could not be resolved right now (timeout, 5xx, 429): keep it and
    try again later. The message is the reason (no secret)."""


def show_value(value: str) -> str:
    """A raw value fit for a log line or run metadata (a tracker field once held a signed link; it
    must not reach a log): secrets masked, then truncated, repr-quoted."""
    return show(value, _SHOW_CHARS)


def looks_like_host(segment: str) -> bool:
    """True for `host.tld` or `host.tld:port` (an IDN host too): at least two non-empty labels of
    letters, digits, `-` and `_` (no label starting or ending with `-`) and an alphabetic (or punycode)
    last label. No `@`, no spaces. Deliberately no TLD list: a miss only costs a drop with a reason."""
    host, sep, port = segment.rpartition(":") if ":" in segment else (segment, "", "")
    if sep and not _PORT.fullmatch(port):
        return False
    host = host.removesuffix(".")
    labels = host.split(".")
    if len(labels) < 2:
        return False
    for label in labels:
        if not label or len(label) > 63 or label[0] == "-" or label[-1] == "-":
            return False
        if not all(c.isalnum() or c in "-_" for c in label):
            return False
    return _TLD.fullmatch(labels[-1]) is not None


def _first_segment(value: str) -> str:
    end = len(value)
    for sep in "/?#\\":
        pos = value.find(sep)
        if pos != -1:
            end = min(end, pos)
    return value[:end]


def entry_url(field: str, value: str) -> str:
    """One trimmed raw `field` value -> an http(s) URL string (not canonical yet: shortlinks are still
    to be resolved). Raises DroppedValue with the reason when the value is not a usable link."""
    if value.casefold() in JUNK_VALUES:
        raise DroppedValue(PLACEHOLDER_REASON)
    if any(c.isspace() for c in value):
        raise DroppedValue("contains whitespace")
    if value.startswith("@"):
        return _account_url(field, value[1:])
    if _HTTP_PREFIX.match(value):
        return value
    if value.startswith("//"):
        if looks_like_host(_first_segment(value[2:])):
            return "https:" + value
        raise DroppedValue("protocol-relative value without a host name")
    first = _first_segment(value)
    if looks_like_host(first):
        return "https://" + value
    if "@" in first and looks_like_host(first.rpartition("@")[2]):
        raise DroppedValue("an e-mail address, not a link")
    scheme = _SCHEME.match(value)
    if scheme is not None:
        name = scheme.group(1)[:20].lower()
        if name in ("http", "https"):
            raise DroppedValue(f"malformed {name} URL (expected '//' after '{name}:')")
        raise DroppedValue(f"not an http(s) URL (scheme {name!r})")
    if field == "discord":
        raise DroppedValue("a bare word is not a Discord invite (expected discord.gg/<code>)")
    if field == "twitter":
        raise DroppedValue("a bare word is not an X handle (expected @handle or an x.com link)")
    raise DroppedValue("not an http(s) URL and does not start with a host name")


def _account_url(field: str, name: str) -> str:
    """`@name`: an account only in the field that can mean nothing else."""
    if field == "twitter":
        if _X_HANDLE.fullmatch(name):
            return f"https://x.com/{name}"
        raise DroppedValue("not a valid X handle (@ and 1-15 of A-Z a-z 0-9 _)")
    if field == "telegram":
        if _TELEGRAM_USERNAME.fullmatch(name):
            return f"https://t.me/{name}"
        raise DroppedValue("not a valid Telegram username (@ and 5-32 of A-Z a-z 0-9 _)")
    raise DroppedValue(f"a bare @name names no site in the {field} field")


def internal_host_reason(url: str) -> str | None:
    """Why an (already canonical) URL points at an internal host, or None. Literal IPs are checked with
    the shortlink resolver's SSRF rule; `localhost` names are loopback by definition (RFC 6761).
    Never resolves a name."""
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return None
    if not host:
        return None
    ip = literal_ip(host)
    if ip is not None:
        reason = blocked_reason(ip)
        return None if reason is None else f"host is a literal {reason}"
    if host == "localhost" or host.endswith(".localhost"):
        return f"host {host!r} is a local name"
    return None


def _short_reason(text: str) -> str:
    return cap(mask_secrets(text), _REASON_CHARS)


def dropped_value(field: str, raw: str, reason: str) -> DroppedTrackerValue:
    """The typed record of a refused value (secrets masked, value truncated)."""
    reason = _short_reason(reason)
    return DroppedTrackerValue(field=field, shown=show_value(raw), reason=reason,
                               placeholder=reason == PLACEHOLDER_REASON)


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
                "token %s: no image (imageUrl=%s); not recorded (a token needs an image)",
                info.address,
                show_value(info.image_url or ""),
            )
            return None
        urls: list[str] = []
        dropped: list[DroppedTrackerValue] = []
        unresolved: list[UnresolvedValue] = []
        seen: set[str] = set()
        now = utcnow()
        for field in SOCIAL_FIELDS:
            raw = getattr(info, field)
            if raw is None:
                continue
            try:
                canonical = self.resolve_value(field, raw)
            except UnresolvedValueError as exc:
                reason = _short_reason(str(exc))
                log.warning("token %s: %s value %s kept for a later retry: %s", info.address, field,
                            show_value(raw), reason)
                unresolved.append(UnresolvedValue(field=field, value=raw.strip(), reason=reason, attempts=1,
                                                  checked_at=now))
                continue
            except DroppedValue as exc:
                item = dropped_value(field, raw, str(exc))
                # A placeholder ("TBA", "-", "none") is expected noise: INFO. Anything that looked like
                # a link and was refused is a possible data loss: WARNING. Both are listed in `dropped`.
                log.log(logging.INFO if item.placeholder else logging.WARNING, "token %s: %s value %s dropped: %s",
                        info.address, field, item.shown, item.reason)
                dropped.append(item)
                continue
            if canonical in seen:
                log.debug(
                    "token %s: %s %s duplicates an earlier link; kept once",
                    info.address,
                    field,
                    show_value(raw),
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
            dropped=tuple(dropped),
            unresolved=tuple(unresolved),
        )

    def resolve_value(self, field: str, raw: str) -> str:
        """One raw `field` value -> its canonical URL. Raises DroppedValue (for good, with the reason)
        or UnresolvedValueError (a transient shortlink failure: keep the value and retry later)."""
        return self._canonical(field, raw)

    def _canonical(self, field: str, raw: str) -> str:
        """One raw field value -> its canonical URL; DroppedValue with the reason otherwise."""
        url = entry_url(field, raw.strip())
        try:
            resolved = self._resolver.resolve(url)
        except ValueError as exc:
            if getattr(exc, "transient", False):
                raise UnresolvedValueError(str(exc)) from None
            raise DroppedValue(str(exc)) from None
        try:
            canonical = to_canonical(resolved)
        except ValueError as exc:
            shown = "" if resolved == url else f" (resolved to {show_value(resolved)})"
            raise DroppedValue(f"not canonicalisable{shown}: {exc}") from None
        internal = internal_host_reason(canonical)
        if internal is not None:
            raise DroppedValue(f"{internal}; never fetched or scanned")
        return canonical
