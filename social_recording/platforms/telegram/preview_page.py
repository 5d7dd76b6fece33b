"""A t.me preview page rendered from a few fields, its boilerplate written once.

The sandbox's fake t.me (`fake.py`) renders every chat with it, and the generator's tests render each
written case with it (channel, group, user, bot, not found, private chat, a page of no known kind), so
what the generator reads is the same markup in both. The markup follows what t.me serves; the real
recorded pages in fixtures/ keep the generator honest about it (docs/architecture.md, "Platforms").
"""

from __future__ import annotations

import html
from dataclasses import dataclass

_HEAD_TAIL = """    <meta property="twitter:site" content="@Telegram">
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
          <a class="tgme_head_dl_button" href="//telegram.org/dl?tme={name}">
            Download
          </a>
        </div>
      </div>
      <a class="tgme_head_dl_button" href="//telegram.org/dl?tme={name}">
        Don't have <strong>Telegram</strong> yet? Try it now!<i class="tgme_icon_arrow"></i>
      </a>
      <div class="tgme_body_wrap">
        <div class="tgme_page">
"""

_FOOT = """        </div>
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

JOIN_BUTTONS = {"channel": "Join Channel", "group": "Join Group"}
"""The button of a private chat's page, by the chat's kind."""


@dataclass(frozen=True, kw_only=True)
class PreviewPage:
    """The parts of a t.me page the generator reads, the head's then the body's. Text fields are
    escaped when rendered; the `*_html` fields are markup, rendered as given (a case may need an
    entity or a nested tag)."""

    name: str
    """The username, as in the page's tg://resolve links."""
    title_tag: str
    """The <title> (the generator reads og:title, never this)."""
    og_title: str
    image: str | None = None
    """og:image and twitter:image; None: no image tags."""
    og_description: str
    photo_html: str | None = None
    """What the page photo's link holds; None: no photo block."""
    title: str | None = None
    """The title block's text; None: no title block (t.me's page for a name nobody holds)."""
    extras_html: tuple[str, ...] = ()
    """One `.tgme_page_extra` line each: "1 234 subscribers", "@name", "12 345 monthly users"."""
    description_html: str | None = None
    button_html: str | None = None
    """The action button's label ("View in Telegram", "Send Message", "Join Channel", ...)."""
    button_href: str | None = None
    """The button's link; None: `tg://resolve?domain=<name>`."""
    additional_html: str | None = None
    """The line under the button."""
    preview_link: bool = False
    """A public channel's "Preview channel" link to t.me/s/<name>."""

    def html(self) -> str:
        return self._head() + self._body() + _FOOT.format(name=html.escape(self.name))

    def _head(self) -> str:
        e = html.escape
        image = "" if self.image is None else f"    <meta property=\"og:image\" content=\"{e(self.image)}\">\n"
        twitter_image = "" if self.image is None else f"    <meta property=\"twitter:image\" content=\"{e(self.image)}\">\n"
        return (
            "<!DOCTYPE html>\n<html>\n  <head>\n    <meta charset=\"utf-8\">\n"
            f"    <title>{e(self.title_tag)}</title>\n"
            "    <meta name=\"viewport\" content=\"width=device-width, initial-scale=1.0, minimum-scale=1.0, "
            "maximum-scale=1.0, user-scalable=no\" />\n"
            f"    <meta property=\"og:title\" content=\"{e(self.og_title)}\">\n"
            + image
            + "    <meta property=\"og:site_name\" content=\"Telegram\">\n"
            f"    <meta property=\"og:description\" content=\"{e(self.og_description)}\">\n"
            f"    <meta property=\"twitter:title\" content=\"{e(self.og_title)}\">\n"
            + twitter_image
            + _HEAD_TAIL.format(name=e(self.name), description=e(self.og_description))
        )

    def _body(self) -> str:
        e = html.escape
        resolve = f"tg://resolve?domain={e(self.name)}"
        parts: list[str] = []
        if self.photo_html is not None:
            parts.append(f"""          <div class="tgme_page_photo">
            <a href="{resolve}">{self.photo_html}</a>
          </div>
""")
        if self.title is not None:
            parts.append(f"          <div class=\"tgme_page_title\" dir=\"auto\"><span dir=\"auto\">{e(self.title)}</span></div>\n")
        parts.extend(f"""          <div class="tgme_page_extra">
            {extra}
          </div>
""" for extra in self.extras_html)
        if self.description_html is not None:
            parts.append(f"          <div class=\"tgme_page_description\" dir=\"auto\">{self.description_html}</div>\n")
        if self.button_html is not None:
            parts.append(f"""          <div class="tgme_page_action">
            <a class="tgme_action_button_new shine" href="{self.button_href or resolve}">{self.button_html}</a>
          </div>
""")
        if self.additional_html is not None:
            parts.append(f"""          <div class="tgme_page_additional">
            {self.additional_html}
          </div>
""")
        if self.preview_link:
            parts.append(f"""          <div class="tgme_page_context_link_wrap">
            <a class="tgme_page_context_link" href="/s/{e(self.name)}">Preview channel</a>
          </div>
""")
        return "".join(parts)


def photo_image(src: str) -> str:
    """The page photo as t.me shows a chat's picture."""
    return f"<img class=\"tgme_page_photo_image\" src=\"{html.escape(src)}\">"


def chat_page(
    name: str,
    kind: str,
    *,
    title: str,
    og_description: str,
    image: str,
    extras_html: tuple[str, ...],
    description_html: str | None,
    private_invite: bool = False,
) -> PreviewPage:
    """The page of a chat of `kind` (channel / group / user / bot); with `private_invite` the page of
    a chat only an invite opens ("Join Channel" / "Join Group"). The kind decides the button, the line
    under it, the channel's preview link and the <title>."""
    e = html.escape
    resolve = f"tg://resolve?domain={e(name)}"
    public_venue = kind in ("channel", "group") and not private_invite
    if private_invite or public_venue:
        button = JOIN_BUTTONS.get(kind, "Join Channel") if private_invite else "View in Telegram"
        additional = f"If you have <strong>Telegram</strong>, you can view and join <br><strong>{e(title)}</strong> right away."
    else:
        button = "Send Message"
        additional = (f"If you have <strong>Telegram</strong>, you can contact "
                      f"<a class=\"tgme_username_link\" href=\"{resolve}\">{e(title)}</a> right away.")
    return PreviewPage(
        name=name,
        title_tag=f"Telegram: {'View' if public_venue else 'Contact'} @{name}",
        og_title=title,
        og_description=og_description,
        image=image,
        photo_html=photo_image(image),
        title=title,
        extras_html=extras_html,
        description_html=description_html,
        button_html=button,
        additional_html=additional,
        preview_link=public_venue and kind == "channel",
    )


def not_found_page(name: str) -> PreviewPage:
    """What t.me answers for a username nobody holds: a generic "Contact @name" page, no title block."""
    e = html.escape
    resolve = f"tg://resolve?domain={e(name)}"
    return PreviewPage(
        name=name,
        title_tag=f"Telegram: Contact @{name}",
        og_title=f"Telegram: Contact @{name}",
        og_description=f"You can contact @{name} right away.",
        image="https://telegram.org/img/t_logo.png",
        photo_html=f"<i class=\"tgme_page_photo_image bgcolor0\" data-content=\"{e(name[:1].upper())}\"></i>",
        button_html="Send Message",
        additional_html=(f"If you have <strong>Telegram</strong>, you can contact "
                         f"<a class=\"tgme_username_link\" href=\"{resolve}\">@{e(name)}</a> right away."),
    )
