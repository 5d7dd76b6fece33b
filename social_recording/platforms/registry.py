"""The platform -> generator registry the recording engine uses, built from the catalogue.

A platform whose required key is not configured is `unavailable` (the missing variable is the
reason): its URLs are recorded `unsupported` with zero calls, and become retry candidates again once
the key is set. A platform without a generator is absent, with the same effect."""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable

import httpx

from social_recording.domain.platform import PlatformDescriptor
from social_recording.domain.urls import Platform
from social_recording.outbound.guard import ResolveHost
from social_recording.outbound.limits import RequestLimiter
from social_recording.outbound.network import Network
from social_recording.platforms.base import PAID_PLATFORMS, Generator, GeneratorRegistry, ProviderKeys
from social_recording.platforms.catalogue import CATALOGUE

MakeGenerator = Callable[..., Generator]


def generator_factory(descriptor: PlatformDescriptor) -> MakeGenerator:
    """`<package>.generator.make_generator` of a platform that has a generator."""
    return importlib.import_module(f"{descriptor.package}.generator").make_generator  # type: ignore[no-any-return]


def unavailable_platforms(keys: ProviderKeys) -> dict[Platform, str]:
    """Platform -> "<VARIABLE> is not set" for every platform whose required key is missing or blank."""
    return {
        d.platform: f"{d.account.key_variable} is not set"
        for d in CATALOGUE
        if d.has_generator and d.account.key_required and keys.value(d.account.key_variable) is None
    }


def usable_platforms(keys: ProviderKeys) -> frozenset[Platform]:
    """The platforms `build_registry(keys)` could call, without building a client (status reports)."""
    return frozenset(d.platform for d in CATALOGUE if d.has_generator) - frozenset(unavailable_platforms(keys))


def build_registry(
    keys: ProviderKeys,
    *,
    transport: httpx.BaseTransport | None = None,
    sleep: Callable[[float], None] = time.sleep,
    resolve_host: ResolveHost | None = None,
    limiter: RequestLimiter | None = None,
) -> GeneratorRegistry:
    """Every platform with a generator, each built with the same keys, transport and sleep (the
    sandbox passes its transport, so the real generators run unchanged). `resolve_host` (the
    redirect guard's DNS) and `limiter` (the shared request limiter) travel with the transport as one
    `Network`."""
    if resolve_host is not None or limiter is not None:
        transport = Network(transport, resolve_host=resolve_host, limiter=limiter)
    generators: dict[Platform, Generator] = {}
    for descriptor in CATALOGUE:
        if not descriptor.has_generator:
            continue
        generator = generator_factory(descriptor)(keys, transport=transport, sleep=sleep)
        if generator.platform != descriptor.platform:
            raise RuntimeError(f"{descriptor.package}.generator.make_generator returned a generator for "
                               f"{generator.platform!r}, not {descriptor.platform!r}")
        generators[descriptor.platform] = generator
    return GeneratorRegistry(generators=generators, paid=PAID_PLATFORMS, unavailable=unavailable_platforms(keys))
