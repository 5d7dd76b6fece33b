"""The platform -> generator registry the recording engine uses.

Discord is absent on purpose: it has no generator, so its URLs are recorded `unsupported` with zero
calls. `paid` is PAID_PLATFORMS (the providers that bill per call). A platform whose provider key is
not configured is `unavailable` (the missing variable is the reason): its URLs are recorded
`unsupported` with zero calls too, instead of failing one by one as retryable errors, and become
candidates again once the key is set.
The GitHub token is optional (anonymous calls work, at a lower rate) and t.me needs none.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx
from pydantic import SecretStr

from social_recording.domain.urls import Platform
from social_recording.outbound.guard import ResolveHost
from social_recording.outbound.limits import RequestLimiter
from social_recording.outbound.network import Network
from social_recording.platforms import apify, github, instagram, reddit, telegram, tiktok, web, x, youtube
from social_recording.platforms.base import PAID_PLATFORMS, Generator, GeneratorRegistry, ProviderKeys
from social_recording.platforms.shaping import secret_value

_MODULES = {
    Platform.X: x,
    Platform.TIKTOK: tiktok,
    Platform.INSTAGRAM: instagram,
    Platform.REDDIT: reddit,
    Platform.YOUTUBE: youtube,
    Platform.GITHUB: github,
    Platform.TELEGRAM: telegram,
    Platform.WEB: web,
}


_REQUIRED_KEYS: dict[Platform, tuple[str, Callable[[ProviderKeys], SecretStr | None]]] = {
    Platform.X: (x.KEY_VARIABLE, lambda keys: keys.twitterapi_io_key),
    Platform.TIKTOK: (apify.KEY_VARIABLE, lambda keys: keys.apify_token),
    Platform.INSTAGRAM: (apify.KEY_VARIABLE, lambda keys: keys.apify_token),
    Platform.REDDIT: (apify.KEY_VARIABLE, lambda keys: keys.apify_token),
    Platform.YOUTUBE: (youtube.KEY_VARIABLE, lambda keys: keys.youtube_api_key),
    Platform.WEB: (web.KEY_VARIABLE, lambda keys: keys.urlscan_api_key),
}
"""Platform -> (the variable holding its provider key, how to read it): without it the platform is
unavailable. GitHub and Telegram are absent: they run without a key."""


def unavailable_platforms(keys: ProviderKeys) -> dict[Platform, str]:
    """Platform -> "<VARIABLE> is not set" for every platform whose required key is missing or blank."""
    return {
        platform: f"{variable} is not set"
        for platform, (variable, read) in _REQUIRED_KEYS.items()
        if secret_value(read(keys)) is None
    }


def usable_platforms(keys: ProviderKeys) -> frozenset[Platform]:
    """The platforms `build_registry(keys)` could call, without building a client (status reports)."""
    return frozenset(_MODULES) - frozenset(unavailable_platforms(keys))


def build_registry(
    keys: ProviderKeys,
    *,
    transport: httpx.BaseTransport | None = None,
    sleep: Callable[[float], None] = time.sleep,
    resolve_host: ResolveHost | None = None,
    limiter: RequestLimiter | None = None,
) -> GeneratorRegistry:
    """Every platform with a generator, each built with the same keys / transport / sleep (the
    sandbox passes its transport here so the real generators run unchanged), and the platforms the
    keys leave unavailable.

    `resolve_host` is the DNS the redirect guard asks (None: the system resolver; the sandbox passes
    its own, which knows its fake hosts) and `limiter` the shared request limiter (None: no limit).
    Both travel with the transport as one `Network`, so every generator's clients get them without
    each factory growing a parameter."""
    if resolve_host is not None or limiter is not None:
        transport = Network(transport, resolve_host=resolve_host, limiter=limiter)
    generators: dict[Platform, Generator] = {}
    for platform, module in _MODULES.items():
        generator = module.make_generator(keys, transport=transport, sleep=sleep)
        if generator.platform != platform:
            raise RuntimeError(
                f"{module.__name__}.make_generator returned a generator for {generator.platform!r}, not {platform!r}"
            )
        generators[platform] = generator
    return GeneratorRegistry(generators=generators, paid=PAID_PLATFORMS, unavailable=unavailable_platforms(keys))
