"""build_registry: every platform with a generator (discord absent), paid set, shared transport, and
the platforms a missing provider key leaves unavailable."""

from __future__ import annotations

import httpx
from pydantic import SecretStr

from social_recording.domain.urls import Platform
from social_recording.platforms.base import PAID_PLATFORMS, Generator, GeneratorRegistry, ProviderKeys
from social_recording.platforms.catalogue import CATALOGUE
from social_recording.platforms.registry import build_registry
from social_recording_tests.platforms.mocks import (
    APIFY_TOKEN,
    CTX,
    RUN_REQUESTS,
    TWITTERAPI_KEY,
    ApifyApi,
    Recorder,
    fixture_bytes,
)


def _keys() -> ProviderKeys:
    """Every key the catalogue names (a placeholder each), the two the tests read by value."""
    placeholders = {variable: SecretStr(f"{variable.lower()}-value") for variable in CATALOGUE.key_variables()}
    return ProviderKeys(placeholders, twitterapi_io_key=SecretStr(TWITTERAPI_KEY), apify_token=SecretStr(APIFY_TOKEN))


KEYED = {d.platform: f"{d.account.key_variable} is not set" for d in CATALOGUE if d.account.key_required}
"""What a registry without any key says of each platform whose key is required (the catalogue's)."""


def test_registry_maps_every_platform() -> None:
    registry = build_registry(_keys())
    assert isinstance(registry, GeneratorRegistry)
    assert set(registry) == set(Platform)
    assert registry.unavailable == {} and registry.usable_platforms() == set(registry)
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
            if request.url.path.startswith("/v2/datasets/"):
                return httpx.Response(200, content=fixture_bytes("tiktok", "profile.json"))
            return httpx.Response(201 if request.method == "POST" else 200,
                                  json={"data": ApifyApi.run_object("SUCCEEDED")})
        return httpx.Response(404)

    rec = Recorder(handler)
    slept: list[float] = []
    registry = build_registry(_keys(), transport=rec.transport, sleep=slept.append)
    x_gen, tiktok_gen = registry.get(Platform.X), registry.get(Platform.TIKTOK)
    assert x_gen is not None and tiktok_gen is not None
    assert x_gen.generate("https://x.com/soldevalice", CTX).requests == 1
    assert tiktok_gen.generate("https://tiktok.com/@pepe2official", CTX).requests == RUN_REQUESTS
    to_x, *to_apify = rec.requests
    assert to_x.headers["x-api-key"] == TWITTERAPI_KEY and "authorization" not in to_x.headers
    for request in to_apify:
        assert request.headers["authorization"] == f"Bearer {APIFY_TOKEN}" and "x-api-key" not in request.headers
        assert TWITTERAPI_KEY not in str(request.url)
    assert APIFY_TOKEN not in str(to_x.url)
    assert slept == []


def test_a_missing_key_makes_its_platforms_unavailable() -> None:
    rec = Recorder(lambda r: httpx.Response(500))
    registry = build_registry(ProviderKeys(apify_token=SecretStr("  ")), transport=rec.transport, sleep=lambda s: None)
    assert registry.unavailable == KEYED
    assert {p: KEYED[p] for p in (Platform.X, Platform.TIKTOK, Platform.INSTAGRAM, Platform.REDDIT, Platform.YOUTUBE,
                                  Platform.WEB)} == {
        Platform.X: "TWITTERAPI_IO_KEY is not set",
        Platform.TIKTOK: "APIFY_TOKEN is not set",  # a blank value counts as unset
        Platform.INSTAGRAM: "APIFY_TOKEN is not set",
        Platform.REDDIT: "APIFY_TOKEN is not set",
        Platform.YOUTUBE: "YOUTUBE_API_KEY is not set",
        Platform.WEB: "URLSCAN_API_KEY is not set",
    }
    # GitHub's token is optional (anonymous calls work); t.me and Discord's invites need none
    assert registry.usable_platforms() == set(Platform) - set(KEYED)
    assert {Platform.GITHUB, Platform.TELEGRAM, Platform.DISCORD} <= registry.usable_platforms()
    assert registry.get(Platform.X) is None and registry.why_unavailable(Platform.X) == "TWITTERAPI_IO_KEY is not set"
    assert GeneratorRegistry().why_unavailable(Platform.DISCORD) == "no generator for discord"
    # the generators are still built: their own "key not set" guard stays a second line
    x_gen = registry.generators[Platform.X]
    assert x_gen.generate("https://x.com/search?q=pepe2", CTX).attempted is False and rec.count == 0


def test_each_key_unlocks_its_platforms() -> None:
    registry = build_registry(ProviderKeys(apify_token=SecretStr(APIFY_TOKEN)))
    assert {Platform.TIKTOK, Platform.INSTAGRAM, Platform.REDDIT} <= registry.usable_platforms()
    assert set(registry.unavailable) == set(KEYED) - {Platform.TIKTOK, Platform.INSTAGRAM, Platform.REDDIT}


def test_a_run_process_loads_the_public_suffix_list_at_its_first_website_only() -> None:
    """Building every generator (what a run process does at its start) leaves tldextract and the
    `requests` it imports unloaded; the first registrable domain asked for loads them."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from pydantic import SecretStr\n"
        "from social_recording.platforms.base import ProviderKeys\n"
        "from social_recording.platforms.registry import build_registry\n"
        "build_registry(ProviderKeys(github_token=SecretStr('t')))\n"
        "assert 'tldextract' not in sys.modules, 'tldextract imported at start'\n"
        "from social_recording.platforms.web.generator import registrable_domain\n"
        "assert registrable_domain('www.example.co.uk') == 'example.co.uk'\n"
        "assert registrable_domain('foo.github.io') == 'github.io'\n"
        "assert 'tldextract' in sys.modules\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
