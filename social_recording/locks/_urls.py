"""Credential hygiene for lock URLs: a password never reaches a log line, an exception or a repr."""

from __future__ import annotations

import re
from urllib.parse import unquote

# userinfo password: scheme://[user]:PASSWORD@host. The password may hold ':' and even an unencoded
# '@' (the userinfo ends at the LAST '@' of the authority: the greedy match backtracks to it).
_USERINFO = re.compile(r"^(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/@:?#]*:)(?P<pw>[^/?#]*)@")
# redis-py also accepts ?password=... in the query string
_QUERY_PW = re.compile(r"(?i)(?P<head>[?&]password=)(?P<pw>[^&#]*)")


def _passwords(url: str) -> list[str]:
    found: list[str] = []
    m = _USERINFO.match(url)
    if m and m.group("pw"):
        found.append(m.group("pw"))
    found.extend(q.group("pw") for q in _QUERY_PW.finditer(url) if q.group("pw"))
    out: list[str] = []
    for pw in found:
        for variant in (pw, unquote(pw)):
            if variant and variant not in out:
                out.append(variant)
    return sorted(out, key=len, reverse=True)


def mask_url(url: str) -> str:
    """`redis://user:s3cret@host/0` -> `redis://user:***@host/0` (also `?password=`)."""
    masked = _USERINFO.sub(lambda m: f"{m.group('head')}***@" if m.group("pw") else m.group(0), url, count=1)
    return _QUERY_PW.sub(lambda m: f"{m.group('head')}***", masked)


def scrub(text: str, url: str | None) -> str:
    """Remove every password of `url` from `text` (an error message that may quote the URL)."""
    if url is None:
        return text
    text = text.replace(url, mask_url(url))
    for pw in _passwords(url):
        text = text.replace(pw, "***")
    return text
