"""Each platform's behaviour cases from its folder (`social_recording/platforms/<p>/cases.json`, read by
folder_cases.py): the URL, the requests its generator makes, and the graph (keys, fields, metrics,
links) or the error code it ends in, replayed on recorded and written answers."""

from __future__ import annotations

from typing import Any

import pytest

from social_recording.domain.graph import SocialObject
from social_recording.domain.urls import to_canonical
from social_recording.platforms.base import ExternalFetchError
from social_recording.platforms.catalogue import CATALOGUE
from social_recording.platforms.registry import generator_factory
from social_recording_tests.platforms.folder_cases import FolderCases, folder_cases
from social_recording_tests.platforms.mocks import CTX, Recorder, Sleeps, provider_keys

CASES = [(platform_cases, case) for platform_cases in folder_cases() for case in platform_cases.cases]


def _check_object(obj: SocialObject | None, expected: dict[str, Any]) -> None:
    assert obj is not None
    for name in ("platform_key", "subtype", "avatar_url"):
        if name in expected:
            assert getattr(obj, name) == expected[name], name
    assert {k: obj.fields.get(k) for k in expected.get("fields", {})} == expected.get("fields", {})
    assert {k: obj.metrics.get(k) for k in expected.get("metrics", {})} == expected.get("metrics", {})
    for url in expected.get("outbound_urls", []):
        assert url in obj.outbound_urls, obj.outbound_urls
    if "media_count" in expected:
        assert len(obj.media_urls) == expected["media_count"], obj.media_urls


@pytest.mark.parametrize(("platform_cases", "case"), CASES,
                         ids=[f"{p.platform.value}: {c['name']}" for p, c in CASES])
def test_a_platform_case_from_its_folder(platform_cases: FolderCases, case: dict[str, Any]) -> None:
    """The URL as a token holds it: the entry canonicalises it before the generator sees it."""
    recorder = Recorder(platform_cases.handler(case["answers"]))
    keys = provider_keys(**{v.lower(): "folder-case-key" for v in CATALOGUE.key_variables()})
    generator = generator_factory(CATALOGUE[platform_cases.platform])(keys, transport=recorder.transport,
                                                                      sleep=Sleeps())
    expect = case["expect"]
    if "error" in expect:
        with pytest.raises(ExternalFetchError) as info:
            generator.generate(to_canonical(case["url"]), CTX)
        assert info.value.code.value == expect["error"], info.value
        assert info.value.attempted is expect.get("attempted", True)
    else:
        result = generator.generate(to_canonical(case["url"]), CTX)
        assert result.attempted is expect.get("attempted", True)
        group = result.graph.groups[0] if result.graph.groups else None
        for kind in ("content", "account", "venue"):
            if kind in expect:
                assert group is not None
                _check_object(getattr(group, kind), expect[kind])
    assert recorder.count == expect.get("requests", recorder.count)
    if "held_until" in expect:  # every process holds the service until the answer's window resets
        assert [(service, round(asked_at + wait)) for service, wait, asked_at in recorder.penalties.waits] == [
            (CATALOGUE[platform_cases.platform].account.name, expect["held_until"])], recorder.penalties.waits
    if "params" in case:
        params = recorder.requests[0].url.params
        assert {k: params.get(k) for k in case["params"]} == case["params"]
