"""Discord generator: an invite -> its server as a venue keyed by the guild id; an unknown invite is
`not_found`; Discord's `retry-after` holds every process through the shared limiter."""

from __future__ import annotations

import httpx
import pytest

from social_recording.domain.graph import ObjectKind, plan, planned_links
from social_recording.domain.urls import Platform, to_canonical
from social_recording.outbound.network import Network
from social_recording.platforms.base import ErrorCode
from social_recording.platforms.discord.generator import API_BASE, make_generator
from social_recording_tests.platforms.mocks import (
    CTX,
    ScriptedProvider,
    assert_zero_call,
    fixture_response,
    generate_error,
    provider_keys,
    public_dns,
    scripted_generator,
)

INVITE = f"{API_BASE}/invites/solanadevs"


def _gen(provider: ScriptedProvider):  # type: ignore[no-untyped-def]
    return scripted_generator(make_generator, provider)


@pytest.mark.parametrize("raw", ["https://discord.gg/solanadevs", "https://www.discord.com/invite/solanadevs/",
                                 "https://discordapp.com/invite/solanadevs?utm_source=x"])
def test_an_invite_is_its_server_keyed_by_the_guild_id(raw: str) -> None:
    provider = ScriptedProvider().on("GET", INVITE, fixture_response("discord", "invite.json"))
    result = _gen(provider).generate(to_canonical(raw), CTX)

    assert result.attempted is True and result.requests == 1
    (request,) = provider.requests
    assert request.url.params["with_counts"] == "true" and "authorization" not in request.headers
    [(kind, depth)] = [(link.kind, link.depth) for link in planned_links(plan(result.graph))]
    assert (kind, depth) == (ObjectKind.VENUE, 0)
    venue = result.graph.groups[0].venue
    assert venue is not None and venue.platform is Platform.DISCORD
    assert venue.platform_key == "discord:889577356681945098" and venue.subtype == "guild"
    assert venue.metrics == {"members": 48213.0, "online": 6120.0, "boosts": 14.0}
    assert venue.icon_url == "https://cdn.discordapp.com/icons/889577356681945098/a_5c2e1b7f9d3a4e6b8c0d2f4a6b8c0d2e.png"
    assert venue.fields["name"] == "Solana Devs" and venue.fields["invite_code"] == "solanadevs"
    assert venue.outbound_urls == ["https://docs.example-dev.io", "https://x.com/solanadevs"]


def test_an_unknown_or_expired_invite_is_not_found() -> None:
    provider = ScriptedProvider().on("GET", INVITE, fixture_response("discord", "unknown_invite.json", status=404))
    err = generate_error(_gen(provider), "https://discord.com/invite/solanadevs", CTX)
    assert err.code is ErrorCode.NOT_FOUND and err.attempted and "unknown or expired" in str(err)
    assert len(provider.requests) == 1  # a 404 is an answer: never retried


def test_an_invite_to_a_group_dm_names_no_server() -> None:
    provider = ScriptedProvider().on("GET", INVITE, fixture_response("discord", "group_dm_invite.json"))
    err = generate_error(_gen(provider), "https://discord.com/invite/solanadevs", CTX)
    assert err.code is ErrorCode.TARGET_BLOCKED and err.attempted


class RecordingLimiter:
    def __init__(self) -> None:
        self.acquired: list[str] = []
        self.penalties: list[tuple[str, float]] = []

    def acquire(self, service: str) -> None:
        self.acquired.append(service)

    def penalise(self, service: str, retry_after_s: float) -> None:
        self.penalties.append((service, retry_after_s))


def test_a_429_holds_every_process_for_discords_retry_after() -> None:
    limited = fixture_response("discord", "rate_limited.json", status=429,
                               headers={"retry-after": "3", "x-ratelimit-scope": "user"})
    provider = ScriptedProvider().on("GET", INVITE, limited)
    limiter = RecordingLimiter()
    gen = make_generator(provider_keys(), sleep=lambda s: None,
                         transport=Network(httpx.MockTransport(provider._handle), resolve_host=public_dns, limiter=limiter))
    err = generate_error(gen, "https://discord.com/invite/solanadevs", CTX)
    assert err.code is ErrorCode.RATE_LIMITED and err.attempted
    assert limiter.acquired[0] == "discord" and ("discord", 3.0) in limiter.penalties


@pytest.mark.parametrize("url, subtype", [("https://discord.com", "page"), ("https://discord.com/nitro", "page")])
def test_discords_own_pages_make_no_request(url: str, subtype: str) -> None:
    provider = ScriptedProvider()
    assert_zero_call(_gen(provider).generate(url, CTX), len(provider.requests), "discord", url, subtype)


@pytest.mark.parametrize("url", ["https://discord.com/channels/1/2", "https://discord.com/invite"])
def test_a_url_naming_no_invite_is_unsupported_without_a_call(url: str) -> None:
    provider = ScriptedProvider()
    err = generate_error(_gen(provider), url, CTX)
    assert err.code is ErrorCode.UNSUPPORTED and not err.attempted and provider.requests == []
