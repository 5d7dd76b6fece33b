"""Telegram generator: the public preview page `https://t.me/<name>` (free, HTML, no key).

URL shapes, requests, status mapping and the decisions behind them: social_recording/platforms/telegram/README.md."""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass
from urllib.parse import quote

import httpx
from selectolax.lexbor import LexborHTMLParser
from selectolax.lexbor import LexborNode as Node

from social_recording.domain.graph import GraphGroup, SocialGraph, SocialObject
from social_recording.domain.urls import CanonicalUrl, Platform
from social_recording.outbound.bounds import MAX_NUMBER_CHARS, OverLimit, check_page
from social_recording.platforms import shaping
from social_recording.platforms.base import ErrorCode, GenerateContext, GenerateResult
from social_recording.platforms.http import HttpPolicy, HttpResponse, ProviderHttp
from social_recording.platforms.telegram import TELEGRAM
from social_recording.platforms.telegram.spec import (
    TELEGRAM_NON_CHAT_PATHS,
    TELEGRAM_PRIVATE_PATHS,
    TELEGRAM_USERNAME_RE,
    TELEGRAM_VENUE_PREFIXES,
)

PAGE_BASE = "https://t.me"
SERVICE = TELEGRAM.name

USERNAME = TELEGRAM_USERNAME_RE
"""Public usernames (the canonicaliser's rule, defined once)."""

_ZERO_CALL_SUBTYPES = {"share": "share", "addstickers": "stickers", "addemoji": "stickers"}
"""The zero-call subtype of t.me's own pages (TELEGRAM_NON_CHAT_PATHS) that are not "page"."""
_NOT_FOUND_TITLE = "telegram: contact @"
_SPACES = re.compile(r"[\s\u00a0\u202f\u2009,]")
_COUNT = re.compile(
    r"(\d[\d\s\u00a0\u202f\u2009,]*)\s*(subscribers?|members?|online|monthly users?)", re.IGNORECASE
)


# ---------------------------------------------------------------- routing


@dataclass(frozen=True)
class _Page:
    name: str


def _route(parsed: CanonicalUrl) -> _Page | shaping.ZeroCallShape | shaping.NoCallShape:
    seg = parsed.segments
    if not seg:
        return shaping.ZeroCallShape("page")
    first = seg[0]
    lowered = first.lower()
    if first.startswith("+") or lowered in TELEGRAM_PRIVATE_PATHS:
        return shaping.NoCallShape(
            ErrorCode.TARGET_BLOCKED,
            "private Telegram link (invite or private chat) cannot be resolved publicly",
        )
    if lowered in TELEGRAM_NON_CHAT_PATHS:
        return shaping.ZeroCallShape(_ZERO_CALL_SUBTYPES.get(lowered, "page"))
    name = first
    if lowered in TELEGRAM_VENUE_PREFIXES:
        if len(seg) < 2:
            return shaping.ZeroCallShape("page")
        name = seg[1]
    if not USERNAME.match(name):
        return shaping.unsupported_shape(f"{name!r} cannot be a Telegram username")
    return _Page(name)


# ---------------------------------------------------------------- HTML reading


@dataclass(frozen=True)
class _Preview:
    """The handful of nodes a t.me preview page is made of."""

    og: dict[str, str]
    title: str | None
    description: str | None
    description_hrefs: list[str]
    extras: list[str]
    buttons: list[str]
    photo: str | None


def _text(node: Node) -> str:
    """A node's text: `<br>` as a line break, runs of blanks folded, empty lines dropped (the node is
    changed: read each node once)."""
    for br in node.css("br"):
        br.replace_with("\n")
    lines = [" ".join(line.split()) for line in node.text(deep=True).split("\n")]
    return "\n".join(line for line in lines if line).strip()


def _read_preview(html: str) -> _Preview:
    """The preview nodes, read by an HTML5 parser (lexbor, through selectolax): malformed markup (an
    unclosed `<p>`, stray end tags) is repaired the way a browser repairs it, so one broken element
    cannot swallow the rest of the page."""
    tree = LexborHTMLParser(html)
    og: dict[str, str] = {}
    for meta in tree.css("meta"):
        prop = meta.attributes.get("property") or meta.attributes.get("name") or ""
        if prop.startswith("og:") and prop not in og:
            og[prop] = meta.attributes.get("content") or ""
    title = tree.css_first("div.tgme_page_title")
    description = tree.css_first("div.tgme_page_description")
    hrefs = [href for a in description.css("a[href]") if (href := a.attributes.get("href"))] if description else []
    buttons = [_text(a) for a in tree.css("a.tgme_action_button_new, a.tgme_page_context_link")]
    photo = next((src for img in tree.css("img.tgme_page_photo_image") if (src := img.attributes.get("src"))), None)
    return _Preview(
        og=og,
        title=_text(title) if title is not None else None,
        description=_text(description) if description is not None else None,
        description_hrefs=hrefs,
        extras=[_text(div) for div in tree.css("div.tgme_page_extra")],
        buttons=[b for b in buttons if b],
        photo=photo,
    )


def _number(raw: str) -> float | None:
    """A count's digits as a number; None past the bound of a number (`outbound.bounds`)."""
    digits = _SPACES.sub("", raw)
    return float(digits) if digits.isdigit() and len(digits) <= MAX_NUMBER_CHARS else None


def _counts(extra: str | None) -> dict[str, float]:
    """Counts of an extra line: "1 234 subscribers", "5 678 members, 90 online", "12 345 monthly users"."""
    out: dict[str, float] = {}
    for match in _COUNT.finditer(extra or ""):
        unit = match.group(2).lower()
        if unit.startswith("subscriber"):
            name = "subscribers"
        elif unit.startswith("member"):
            name = "members"
        elif unit.startswith("monthly"):
            name = "monthly_users"
        else:
            name = "online"
        number = _number(match.group(1))
        if number is not None and name not in out:
            out[name] = number
    return out


# ---------------------------------------------------------------- generator


class TelegramGenerator(shaping.PerCallHttpGenerator[_Page]):
    """canonical t.me URL -> venue (channel / group / user / bot) from the public preview page."""

    platform: Platform = Platform.TELEGRAM
    default_base_url = PAGE_BASE

    def __init__(
        self,
        secret: None = None,
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        page_base: str = PAGE_BASE,
    ) -> None:
        """`secret` is always None (t.me needs no key); the slot lets the shared `make` build it."""
        super().__init__(secret, transport=transport, sleep=sleep, api_base=page_base)

    def route(self, parsed: CanonicalUrl) -> _Page | shaping.ZeroCallShape | shaping.NoCallShape:
        return _route(parsed)

    def fetch(self, parsed: CanonicalUrl, target: _Page, ctx: GenerateContext) -> GenerateResult:
        with closing(
            self._client(HttpPolicy.free(SERVICE), default_headers={"Accept-Language": "en", "Accept": "text/html"})
        ) as http:
            response = http.get(f"{self._base_url}/{quote(target.name, safe='')}")
            _STATUS.check(response, http, target.name)
            graph = _venue_graph(target.name, response, http)
        return shaping.finish(graph, requests=http.requests_made)


_STATUS = shaping.StatusTable(
    rules=(
        shaping.StatusRule(ErrorCode.NOT_FOUND, "telegram: @{what} not found (HTTP {status})", frozenset({404, 410})),
        shaping.StatusRule(ErrorCode.RATE_LIMITED, "telegram: rate limited (HTTP 429)", frozenset({429})),
    ),
    fallback="telegram: HTTP {status} for @{what}",
)


def _kind(name: str, page: _Preview, extra: str | None, http: ProviderHttp) -> str:
    buttons = [b.lower() for b in page.buttons]
    extra_l = (extra or "").lower()
    if "subscriber" in extra_l or "preview channel" in buttons:
        return "channel"
    if "member" in extra_l:
        return "group"
    is_bot_name = name.lower().endswith("bot")
    if "start bot" in buttons:
        return "bot"
    if "send message" in buttons or extra_l.startswith("@"):
        return "bot" if is_bot_name else "user"
    if "view in telegram" in buttons:
        return "group"
    raise shaping.fetch_error(ErrorCode.UPSTREAM, f"telegram: unrecognised preview page for @{name}", http)


def _venue_graph(name: str, response: HttpResponse, http: ProviderHttp) -> SocialGraph:
    try:
        check_page(response.body)
    except OverLimit as exc:
        raise shaping.fetch_error(ErrorCode.UPSTREAM, f"telegram: page for @{name} refused: {exc}", http) from None
    page = _read_preview(response.text)
    if not page.og:
        raise shaping.fetch_error(
            ErrorCode.UPSTREAM, f"telegram: page for @{name} has no og: tags (not a preview page)", http
        )
    title = page.title
    og_title = page.og.get("og:title", "")
    buttons = [b.lower() for b in page.buttons]
    if any(b in ("join channel", "join group") for b in buttons):
        raise shaping.fetch_error(ErrorCode.TARGET_BLOCKED, f"telegram: @{name} is a private chat", http)
    if not title:
        if og_title.lower().startswith(_NOT_FOUND_TITLE):
            raise shaping.fetch_error(ErrorCode.NOT_FOUND, f"telegram: no chat with username @{name}", http)
        raise shaping.fetch_error(ErrorCode.UPSTREAM, f"telegram: page for @{name} has no title", http)
    extras = page.extras
    extra = extras[0] if extras else None
    kind = _kind(name, page, extra, http)
    description = page.description
    counts: dict[str, float] = {}
    for line in extras:
        for key, value in _counts(line).items():
            counts.setdefault(key, value)
    venue = SocialObject(
        platform=Platform.TELEGRAM,
        platform_key=f"telegram:{name.lower()}",
        subtype=kind,
        fields={
            "username": name,
            "title": title,
            "description": description,
            "extra": extra,
            "og_title": og_title or None,
            "og_description": page.og.get("og:description") or None,
        },
        outbound_urls=shaping.canonical_links([*page.description_hrefs, *shaping.urls_in_text(description)]),
        avatar_url=page.og.get("og:image") or page.photo,
        metrics=shaping.metrics(counts),
    )
    return SocialGraph(groups=[GraphGroup(ref=shaping.ROOT_REF, venue=venue)])


make_generator = TelegramGenerator.make
"""The Telegram generator for the registry (t.me needs no key)."""
