"""Reserved first path segments are defined once (`domain.urls`) and the canonicaliser, the generators
and the sandbox agree on them.

They used to be written three times and had drifted: the sandbox gave `github.com/models` or
`github.com/users` a provider subject the generator never requests, `x.com/account` was fetched as
the profile of a user "account" (a paid call for X's own settings page), `x.com/about/media` folded
like a profile tab, `instagram.com/share` was read as a username, and a 16-character legacy X handle
had no sandbox subject although the generator fetches it."""

from __future__ import annotations

import httpx
import pytest

from social_recording.domain.urls import Platform, to_canonical
from social_recording.platforms.base import ExternalFetchError, GenerateResult, Generator
from social_recording.platforms.github.spec import GITHUB_RESERVED
from social_recording.platforms.instagram.spec import INSTAGRAM_RESERVED
from social_recording.platforms.registry import build_registry
from social_recording.platforms.tiktok.spec import TIKTOK_NON_POST_PATHS
from social_recording.platforms.x.spec import X_RESERVED
from social_recording.sandbox.subjects import target_subjects
from social_recording_tests.platforms.mocks import APIFY_TOKEN, CTX, TWITTERAPI_KEY, Recorder, provider_keys


def _generate(generator: Generator, url: str) -> GenerateResult | ExternalFetchError:
    try:
        return generator.generate(url, CTX)
    except ExternalFetchError as exc:
        return exc


def _no_call(platform: Platform, url: str) -> None:
    """The generator answers `url` without a request (a zero-call page, or a no-call failure)."""
    rec = Recorder(lambda request: httpx.Response(500))
    registry = build_registry(provider_keys(twitterapi_io_key=TWITTERAPI_KEY, apify_token=APIFY_TOKEN),
                              transport=rec.transport, sleep=lambda s: None)
    generator = registry.generators[platform]
    outcome = _generate(generator, url)
    assert rec.count == 0, url
    assert outcome.attempted is False, url


@pytest.mark.parametrize("name", sorted(GITHUB_RESERVED - {"orgs", "sponsors"}))
def test_github_reserved_pages_make_no_request_anywhere(name: str) -> None:
    url = to_canonical(f"https://github.com/{name}/x/y")
    assert url == f"https://github.com/{name}/x/y"  # not folded like a repo's sub-page
    assert target_subjects(f"https://github.com/{name}") == []
    _no_call(Platform.GITHUB, f"https://github.com/{name}")


@pytest.mark.parametrize("name", sorted(X_RESERVED))
def test_x_reserved_pages_make_no_request_anywhere(name: str) -> None:
    assert to_canonical(f"https://x.com/{name}/media") == f"https://x.com/{name}/media"  # not a profile tab
    assert target_subjects(f"https://x.com/{name}") == []
    _no_call(Platform.X, f"https://x.com/{name}")


@pytest.mark.parametrize("name", sorted(INSTAGRAM_RESERVED))
def test_instagram_reserved_pages_make_no_request_anywhere(name: str) -> None:
    assert target_subjects(f"https://instagram.com/{name}") == []
    _no_call(Platform.INSTAGRAM, f"https://instagram.com/{name}")


@pytest.mark.parametrize("name", sorted(TIKTOK_NON_POST_PATHS))
def test_tiktok_pages_make_no_request_anywhere(name: str) -> None:
    assert target_subjects(f"https://tiktok.com/{name}") == []
    _no_call(Platform.TIKTOK, f"https://tiktok.com/{name}")


def test_the_drifted_cases() -> None:
    # each of these disagreed between two of the three copies
    assert target_subjects("https://github.com/models") == [] and target_subjects("https://github.com/users") == []
    assert target_subjects("https://x.com/account") == []
    assert to_canonical("https://x.com/about/media") == "https://x.com/about/media"
    assert target_subjects("https://instagram.com/share") == []
    legacy = "https://x.com/" + "a" * 16  # longer than today's 15 characters: old accounts have them
    assert target_subjects(legacy) == [f"user:{'a' * 16}"]
    assert to_canonical("https://github.com/enterprises/acme/settings") == "https://github.com/enterprises/acme/settings"
