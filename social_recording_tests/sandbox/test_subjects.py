"""Sandbox subjects for the one canonical form per target (its spec.py): what each request asks about."""

from __future__ import annotations

import pytest

from social_recording.domain.urls import to_canonical
from social_recording.platforms.x.fake import x_tweet_author_hint
from social_recording.sandbox.subjects import target_subjects


@pytest.mark.parametrize(
    ("raw", "subjects"),
    [
        ("https://twitter.com/i/web/status/1910000000000000001", ["tweet:1910000000000000001"]),
        ("https://fxtwitter.com/other/status/1910000000000000001", ["tweet:1910000000000000001"]),
        ("https://x.com/@QaHandle", ["user:qahandle"]),
        ("https://www.instagram.com/tv/QaIgCode1/", ["apify:https://instagram.com/p/QaIgCode1"]),
        ("https://www.reddit.com/r/s/comments/abc12/slug", ["apify:https://reddit.com/comments/abc12"]),
        ("https://m.tiktok.com/v/7410000000000000001.html", ["apify:https://tiktok.com/@/video/7410000000000000001"]),
        ("https://www.tiktok.com/@Qa.Tt", ["apify:https://tiktok.com/@qa.tt"]),
    ],
)
def test_variants_of_one_target_ask_one_subject(raw: str, subjects: list[str]) -> None:
    assert target_subjects(to_canonical(raw)) == subjects


def test_bare_at_is_no_tiktok_profile() -> None:
    assert target_subjects("https://tiktok.com/@") == []


def test_canonical_tweet_has_no_handle() -> None:
    assert target_subjects("https://x.com/i/status/5") == ["tweet:5"]


@pytest.mark.parametrize(
    ("raw", "hint"),
    [
        ("https://twitter.com/SolDog/status/12?s=20", ("12", "SolDog")),
        ("https://mobile.twitter.com/@SolDog/statuses/12/photo/1", ("12", "SolDog")),
        ("https://fxtwitter.com/other_one/status/12", ("12", "other_one")),
        (" https://X.COM/a/status/12 ", ("12", "a")),
        ("https://x.com/i/status/12", None),  # the canonical form names no author
        ("https://x.com/i/web/status/12", None),
        ("https://x.com/a", None),
        ("https://example.com/a/status/12", None),
        ("https://x.com/a/status/12abc", None),
    ],
)
def test_x_tweet_author_hint_reads_raw_urls_only(raw: str, hint: tuple[str, str] | None) -> None:
    assert x_tweet_author_hint(raw) == hint
