"""Which provider subject(s) a canonical target URL turns into (the ledger's subjects), asked of
each platform's fake (`<package>.fake.subjects`), whose rules are its generator's own.

A scenario names outcomes per canonical URL, but a request only carries what the real client asks
(`tweet_ids=123`, an actor input, `forHandle=@foo`): the sandbox indexes subject -> target with these
functions. Subjects compare case-insensitively (`subject_key`).
"""

from __future__ import annotations

import importlib
from functools import cache
from types import ModuleType

from social_recording.domain.urls import Platform, parse_canonical, to_canonical
from social_recording.platforms.catalogue import CATALOGUE


def subject_key(subject: str) -> str:
    """The form subjects are matched in (case-insensitive)."""
    return subject.casefold()


def canonical_or_none(url: str) -> str | None:
    """`to_canonical(url)`, or None when the value is not a URL it accepts."""
    try:
        return to_canonical(url)
    except ValueError:
        return None


@cache
def platform_fake(platform: Platform) -> ModuleType | None:
    """The platform's fake module (`<package>.fake`), None for a platform with no generator."""
    descriptor = CATALOGUE[platform]
    if not descriptor.has_generator:
        return None
    return importlib.import_module(f"{descriptor.package}.fake")


def target_subjects(url: str) -> list[str]:
    """The subjects the real client requests for canonical `url`, the primary one first; [] when the
    URL makes no request (zero-call shapes, invites, a platform without a generator, unparseable)."""
    try:
        parsed = parse_canonical(url)
    except ValueError:
        return []
    fake = platform_fake(parsed.platform)
    return [] if fake is None else list(fake.subjects(parsed))
