"""Telegram generator: t.me preview pages read by an HTML5 parser into channel / group / user / bot
venues keyed by the lower-cased username; private links and junk names never cause a request."""

from __future__ import annotations

from dataclasses import replace

import httpx
import pytest

from social_recording.domain.graph import ObjectKind, plan, planned_links
from social_recording.domain.urls import Platform
from social_recording.platforms.base import (
    ErrorCode,
    ExternalFetchError,
    GenerateContext,
    Generator,
)
from social_recording.platforms.http import MAX_RESPONSE_BYTES
from social_recording.platforms.telegram.generator import make_generator
from social_recording.platforms.telegram.preview_page import PreviewPage, chat_page, not_found_page
from social_recording_tests.platforms.mocks import (
    MINT,
    ScriptedProvider,
    Sleeps,
    assert_zero_call,
    fixture_response,
    generate_error,
    scripted_generator,
)

CTX = GenerateContext(token_address=MINT)


def _gen(provider: ScriptedProvider, sleeps: Sleeps | None = None) -> Generator:
    return scripted_generator(make_generator, provider, sleeps)


def _fail(gen: Generator, url: str) -> ExternalFetchError:
    return generate_error(gen, url, CTX)


# The written cases, rendered by the fake t.me's renderer: each differs from the others only in the
# fields that make its case (the kind's button and extra line, what a page lacks).
_CHANNEL = chat_page(
    "durov", "channel", title="Du Rove's Channel",
    og_description="Thoughts from the Product Manager / CEO of Telegram.",
    image="https://cdn4.cdn-telegram.org/file/abc123.jpg?token=x&size=320",
    extras_html=("1 234 567 subscribers",),
    description_html=(
        "Thoughts from the Product Manager / CEO of Telegram.<br/>Site: "
        '<a href="https://telegram.org/?utm_source=tme" target="_blank" rel="noopener">telegram.org</a> and '
        '<a href="https://t.me/durovschat" target="_blank">@durovschat</a><br/>Also https://www.Example.com/path/ here.'
    ),
)
_GROUP = chat_page(
    "solana_devs", "group", title="Solana Devs",
    og_description="Developer chat. Rules: https://example.org/rules",
    image="https://cdn1.cdn-telegram.org/file/group.jpg",
    extras_html=("12&nbsp;345 members, 1 234 online",),  # a no-break space as t.me writes it
    description_html="Developer chat. Rules: https://example.org/rules",
)
_USER = chat_page(
    "alice_dev", "user", title="Alice", og_description="Building things.",
    image="https://cdn5.cdn-telegram.org/file/alice.jpg",
    extras_html=("@alice_dev",), description_html="Building things.",
)
_BOT = chat_page(  # a "Send Message" page like a user's: the name ending in "bot" makes it a bot
    "PriceAlertBot", "bot", title="Price Alert", og_description="Alerts for your tokens.",
    image="https://cdn2.cdn-telegram.org/file/bot.jpg",
    extras_html=("@PriceAlertBot",), description_html="Alerts for your tokens.",
)
_BOT_START = replace(  # a name not ending in "bot": only the "Start Bot" button (its label wrapped) says bot
    chat_page("tipper", "bot", title="Tipper", og_description="Tips.",
              image="https://cdn2.cdn-telegram.org/file/tipper.jpg",
              extras_html=("@tipper", "12 345 monthly users"), description_html=None),
    button_html='<span class="tgme_action_button_label">Start Bot</span>',
)
_PRIVATE = replace(  # a title and a subscribers line, as a channel's, but the button is "Join Channel"
    chat_page("secretalpha", "channel", title="Secret Alpha", og_description="You are invited to a channel.",
              image="https://cdn3.cdn-telegram.org/file/secret.jpg",
              extras_html=("2 345 subscribers",), description_html=None, private_invite=True),
    title_tag="Telegram: Join Group Chat", button_href="tg://join?invite=abc",
)
_UNRECOGNISED = PreviewPage(  # og: tags and a title, nothing that says a kind
    name="something", title_tag="Telegram", og_title="Something",
    og_description="A page with a title but no kind.", title="Something",
)


def _response(page: PreviewPage) -> httpx.Response:
    return httpx.Response(200, content=page.html().encode(), headers={"content-type": "text/html; charset=utf-8"})


# ------------------------------------------------------------------------------------ success


def test_channel_page_venue_with_subscribers_and_canonical_links() -> None:
    provider = ScriptedProvider().on(
        "GET", "https://t.me/durov", _response(_CHANNEL)
    )
    gen = _gen(provider)
    assert gen.platform is Platform.TELEGRAM
    result = gen.generate("https://t.me/durov", CTX)

    assert result.attempted is True and result.requests == 1
    (request,) = provider.requests
    assert request.headers["accept-language"] == "en"
    links = planned_links(plan(result.graph))
    assert [(link.kind, link.depth) for link in links] == [(ObjectKind.VENUE, 0)]
    venue = result.graph.groups[0].venue
    assert venue is not None
    assert venue.platform_key == "telegram:durov"
    assert venue.subtype == "channel"
    assert venue.fields["title"] == "Du Rove's Channel"
    assert venue.fields["description"].startswith(
        "Thoughts from the Product Manager / CEO of Telegram.\nSite:"
    )
    assert venue.metrics == {"subscribers": 1234567.0}
    # the og:image exactly as received (HTML entities decoded, nothing else touched)
    assert venue.avatar_url == "https://cdn4.cdn-telegram.org/file/abc123.jpg?token=x&size=320"
    assert venue.outbound_urls == [
        "https://telegram.org",
        "https://t.me/durovschat",
        "https://example.com/path",
    ]


def test_group_page_members_and_online_with_nbsp_separators() -> None:
    provider = ScriptedProvider().on(
        "GET", "https://t.me/solana_devs", _response(_GROUP)
    )
    result = _gen(provider).generate("https://t.me/solana_devs", CTX)
    venue = result.graph.groups[0].venue
    assert venue is not None
    assert venue.subtype == "group"
    assert venue.metrics == {"members": 12345.0, "online": 1234.0}
    assert venue.outbound_urls == ["https://example.org/rules"]


def test_user_page() -> None:
    provider = ScriptedProvider().on(
        "GET", "https://t.me/alice_dev", _response(_USER)
    )
    result = _gen(provider).generate("https://t.me/alice_dev", CTX)
    venue = result.graph.groups[0].venue
    assert venue is not None
    assert venue.subtype == "user"
    assert venue.platform_key == "telegram:alice_dev"
    assert venue.metrics == {}


def test_send_message_page_of_a_bot_name_is_a_bot_and_start_param_kept_out_of_the_request() -> None:
    provider = ScriptedProvider().on(
        "GET", "https://t.me/pricealertbot", _response(_BOT)
    )
    result = _gen(provider).generate("https://t.me/pricealertbot?start=abc", CTX)
    assert str(provider.requests[0].url) == "https://t.me/pricealertbot"
    venue = result.graph.groups[0].venue
    assert venue is not None
    assert venue.subtype == "bot"
    assert venue.platform_key == "telegram:pricealertbot"


def test_start_bot_button_is_a_bot_with_monthly_users() -> None:
    provider = ScriptedProvider().on(
        "GET", "https://t.me/tipper", _response(_BOT_START)
    )
    result = _gen(provider).generate("https://t.me/tipper", CTX)
    venue = result.graph.groups[0].venue
    assert venue is not None
    assert venue.subtype == "bot"
    assert venue.metrics == {"monthly_users": 12345.0}


def test_message_link_is_recorded_as_the_channel_venue() -> None:
    provider = ScriptedProvider().on(
        "GET", "https://t.me/durov", _response(_CHANNEL)
    )
    result = _gen(provider).generate("https://t.me/durov/123", CTX)
    assert [r.url.path for r in provider.requests] == ["/durov"]
    venue = result.graph.groups[0].venue
    assert venue is not None and venue.platform_key == "telegram:durov"


def test_boost_link_is_the_channel_venue() -> None:
    provider = ScriptedProvider().on(
        "GET", "https://t.me/durov", _response(_CHANNEL)
    )
    result = _gen(provider).generate("https://t.me/boost/durov", CTX)
    assert result.requests == 1
    assert result.graph.groups[0].venue is not None


@pytest.mark.parametrize(
    ("url", "subtype"),
    [
        ("https://t.me/share/url?url=https://x.com", "share"),
        ("https://t.me/addstickers/Pack", "stickers"),
        ("https://t.me", "page"),
    ],
)
def test_zero_call_shapes(url: str, subtype: str) -> None:
    provider = ScriptedProvider()
    assert_zero_call(_gen(provider).generate(url, CTX), len(provider.requests), "telegram", url, subtype)


# ------------------------------------------------------------------------------------ no call


@pytest.mark.parametrize(
    "url",
    [
        "https://t.me/+AbCdEf123",
        "https://t.me/joinchat/AbCdEf",
        "https://t.me/c/123456/7",
        "https://t.me/addlist/AbCdEf",
    ],
)
def test_private_links_are_blocked_without_a_call(url: str) -> None:
    provider = ScriptedProvider()
    err = _fail(_gen(provider), url)
    assert err.code is ErrorCode.TARGET_BLOCKED and err.attempted is False
    assert provider.requests == []


def test_a_name_that_cannot_be_a_username_is_unsupported_without_a_call() -> None:
    provider = ScriptedProvider()
    err = _fail(_gen(provider), "https://t.me/a-b")
    assert err.code is ErrorCode.UNSUPPORTED and err.attempted is False
    assert provider.requests == []


# ------------------------------------------------------------------------------------ failures


def test_contact_page_without_title_is_not_found() -> None:
    provider = ScriptedProvider().on(
        "GET", "https://t.me/nosuchname_xyz", _response(not_found_page("nosuchname_xyz"))
    )
    err = _fail(_gen(provider), "https://t.me/nosuchname_xyz")
    assert err.code is ErrorCode.NOT_FOUND and err.attempted is True
    assert len(provider.requests) == 1


def test_join_channel_page_is_blocked() -> None:
    provider = ScriptedProvider().on(
        "GET", "https://t.me/secretalpha", _response(_PRIVATE)
    )
    err = _fail(_gen(provider), "https://t.me/secretalpha")
    assert err.code is ErrorCode.TARGET_BLOCKED and err.attempted is True
    assert len(provider.requests) == 1


def test_page_without_og_tags_is_upstream() -> None:
    provider = ScriptedProvider().on(
        "GET", "https://t.me/durov", fixture_response("telegram", "malformed.html")
    )
    err = _fail(_gen(provider), "https://t.me/durov")
    assert err.code is ErrorCode.UPSTREAM and err.attempted is True
    assert len(provider.requests) == 1


def test_binary_garbage_is_upstream() -> None:
    provider = ScriptedProvider().on(
        "GET", "https://t.me/durov", httpx.Response(200, content=bytes(range(256)) * 4)
    )
    err = _fail(_gen(provider), "https://t.me/durov")
    assert err.code is ErrorCode.UPSTREAM and err.attempted is True


def test_unrecognised_page_is_upstream() -> None:
    provider = ScriptedProvider().on(
        "GET", "https://t.me/something", _response(_UNRECOGNISED)
    )
    err = _fail(_gen(provider), "https://t.me/something")
    assert err.code is ErrorCode.UPSTREAM and err.attempted is True


def test_oversized_streamed_body_is_upstream() -> None:
    chunk = b"<div>" + b"x" * (1024 * 1024)
    body = iter([chunk] * 6)  # ~6 MiB, streamed without Content-Length
    provider = ScriptedProvider().on("GET", "https://t.me/durov", httpx.Response(200, content=body))
    err = _fail(_gen(provider), "https://t.me/durov")
    assert err.code is ErrorCode.UPSTREAM and err.attempted is True
    assert str(MAX_RESPONSE_BYTES) in str(err)
    assert len(provider.requests) == 1


# ------------------------------------------------------------------------------------ broken markup


def _page(body: str, head: str = '<meta property="og:title" content="Pepe Two">') -> httpx.Response:
    html = f"<!DOCTYPE html><html><head>{head}</head><body><div class=\"tgme_page\">{body}</div></body></html>"
    return httpx.Response(200, content=html.encode(), headers={"content-type": "text/html; charset=utf-8"})


def _venue(body: str, head: str = '<meta property="og:title" content="Pepe Two">') -> dict[str, object]:
    provider = ScriptedProvider().on("GET", "https://t.me/pepetwo", _page(body, head))
    venue = _gen(provider).generate("https://t.me/pepetwo", CTX).graph.groups[0].venue
    assert venue is not None
    return {"subtype": venue.subtype, "metrics": venue.metrics, "avatar": venue.avatar_url,
            "links": venue.outbound_urls, **venue.fields}


def test_an_unclosed_p_in_the_extra_line_does_not_swallow_the_page() -> None:
    venue = _venue(
        '<div class="tgme_page_title"><span>Pepe Two</span></div>'
        '<div class="tgme_page_extra"><p>12 345 subscribers</div>'  # the <p> is never closed
        '<div class="tgme_page_description">Official channel https://pepe2.fun</div>'
        '<div class="tgme_page_action"><a class="tgme_action_button_new" href="tg://x">View in Telegram</a></div>'
        '<div class="tgme_page_context_link_wrap"><a class="tgme_page_context_link" href="/s/pepetwo">Preview channel</a></div>'
    )
    assert venue["extra"] == "12 345 subscribers"  # the extra line only, not the rest of the page
    assert venue["metrics"] == {"subscribers": 12345.0}
    assert venue["description"] == "Official channel https://pepe2.fun" and venue["subtype"] == "channel"
    assert venue["links"] == ["https://pepe2.fun"]


def test_nested_tags_in_the_title_and_line_breaks_in_the_description() -> None:
    venue = _venue(
        '<div class="tgme_page_title"><span dir="auto"><b>Pepe</b> <i>Two</i> &amp; <em>Friends</em></span></div>'
        '<div class="tgme_page_extra">5 members, 1 online'
        '<div class="tgme_page_description">Line one<br>Line <b>two</b><br/><br/>'
        '<a href="https://pepe2.fun">pepe2.fun</a></div>'  # the extra's own </div> is missing
        '<a class="tgme_action_button_new" href="tg://x">View in Telegram</a>'
    )
    assert venue["title"] == "Pepe Two & Friends"
    assert venue["description"] == "Line one\nLine two\npepe2.fun"
    assert venue["links"] == ["https://pepe2.fun"]
    assert venue["subtype"] == "group" and venue["metrics"] == {"members": 5.0, "online": 1.0}


def test_missing_meta_tags() -> None:
    # no og:image: the page photo is the avatar; no og:description: none recorded
    venue = _venue(
        '<img class="tgme_page_photo_image" src="https://cdn.example/p.jpg">'
        '<div class="tgme_page_title">Pepe Two</div><div class="tgme_page_extra">@pepetwo</div>'
        '<a class="tgme_action_button_new" href="tg://x">Send Message</a>'
    )
    assert venue["avatar"] == "https://cdn.example/p.jpg" and venue["og_description"] is None
    assert venue["subtype"] == "user"
    # no og: tag at all: not a preview page (retryable), whatever else the page holds
    provider = ScriptedProvider().on("GET", "https://t.me/pepetwo", _page(
        '<div class="tgme_page_title">Pepe Two</div>', head="<title>Telegram</title>"))
    err = _fail(_gen(provider), "https://t.me/pepetwo")
    assert err.code is ErrorCode.UPSTREAM and "no og: tags" in str(err) and err.attempted is True
    # og tags but no title block and no "Contact @" title: unrecognised, retryable
    provider = ScriptedProvider().on("GET", "https://t.me/pepetwo", _page('<div class="tgme_page_extra">1 subscriber</div>'))
    assert _fail(_gen(provider), "https://t.me/pepetwo").code is ErrorCode.UPSTREAM
