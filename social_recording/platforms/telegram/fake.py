"""Fake t.me: the public preview page of a chat, as t.me serves it (HTML, no key).

Kinds by the readable rule of `telegram_kind`. Outcomes: not_found -> the generic "Contact @name"
page (t.me answers 200 for a username nobody holds); blocked (and every invite link) -> the page of a
private chat ("Join Channel" / "Join Group"); error / flaky:N -> 503; rate_limited and
credit_exhausted -> 429 with `retry-after` (t.me has no quota).
"""

from __future__ import annotations

import html
from urllib.parse import unquote

import httpx

from social_recording.domain.urls import CanonicalUrl
from social_recording.platforms.telegram.preview_page import chat_page, not_found_page
from social_recording.platforms.telegram.spec import (
    TELEGRAM_NON_CHAT_PATHS,
    TELEGRAM_PRIVATE_PATHS,
    TELEGRAM_VENUE_PREFIXES,
)
from social_recording.sandbox import fake_api as api
from social_recording.sandbox.fake_api import fake_content as fake

TELEGRAM_HOSTS = frozenset({"t.me", "www.t.me", "telegram.me", "telegram.dog"})


def telegram_kind(name: str) -> str:
    """channel / group / user / bot for a public username on the sandbox's Telegram. Readable rule so
    scenario authors can choose: a name ending in "bot" is a bot; one containing "chat", "group",
    "community" or "talk" is a group; otherwise 4 in 5 are channels and 1 in 5 are users (by hash)."""
    low = name.lower()
    if low.endswith("bot"):
        return "bot"
    if any(word in low for word in ("chat", "group", "community", "talk")):
        return "group"
    return "user" if api.Det("tg", low).chance("user", 1, 5) else "channel"


def _spaced(n: int) -> str:
    """Telegram's thousands separator is a space: 12 345."""
    return f"{n:,}".replace(",", " ")


def telegram_page(name: str, *, kind: str | None = None, private_invite: bool = False) -> str:
    """The t.me/<name> preview page of a public chat (`kind` channel/group/user/bot), or with
    `private_invite` the page of a chat only an invite opens ("Join Channel"/"Join Group")."""
    det = api.Det("tg", name.lower())
    kind = kind or telegram_kind(name)
    e = html.escape
    title = f"{det.pick('adj', fake.ADJ).title()} {det.pick('noun', fake.NOUN).title()} {'Bot' if kind == 'bot' else 'Official'}"
    site = fake.site_for(name)
    if kind == "channel":
        extra = f"{_spaced(det.skewed('subs', 3_000_000))} subscribers"
    elif kind == "group":
        members = det.skewed("members", 500_000)
        extra = f"{_spaced(members)} members, {_spaced(det.num('online', 0, max(1, members // 20)))} online"
    else:
        extra = f"@{name}"
    return chat_page(
        name,
        kind,
        title=title,
        og_description=f"{fake.sentence(det, 'desc').capitalize()}. Website: {site}",
        image=f"https://cdn4.cdn-telegram.org/file/{det.b64url('photo', 86)}.jpg",
        extras_html=(e(extra),),
        description_html=(f"{e(fake.sentence(det, 'desc').capitalize())}.<br/>Website: "
                          f"<a href=\"{e(site)}\" target=\"_blank\" rel=\"noopener\">{e(site.removeprefix('https://'))}</a>"),
        private_invite=private_invite,
    ).html()


def telegram_not_found_page(name: str) -> str:
    """What t.me answers for a username nobody holds (`preview_page.not_found_page`)."""
    return not_found_page(name).html()


_FAILURES = api.FailureLadder(
    error=lambda: api.html_reply(503, api.plain_error_page(503, "Service Temporarily Unavailable")),
    rate_limited=lambda: api.html_reply(429, api.plain_error_page(429, "Too Many Requests"), {"retry-after": "30"}),
)
"""t.me has no credits: a spent quota reads as its 429."""


class TelegramProvider(api.TargetProvider):
    service = "telegram"
    hosts = TELEGRAM_HOSTS

    def describe(self, request: httpx.Request) -> api.Call:
        segs = [unquote(s) for s in request.url.path.split("/") if s]
        if not segs:
            return api.Call(self.service, "telegram:", args={"root": True})
        invite = segs[0].startswith("+") or segs[0].lower() == "joinchat"
        if invite:
            name = segs[0] if segs[0].startswith("+") or len(segs) < 2 else f"joinchat/{segs[1]}"
        else:
            name = segs[1] if segs[0].lower() in ("s", "boost") and len(segs) >= 2 else segs[0]
        subject = f"telegram:{name}"
        return api.Call(self.service, subject, [self._outcomes.target_for(subject)], args={"name": name, "invite": invite})

    def answer(self, request: httpx.Request, call: api.Call) -> api.Reply:
        if call.args.get("root"):
            return api.html_reply(302, "", {"location": "https://telegram.org/"})
        name, invite = call.args["name"], call.args["invite"]
        effect = self._outcomes.effective(call.targets[0])
        failed = _FAILURES.reply(effect)
        if failed is not None:
            return failed
        if effect is api.OutcomeKind.NOT_FOUND:
            return api.html_reply(200, telegram_not_found_page(name))
        if invite or effect is api.OutcomeKind.BLOCKED:
            kind = "group" if "group" in name.lower() or "chat" in name.lower() else "channel"
            return api.html_reply(200, telegram_page(name, kind=kind, private_invite=True))
        return api.html_reply(200, telegram_page(name))

    def too_many_requests(self, request: httpx.Request, window: api.RateWindow) -> api.Reply:
        return api.html_reply(429, api.plain_error_page(429, "Too Many Requests"), {"retry-after": str(window.reset_after_s)})


def make_fakes(world: api.FakeWorld) -> list[api.Provider]:
    return [TelegramProvider(world.outcomes)]


def subjects(parsed: CanonicalUrl) -> list[str]:
    """The chat whose t.me page the generator reads for `parsed` ([] for invites and t.me's own pages)."""
    seg = parsed.segments
    if not seg or seg[0].startswith("+") or seg[0].lower() in TELEGRAM_PRIVATE_PATHS | TELEGRAM_NON_CHAT_PATHS:
        return []
    name = seg[1] if seg[0].lower() in TELEGRAM_VENUE_PREFIXES and len(seg) >= 2 else seg[0]
    return [f"telegram:{name}"]


def unservable(kind: api.OutcomeKind, parsed: CanonicalUrl) -> str | None:
    if kind is api.OutcomeKind.CREDIT_EXHAUSTED:
        return "t.me pages have no quota: the sandbox answers 429, which reads as a rate limit. Use `rate_limited`"
    return None
