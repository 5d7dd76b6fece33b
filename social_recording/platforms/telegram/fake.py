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


_TG_HEAD_TAIL = """    <meta property="twitter:site" content="@Telegram">
    <meta property="al:ios:app_store_id" content="686449807">
    <meta property="al:ios:app_name" content="Telegram Messenger">
    <meta property="al:ios:url" content="tg://resolve?domain={name}">
    <meta property="al:android:url" content="tg://resolve?domain={name}">
    <meta property="al:android:app_name" content="Telegram">
    <meta property="al:android:package" content="org.telegram.messenger">
    <meta name="twitter:card" content="summary">
    <meta name="twitter:site" content="@Telegram">
    <meta name="twitter:description" content="{description}">
    <meta name="robots" content="noindex, nofollow">
    <link rel="icon" type="image/svg+xml" href="//telegram.org/img/website_icon.svg?4">
    <link rel="apple-touch-icon" sizes="180x180" href="//telegram.org/img/apple-touch-icon.png">
    <link rel="icon" type="image/png" sizes="32x32" href="//telegram.org/img/favicon-32x32.png">
    <link rel="icon" type="image/png" sizes="16x16" href="//telegram.org/img/favicon-16x16.png">
    <link rel="alternate icon" href="//telegram.org/img/favicon.ico" type="image/x-icon" />
    <link href="//telegram.org/css/font-roboto.css?1" rel="stylesheet" type="text/css">
    <link href="//telegram.org/css/bootstrap.min.css?3" rel="stylesheet">
    <link href="//telegram.org/css/telegram.css?240" rel="stylesheet" media="screen">
    <script>window.matchMedia&&window.matchMedia('(prefers-color-scheme: dark)').matches&&document.documentElement&&document.documentElement.classList&&document.documentElement.classList.add('theme_dark');</script>
  </head>
  <body class="no_transition">
    <div class="tgme_background_wrap">
      <canvas id="tgme_background" class="tgme_background default" width="50" height="50" data-colors="dbddbb,6ba587,d5d88d,88b884"></canvas>
      <div class="tgme_background_pattern default"></div>
    </div>
    <div class="tgme_page_wrap">
      <div class="tgme_head_wrap">
        <div class="tgme_head">
          <a href="//telegram.org/" class="tgme_head_brand">
            <i class="tgme_logo"></i>
          </a>
          <a class="tgme_head_dl_button" href="//telegram.org/dl?tme={dl}">
            Download
          </a>
        </div>
      </div>
      <a class="tgme_head_dl_button" href="//telegram.org/dl?tme={dl}">
        Don't have <strong>Telegram</strong> yet? Try it now!<i class="tgme_icon_arrow"></i>
      </a>
      <div class="tgme_body_wrap">
        <div class="tgme_page">
"""

_TG_FOOT = """        </div>
      </div>
    </div>
    <div id="tgme_frame_cont"></div>
    <script src="//telegram.org/js/tgwallpaper.min.js?3"></script>
    <script type="text/javascript">
var protoUrl = "tg:\\/\\/resolve?domain={name}";
if (false) {{
  var iframeContEl = document.getElementById('tgme_frame_cont') || document.body;
  var iframeEl = document.createElement('iframe');
  iframeContEl.appendChild(iframeEl);
  var pageHidden = false;
  window.addEventListener('pagehide', function () {{ pageHidden = true; }}, false);
  window.addEventListener('blur', function () {{ pageHidden = true; }}, false);
  if (iframeEl !== null) {{ iframeEl.src = protoUrl; }}
}}
TWallpaper.init(document.getElementById('tgme_background'));
    </script>
  </body>
</html>
"""


def _tg_head(name: str, title_tag: str, og_title: str, description: str, image: str) -> str:
    e = html.escape
    return (
        "<!DOCTYPE html>\n<html>\n  <head>\n    <meta charset=\"utf-8\">\n"
        f"    <title>{e(title_tag)}</title>\n"
        "    <meta name=\"viewport\" content=\"width=device-width, initial-scale=1.0, minimum-scale=1.0, "
        "maximum-scale=1.0, user-scalable=no\" />\n"
        f"    <meta property=\"og:title\" content=\"{e(og_title)}\">\n"
        f"    <meta property=\"og:image\" content=\"{e(image)}\">\n"
        "    <meta property=\"og:site_name\" content=\"Telegram\">\n"
        f"    <meta property=\"og:description\" content=\"{e(description)}\">\n"
        f"    <meta property=\"twitter:title\" content=\"{e(og_title)}\">\n"
        f"    <meta property=\"twitter:image\" content=\"{e(image)}\">\n"
        + _TG_HEAD_TAIL.format(name=e(name), description=e(description), dl=e(name))
    )


def telegram_page(name: str, *, kind: str | None = None, private_invite: bool = False) -> str:
    """The t.me/<name> preview page of a public chat (`kind` channel/group/user/bot), or with
    `private_invite` the page of a chat only an invite opens ("Join Channel"/"Join Group")."""
    det = api.Det("tg", name.lower())
    kind = kind or telegram_kind(name)
    e = html.escape
    title = f"{det.pick('adj', fake.ADJ).title()} {det.pick('noun', fake.NOUN).title()} {'Bot' if kind == 'bot' else 'Official'}"
    site = fake.site_for(name)
    description = f"{fake.sentence(det, 'desc').capitalize()}. Website: {site}"
    image = f"https://cdn4.cdn-telegram.org/file/{det.b64url('photo', 86)}.jpg"
    if kind == "channel":
        extra = f"{_spaced(det.skewed('subs', 3_000_000))} subscribers"
    elif kind == "group":
        members = det.skewed("members", 500_000)
        extra = f"{_spaced(members)} members, {_spaced(det.num('online', 0, max(1, members // 20)))} online"
    else:
        extra = f"@{name}"
    body_description = (f"{e(fake.sentence(det, 'desc').capitalize())}.<br/>Website: "
                        f"<a href=\"{e(site)}\" target=\"_blank\" rel=\"noopener\">{e(site.removeprefix('https://'))}</a>")
    resolve = f"tg://resolve?domain={e(name)}"
    if private_invite:
        button = "Join Group" if kind == "group" else "Join Channel"
        actions = f"""          <div class="tgme_page_action">
            <a class="tgme_action_button_new shine" href="{resolve}">{button}</a>
          </div>
          <div class="tgme_page_additional">
            If you have <strong>Telegram</strong>, you can view and join <br><strong>{e(title)}</strong> right away.
          </div>
"""
    elif kind in ("channel", "group"):
        actions = f"""          <div class="tgme_page_action">
            <a class="tgme_action_button_new shine" href="{resolve}">View in Telegram</a>
          </div>
          <div class="tgme_page_additional">
            If you have <strong>Telegram</strong>, you can view and join <br><strong>{e(title)}</strong> right away.
          </div>
"""
        if kind == "channel":
            actions += f"""          <div class="tgme_page_context_link_wrap">
            <a class="tgme_page_context_link" href="/s/{e(name)}">Preview channel</a>
          </div>
"""
    else:
        actions = f"""          <div class="tgme_page_action">
            <a class="tgme_action_button_new shine" href="{resolve}">Send Message</a>
          </div>
          <div class="tgme_page_additional">
            If you have <strong>Telegram</strong>, you can contact <a class="tgme_username_link" href="{resolve}">{e(title)}</a> right away.
          </div>
"""
    title_tag = f"Telegram: {'View' if kind in ('channel', 'group') and not private_invite else 'Contact'} @{name}"
    page = f"""          <div class="tgme_page_photo">
            <a href="{resolve}"><img class="tgme_page_photo_image" src="{e(image)}"></a>
          </div>
          <div class="tgme_page_title" dir="auto"><span dir="auto">{e(title)}</span></div>
          <div class="tgme_page_extra">
            {e(extra)}
          </div>
          <div class="tgme_page_description" dir="auto">{body_description}</div>
{actions}"""
    return _tg_head(name, title_tag, title, description, image) + page + _TG_FOOT.format(name=e(name))


def telegram_not_found_page(name: str) -> str:
    """What t.me answers for a username nobody holds: a generic "Contact @name" page, no title block."""
    e = html.escape
    resolve = f"tg://resolve?domain={e(name)}"
    page = f"""          <div class="tgme_page_photo">
            <a href="{resolve}"><i class="tgme_page_photo_image bgcolor0" data-content="{e(name[:1].upper())}"></i></a>
          </div>
          <div class="tgme_page_action">
            <a class="tgme_action_button_new shine" href="{resolve}">Send Message</a>
          </div>
          <div class="tgme_page_additional">
            If you have <strong>Telegram</strong>, you can contact <a class="tgme_username_link" href="{resolve}">@{e(name)}</a> right away.
          </div>
"""
    return (_tg_head(name, f"Telegram: Contact @{name}", f"Telegram: Contact @{name}",
                     f"You can contact @{name} right away.", "https://telegram.org/img/t_logo.png")
            + page + _TG_FOOT.format(name=e(name)))


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
