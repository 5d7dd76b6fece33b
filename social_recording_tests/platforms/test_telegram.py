"""Telegram generator: t.me preview pages read by an HTML5 parser into channel / group / user / bot
venues keyed by the lower-cased username; private links and junk names never cause a request."""

from __future__ import annotations

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


# ------------------------------------------------------------------------------------ success


def test_channel_page_venue_with_subscribers_and_canonical_links() -> None:
    provider = ScriptedProvider().on(
        "GET", "https://t.me/durov", fixture_response("telegram", "channel.html")
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
        "GET", "https://t.me/solana_devs", fixture_response("telegram", "group.html")
    )
    result = _gen(provider).generate("https://t.me/solana_devs", CTX)
    venue = result.graph.groups[0].venue
    assert venue is not None
    assert venue.subtype == "group"
    assert venue.metrics == {"members": 12345.0, "online": 1234.0}
    assert venue.outbound_urls == ["https://example.org/rules"]


def test_user_page() -> None:
    provider = ScriptedProvider().on(
        "GET", "https://t.me/alice_dev", fixture_response("telegram", "user.html")
    )
    result = _gen(provider).generate("https://t.me/alice_dev", CTX)
    venue = result.graph.groups[0].venue
    assert venue is not None
    assert venue.subtype == "user"
    assert venue.platform_key == "telegram:alice_dev"
    assert venue.metrics == {}


def test_send_message_page_of_a_bot_name_is_a_bot_and_start_param_kept_out_of_the_request() -> None:
    provider = ScriptedProvider().on(
        "GET", "https://t.me/pricealertbot", fixture_response("telegram", "bot.html")
    )
    result = _gen(provider).generate("https://t.me/pricealertbot?start=abc", CTX)
    assert str(provider.requests[0].url) == "https://t.me/pricealertbot"
    venue = result.graph.groups[0].venue
    assert venue is not None
    assert venue.subtype == "bot"
    assert venue.platform_key == "telegram:pricealertbot"


def test_start_bot_button_is_a_bot_with_monthly_users() -> None:
    provider = ScriptedProvider().on(
        "GET", "https://t.me/tipper", fixture_response("telegram", "bot_start.html")
    )
    result = _gen(provider).generate("https://t.me/tipper", CTX)
    venue = result.graph.groups[0].venue
    assert venue is not None
    assert venue.subtype == "bot"
    assert venue.metrics == {"monthly_users": 12345.0}


def test_message_link_is_recorded_as_the_channel_venue() -> None:
    provider = ScriptedProvider().on(
        "GET", "https://t.me/durov", fixture_response("telegram", "channel.html")
    )
    result = _gen(provider).generate("https://t.me/durov/123", CTX)
    assert [r.url.path for r in provider.requests] == ["/durov"]
    venue = result.graph.groups[0].venue
    assert venue is not None and venue.platform_key == "telegram:durov"


def test_boost_link_is_the_channel_venue() -> None:
    provider = ScriptedProvider().on(
        "GET", "https://t.me/durov", fixture_response("telegram", "channel.html")
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
        "GET", "https://t.me/nosuchname_xyz", fixture_response("telegram", "not_found.html")
    )
    err = _fail(_gen(provider), "https://t.me/nosuchname_xyz")
    assert err.code is ErrorCode.NOT_FOUND and err.attempted is True
    assert len(provider.requests) == 1


def test_join_channel_page_is_blocked() -> None:
    provider = ScriptedProvider().on(
        "GET", "https://t.me/secretalpha", fixture_response("telegram", "private.html")
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
        "GET", "https://t.me/something", fixture_response("telegram", "unrecognised.html")
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
