"""build_registry: every platform with a generator (discord absent), paid set, shared transport."""

from __future__ import annotations

import httpx
from pydantic import SecretStr

from social_recording.domain.urls import Platform
from social_recording.platforms.base import PAID_PLATFORMS, Generator, GeneratorRegistry, ProviderKeys
from social_recording.platforms.registry import build_registry
from social_recording_tests.platforms.mocks import (
    APIFY_TOKEN,
    CTX,
    TWITTERAPI_KEY,
    Recorder,
    fixture_bytes,
)


def _keys() -> ProviderKeys:
    return ProviderKeys(twitterapi_io_key=SecretStr(TWITTERAPI_KEY), apify_token=SecretStr(APIFY_TOKEN))


def test_registry_maps_every_platform_but_discord() -> None:
    registry = build_registry(_keys())
    assert isinstance(registry, GeneratorRegistry)
    assert set(registry) == {Platform.X, Platform.TIKTOK, Platform.INSTAGRAM, Platform.REDDIT, Platform.YOUTUBE,
                             Platform.GITHUB, Platform.TELEGRAM, Platform.WEB}
    assert registry.get(Platform.DISCORD) is None
    for platform in registry:
        generator = registry.get(platform)
        assert isinstance(generator, Generator) and generator.platform == platform
    assert registry.paid == PAID_PLATFORMS
    assert registry.is_paid(Platform.X) and registry.is_paid(Platform.WEB)
    assert not registry.is_paid(Platform.YOUTUBE) and not registry.is_paid(Platform.TELEGRAM)


def test_registry_generators_share_the_transport_and_scope_their_keys() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        if request.url.host == "api.twitterapi.io":
            return httpx.Response(200, content=fixture_bytes("x", "user_info.json"))
        if request.url.host == "api.apify.com":
            return httpx.Response(200, content=fixture_bytes("tiktok", "profile.json"))
        return httpx.Response(404)

    rec = Recorder(handler)
    slept: list[float] = []
    registry = build_registry(_keys(), transport=rec.transport, sleep=slept.append)
    x_gen, tiktok_gen = registry.get(Platform.X), registry.get(Platform.TIKTOK)
    assert x_gen is not None and tiktok_gen is not None
    assert x_gen.generate("https://x.com/soldevalice", CTX).requests == 1
    assert tiktok_gen.generate("https://tiktok.com/@pepe2official", CTX).requests == 1
    to_x, to_apify = rec.requests
    assert to_x.headers["x-api-key"] == TWITTERAPI_KEY and "authorization" not in to_x.headers
    assert to_apify.headers["authorization"] == f"Bearer {APIFY_TOKEN}" and "x-api-key" not in to_apify.headers
    assert APIFY_TOKEN not in str(to_x.url) and TWITTERAPI_KEY not in str(to_apify.url)
    assert slept == []


def test_registry_without_keys_still_builds_and_zero_call_paths_work() -> None:
    rec = Recorder(lambda r: httpx.Response(500))
    registry = build_registry(ProviderKeys(), transport=rec.transport, sleep=lambda s: None)
    x_gen = registry.get(Platform.X)
    assert x_gen is not None
    result = x_gen.generate("https://x.com/search?q=pepe2", CTX)
    assert result.attempted is False and rec.count == 0
