"""The registration of every platform: its member of `Platform` (docs/architecture.md, "Providers in
one place"). A platform named `p` is the package `social_recording/platforms/p/`, whose `spec.py`
holds its descriptor; the catalogue reads each one in the enum's order. Everything else about a
provider is read from its descriptor.

Pure, and domain-level although it lives beside the platforms: it and every `spec.py` import only
`domain`, so the canonicaliser reads every platform's URL rules without loading HTTP or sandbox code
(social_recording_tests/test_layers.py, `DOMAIN_LEVEL`)."""

from __future__ import annotations

import importlib

from social_recording.domain.platform import Catalogue, Platform, PlatformDescriptor

SPEC_MODULE = "social_recording.platforms.{}.spec"
"""Where the descriptor of the platform named by a `Platform` value lives (`DESCRIPTOR`)."""


def descriptor_of(platform: Platform) -> PlatformDescriptor:
    """`platforms/<platform>/spec.py`'s `DESCRIPTOR`, checked to describe that platform."""
    module = importlib.import_module(SPEC_MODULE.format(platform.value))
    descriptor = getattr(module, "DESCRIPTOR", None)
    if not isinstance(descriptor, PlatformDescriptor) or descriptor.platform is not platform:
        raise RuntimeError(f"{module.__name__}.DESCRIPTOR must be the PlatformDescriptor of {platform.value!r}, "
                           f"got {descriptor!r}")
    return descriptor


CATALOGUE = Catalogue(tuple(descriptor_of(p) for p in Platform))
