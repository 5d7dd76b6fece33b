"""The platform -> generator registry the recording engine uses.

Discord is absent on purpose: it has no generator, so its URLs are recorded `unsupported` with zero
calls. `paid` is PAID_PLATFORMS (the providers that bill per call).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx

from social_recording.domain.urls import Platform
from social_recording.outbound.guard import ResolveHost
from social_recording.outbound.limits import RequestLimiter
from social_recording.outbound.network import Network
from social_recording.platforms import github, instagram, reddit, telegram, tiktok, web, x, youtube
from social_recording.platforms.base import PAID_PLATFORMS, Generator, GeneratorRegistry, ProviderKeys

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


def build_registry(
    keys: ProviderKeys,
    *,
    transport: httpx.BaseTransport | None = None,
    sleep: Callable[[float], None] = time.sleep,
    resolve_host: ResolveHost | None = None,
    limiter: RequestLimiter | None = None,
) -> GeneratorRegistry:
    """Every platform with a generator, each built with the same keys / transport / sleep (the
    sandbox passes its transport here so the real generators run unchanged).

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
    return GeneratorRegistry(generators=generators, paid=PAID_PLATFORMS)
