"""Scenario loading: every bad field is named with its file; the bundled demo covers what it claims."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from social_recording.domain.urls import Platform, platform_of, to_canonical
from social_recording.sandbox import (
    DEMO_SCENARIO_PATH,
    TRACKER_BASE_URL,
    Ledger,
    OutcomeKind,
    SandboxTransport,
    ScenarioError,
    load_scenario,
    sandbox_resolve_host,
)
from social_recording.sandbox.scenario import ScriptedOutcome, parse_scenario, unservable_reason
from social_recording.upstream.profile import TokenProfileReader
from social_recording.upstream.shortlinks import ShortlinkResolver
from social_recording.upstream.tracker import TrackerClient
from social_recording_tests.sandbox._helpers import token

GOOD_TOKEN = token("Addr1", last="2026-11-01T10:00:00Z")


def write(tmp_path: Path, data: Any, name: str = "scenario.json") -> Path:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return path


def load_error(tmp_path: Path, data: Any) -> str:
    path = write(tmp_path, data)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    message = str(info.value)
    assert str(path) in message, message
    return message


# ------------------------------------------------------------------ outcomes


@pytest.mark.parametrize(
    ("text", "kind", "n"),
    [("ok", OutcomeKind.OK, 0), ("not_found", OutcomeKind.NOT_FOUND, 0), ("blocked", OutcomeKind.BLOCKED, 0),
     ("error", OutcomeKind.ERROR, 0), ("flaky:2", OutcomeKind.FLAKY, 2), ("flaky:17", OutcomeKind.FLAKY, 17),
     ("invalid", OutcomeKind.INVALID, 0), ("rate_limited", OutcomeKind.RATE_LIMITED, 0),
     ("credit_exhausted", OutcomeKind.CREDIT_EXHAUSTED, 0)],
)
def test_outcome_parse_round_trips(text: str, kind: OutcomeKind, n: int) -> None:
    outcome = ScriptedOutcome.parse(text)
    assert (outcome.kind, outcome.flaky_calls) == (kind, n)
    assert str(outcome) == text


@pytest.mark.parametrize("bad", ["flaky:x", "teleport", "flaky", "flaky:0", "flaky:-1", "rate-limited", "OK", ""])
def test_unknown_outcome_names_file_target_and_value(tmp_path: Path, bad: str) -> None:
    message = load_error(tmp_path, {"targets": {"https://x.com/foo": {"outcome": bad}}})
    assert "targets['https://x.com/foo'].outcome" in message
    assert repr(bad) in message


def test_outcome_must_be_a_string(tmp_path: Path) -> None:
    message = load_error(tmp_path, {"targets": {"https://x.com/foo": {"outcome": 3}}})
    assert "outcome must be a string" in message


# ------------------------------------------------------------------ tokens


@pytest.mark.parametrize(
    ("field", "value", "needle"),
    [
        ("last_transfer_at", "2026-13-45T00:00:00Z", "tokens[0].last_transfer_at"),
        ("first_transfer_at", "yesterday", "tokens[0].first_transfer_at"),
        ("last_transfer_at", "2026-11-01T10:00:00", "has no UTC offset"),
        ("investor_count", -1, "tokens[0].investor_count"),
        ("investor_count", True, "not a boolean"),
        ("address", " padded ", "tokens[0].address"),
        ("colour", "red", "tokens[0].colour"),
    ],
)
def test_bad_token_field_is_named(tmp_path: Path, field: str, value: Any, needle: str) -> None:
    bad = dict(GOOD_TOKEN, **{field: value})
    assert needle in load_error(tmp_path, {"tokens": [bad]})


def test_missing_required_token_field_is_named(tmp_path: Path) -> None:
    bad = {k: v for k, v in GOOD_TOKEN.items() if k != "last_transfer_at"}
    assert "tokens[0].last_transfer_at: Field required" in load_error(tmp_path, {"tokens": [bad]})


def test_first_transfer_after_last_is_rejected(tmp_path: Path) -> None:
    bad = dict(GOOD_TOKEN, first_transfer_at="2026-11-02T00:00:00Z")
    assert "is after last_transfer_at" in load_error(tmp_path, {"tokens": [bad]})


def test_duplicate_token_address_is_rejected(tmp_path: Path) -> None:
    assert "duplicate token address 'Addr1'" in load_error(tmp_path, {"tokens": [GOOD_TOKEN, GOOD_TOKEN]})


def test_dates_are_kept_in_utc(tmp_path: Path) -> None:
    sc = load_scenario(write(tmp_path, {"tokens": [dict(GOOD_TOKEN, last_transfer_at="2026-11-01T12:00:00+02:00",
                                                        first_transfer_at="2026-11-01T09:00:00Z")]}))
    assert sc.tokens[0].last_transfer_at.isoformat() == "2026-11-01T10:00:00+00:00"


def test_junk_social_values_are_kept_raw(tmp_path: Path) -> None:
    sc = load_scenario(write(tmp_path, {"tokens": [dict(GOOD_TOKEN, website="TBA", twitter="-", telegram=0,
                                                        discord=None)]}))
    assert sc.tokens[0].social_values() == {"website": "TBA", "twitter": "-", "telegram": 0, "discord": None}


# ------------------------------------------------------------------ targets / redirects / file


@pytest.mark.parametrize(
    ("key", "canonical"),
    [("https://twitter.com/Foo/status/1?s=20", None),  # whatever X's canonical tweet shape is today
     ("https://www.youtube.com/watch?v=dQw4w9WgXcQ", "https://youtube.com/watch?v=dQw4w9WgXcQ"),
     ("https://example.com/", "https://example.com")],
)
def test_non_canonical_target_key_is_named_with_its_canonical_form(
    tmp_path: Path, key: str, canonical: str | None
) -> None:
    expected = to_canonical(key)
    assert expected != key and (canonical is None or expected == canonical)
    message = load_error(tmp_path, {"targets": {key: {"outcome": "ok"}}})
    assert repr(key) in message and "not canonical" in message and repr(expected) in message


def test_target_key_that_is_no_url_is_rejected(tmp_path: Path) -> None:
    assert "'TBA'" in load_error(tmp_path, {"targets": {"TBA": {"outcome": "ok"}}})


def test_targets_meaning_the_same_subject_must_agree(tmp_path: Path) -> None:
    # t.me/boost/<name> and t.me/<name> are different canonical URLs asking for the same public page
    boost, page = to_canonical("https://t.me/boost/foochan"), to_canonical("https://t.me/foochan")
    assert boost != page
    message = load_error(tmp_path, {"targets": {boost: {"outcome": "ok"}, page: {"outcome": "blocked"}}})
    assert "telegram:foochan" in message


def test_negative_latency_and_unknown_target_field_are_named(tmp_path: Path) -> None:
    message = load_error(tmp_path, {"default_latency_ms": -1, "targets": {
        "https://x.com/foo": {"outcome": "ok", "latency_ms": -5, "colour": 1}}})
    assert "default_latency_ms" in message
    assert "targets['https://x.com/foo'].latency_ms" in message
    assert "targets['https://x.com/foo'].colour" in message


def test_redirect_key_must_be_a_url(tmp_path: Path) -> None:
    assert "redirect key 'bit.ly/x'" in load_error(tmp_path, {"redirects": {"bit.ly/x": "https://x.com/a"}})


def test_unknown_top_level_field_invalid_json_missing_file(tmp_path: Path) -> None:
    assert "tokenz" in load_error(tmp_path, {"tokenz": []})
    assert "line 1 column" in load_error(tmp_path, "{not json")
    assert "must be a JSON object" in load_error(tmp_path, "[]")
    with pytest.raises(ScenarioError, match="cannot read scenario file"):
        load_scenario(tmp_path / "absent.json")


# ------------------------------------------------------------------ outcomes the sandbox cannot serve

# Raw URLs: each key is canonicalised in the test, so the table survives changes of canonical shapes.
UNSERVABLE = [
    ("https://x.com/foo/status/1851234567890123456", "blocked", "no shape for a blocked tweet", "not_found"),
    ("https://x.com/i/status/1851234567890123456", "blocked", "no shape for a blocked tweet", "not_found"),
    ("https://www.youtube.com/watch?v=dQw4w9WgXcQ", "blocked", "hides private or blocked", "not_found"),
    ("https://youtube.com/@somechannel", "blocked", "hides private or blocked", "not_found"),
    ("https://youtube.com/playlist?list=PLabcdefghijk", "blocked", "hides private or blocked", "not_found"),
    ("https://github.com/o/r", "credit_exhausted", "GitHub has no credits", "rate_limited"),
    ("https://github.com/someone", "credit_exhausted", "GitHub has no credits", "rate_limited"),
    ("https://t.me/somechannel", "credit_exhausted", "t.me pages have no quota", "rate_limited"),
    ("https://x.com/someone", "invalid", "only an X tweet's quote chain", "x.com/i/status/"),
    ("https://www.tiktok.com/@cat/video/7302222222222222222", "invalid", "only an X tweet", "x.com/i/status/"),
    ("https://instagram.com/p/C9xYzAbCdEf", "invalid", "only an X tweet", "x.com/i/status/"),
    ("https://reddit.com/r/solana/comments/1gk2x7q", "invalid", "only an X tweet", "x.com/i/status/"),
    ("https://www.youtube.com/watch?v=dQw4w9WgXcQ", "invalid", "only an X tweet", "x.com/i/status/"),
    ("https://github.com/o/r", "invalid", "only an X tweet", "x.com/i/status/"),
    ("https://t.me/somechannel", "invalid", "only an X tweet", "x.com/i/status/"),
    ("https://shibasol.io", "invalid", "only an X tweet", "x.com/i/status/"),
    ("https://discord.gg/abc", "blocked", "no blocked answer", "not_found"),
    ("https://discord.gg/abc", "credit_exhausted", "no credits", "rate_limited"),
    ("https://discord.com/channels/1/2", "error", "no provider request is ever made", "remove the target"),
    ("https://discord.com/channels/1/2", "flaky:2", "no provider request is ever made", "remove the target"),
    ("https://t.me/+AbCdEfGh123", "not_found", "no provider request is ever made", "remove the target"),
    ("https://t.me/+AbCdEfGh123", "blocked", "no provider request is ever made", "remove the target"),
]


@pytest.mark.parametrize(("raw", "outcome", "why", "instead"), UNSERVABLE)
def test_outcome_the_sandbox_cannot_serve_is_rejected(
    tmp_path: Path, raw: str, outcome: str, why: str, instead: str
) -> None:
    key = to_canonical(raw)
    message = load_error(tmp_path, {"targets": {key: {"outcome": outcome}}})
    assert f"targets[{key!r}].outcome" in message  # the target
    assert f"outcome {outcome!r} cannot be served" in message  # the outcome
    assert why in message and instead in message  # why, and what to use instead
    # the same data is accepted by the lenient parser (the transport's own tests rely on it) ...
    assert parse_scenario({"targets": {key: {"outcome": outcome}}}).outcome(key) == ScriptedOutcome.parse(outcome)
    # ... and rejected by the strict one
    with pytest.raises(ScenarioError, match="cannot be served"):
        parse_scenario({"targets": {key: {"outcome": outcome}}}, servable_only=True)


SERVABLE = [
    *[("https://x.com/foo/status/1851234567890123456", o)
      for o in ("not_found", "error", "flaky:2", "rate_limited", "credit_exhausted", "invalid")],
    *[("https://x.com/someone", o) for o in ("not_found", "blocked", "rate_limited", "credit_exhausted")],
    *[("https://www.youtube.com/watch?v=dQw4w9WgXcQ", o) for o in ("not_found", "credit_exhausted", "flaky:1")],
    ("https://youtube.com/@somechannel", "not_found"),
    *[("https://github.com/o/r", o) for o in ("not_found", "blocked", "rate_limited", "error")],
    *[("https://t.me/somechannel", o) for o in ("not_found", "blocked", "rate_limited")],
    *[("https://shibasol.io", o) for o in ("not_found", "blocked", "credit_exhausted", "rate_limited")],
    ("https://www.tiktok.com/@cat/video/7302222222222222222", "blocked"),
    ("https://www.tiktok.com/@cat", "credit_exhausted"),
    ("https://instagram.com/privatewhale", "blocked"),
    ("https://reddit.com/r/solana", "blocked"),
    ("https://discord.gg/abc", "ok"),
]


@pytest.mark.parametrize(("raw", "outcome"), SERVABLE)
def test_outcome_the_sandbox_serves_is_accepted(tmp_path: Path, raw: str, outcome: str) -> None:
    key = to_canonical(raw)
    assert unservable_reason(key, ScriptedOutcome.parse(outcome)) is None
    sc = load_scenario(write(tmp_path, {"targets": {key: {"outcome": outcome, "latency_ms": 5}}}))
    assert sc.outcome(key) == ScriptedOutcome.parse(outcome)


def test_every_unservable_target_is_reported_at_once(tmp_path: Path) -> None:
    tweet, video = to_canonical("https://x.com/i/status/77"), to_canonical("https://youtu.be/dQw4w9WgXcQ")
    message = load_error(tmp_path, {"targets": {
        tweet: {"outcome": "blocked"},
        video: {"outcome": "blocked"},
        "https://github.com/o/r": {"outcome": "credit_exhausted"},
        "https://shibasol.io": {"outcome": "not_found"},
    }})
    assert "(3 problem(s))" in message
    assert repr(tweet) in message and repr(video) in message and "'https://github.com/o/r'" in message
    assert "shibasol" not in message


def test_unservable_reason_ignores_ok_and_leaves_bad_keys_to_the_key_check() -> None:
    assert unservable_reason(to_canonical("https://discord.gg/abc"), OutcomeKind.OK) is None
    assert unservable_reason("https://www.YouTube.com/@x/", OutcomeKind.BLOCKED) is None
    assert unservable_reason("TBA", OutcomeKind.INVALID) is None


# ------------------------------------------------------------------ the bundled demo


def _demo_profiles(tmp_path: Path) -> dict[str, list[str]]:
    """Every demo token the tracker offers, read by the REAL reader (tracker client, shortlink
    resolver, canonicaliser) through the sandbox: address -> canonical URLs."""
    sc = load_scenario(DEMO_SCENARIO_PATH)
    transport = SandboxTransport(sc, Ledger(tmp_path / "ledger.jsonl"), sleep=lambda s: None)
    from pydantic import SecretStr

    tracker = TrackerClient(TRACKER_BASE_URL, SecretStr("k"), ["g"], transport=transport, sleep=lambda s: None)
    reader = TokenProfileReader(tracker, ShortlinkResolver(transport=transport, resolve_host=sandbox_resolve_host))
    out: dict[str, list[str]] = {}
    for t in sc.tokens:
        profile = reader.read(t.address)
        if profile is not None:
            out[t.address] = list(profile.urls)
    return out


def test_scenario_dumps_back_to_an_equal_scenario() -> None:
    sc = load_scenario(DEMO_SCENARIO_PATH)
    dumped = json.loads(sc.model_dump_json())
    assert dumped["targets"][to_canonical("https://x.com/otter_sol/status/1852000000000000007")]["outcome"] == "flaky:2"
    assert parse_scenario(dumped) == sc


def test_the_demo_scenario_is_the_composition_of_the_base_and_every_platforms_part() -> None:
    """A platform's part of the demo is its folder's demo.json; the file runs read is generated."""
    from social_recording.sandbox.demo_scenario import composed_text

    assert DEMO_SCENARIO_PATH.read_text(encoding="utf-8") == composed_text(), (
        "social_recording/sandbox/scenarios/demo.json is not demo_base.json plus every "
        "social_recording/platforms/<p>/demo.json: run `python -m social_recording.sandbox.demo_scenario`")


def test_demo_scenario_loads_and_covers_what_it_claims(tmp_path: Path) -> None:
    sc = load_scenario(DEMO_SCENARIO_PATH)
    assert len(sc.tokens) >= 40
    assert len({t.last_transfer_at.date() for t in sc.tokens}) >= 7
    counts = sorted(t.investor_count for t in sc.tokens)
    assert counts[0] <= 1 and any(c == 2 for c in counts) and counts[-1] >= 10  # below and above the threshold 3
    assert 1 <= sum(1 for t in sc.tokens if not t.image_url) <= 3
    kinds = {spec.outcome.kind for spec in sc.targets.values()}
    assert kinds >= set(OutcomeKind), set(OutcomeKind) - kinds
    assert any(spec.outcome == ScriptedOutcome(OutcomeKind.FLAKY, 2) for spec in sc.targets.values())
    # GitHub and Telegram have a target that fails past one call's retries and recovers on a retry, and
    # one that never recovers: the retry job visibly converges and exhausts. YouTube's never-recovering
    # target is its quota video, so no other YouTube target may still fail after its first call (the
    # quota stops the rest of a run's YouTube calls: test_demo.py's order-independence rule)
    for free in (Platform.GITHUB, Platform.TELEGRAM):
        outcomes = [spec.outcome for url, spec in sc.targets.items() if platform_of(url) is free]
        assert ScriptedOutcome(OutcomeKind.FLAKY, 3) in outcomes, free
        assert ScriptedOutcome(OutcomeKind.ERROR) in outcomes, free
    youtube = [spec.outcome for url, spec in sc.targets.items() if platform_of(url) is Platform.YOUTUBE]
    assert ScriptedOutcome(OutcomeKind.CREDIT_EXHAUSTED) in youtube and ScriptedOutcome(OutcomeKind.FLAKY, 2) in youtube
    assert any(spec.latency_ms for spec in sc.targets.values())
    junk = {v for t in sc.tokens for v in t.social_values().values() if isinstance(v, str) and not v.startswith("http")}
    assert {"TBA", "none", "-"} <= junk

    profiles = _demo_profiles(tmp_path)
    urls = [u for us in profiles.values() for u in us]
    platforms = {platform_of(u) for u in urls}
    assert platforms == set(Platform), (
        f"the demo records no URL of {sorted(p.value for p in set(Platform) - platforms)}: add a token linking "
        "one to social_recording/platforms/<p>/demo.json, then run `python -m social_recording.sandbox.demo_scenario`")
    owners: dict[str, set[str]] = defaultdict(set)
    for address, us in profiles.items():
        for u in us:
            owners[u].add(address)
    shared = {u for u, a in owners.items() if len(a) >= 2}
    assert any(platform_of(u) is Platform.X and "/status/" in u for u in shared), "the same tweet on several tokens"
    assert any(platform_of(u) is Platform.YOUTUBE for u in shared)
    # every non-ok target is reachable from some recorded token (otherwise the demo would not show it)
    for target, spec in sc.targets.items():
        if spec.outcome.kind is not OutcomeKind.OK:
            assert target in owners, f"{target} ({spec.outcome}) is on no recorded token"
    # alias / tracking-parameter / shortlink variants of one target
    raw_by_canonical: dict[str, set[str]] = defaultdict(set)
    from social_recording.sandbox.subjects import canonical_or_none

    for t in sc.tokens:
        for v in t.social_values().values():
            if isinstance(v, str):
                c = canonical_or_none(v)
                if c is not None:
                    raw_by_canonical[c].add(v)
    tweet = to_canonical("https://x.com/bonkdogsol/status/1851234567890123400")
    assert any("twitter.com" in v and "?s=" in v for v in raw_by_canonical[tweet])
    assert any(v.startswith("https://x.com/") for v in raw_by_canonical[tweet])
    video = "https://youtube.com/watch?v=Ot7erSo1aN4"
    assert any("youtu.be/" in v and "si=" in v for v in raw_by_canonical[video])
    assert any("youtube.com/watch?v=" in v for v in raw_by_canonical[video])
    assert any(k.startswith("https://t.co/") for k in sc.redirects) and any(k.startswith("https://bit.ly/") for k in sc.redirects)
    assert tweet in profiles[next(t.address for t in sc.tokens if t.twitter == "https://t.co/Bd0gS01a")]
    # paid targets are a minority, so paid-off vs paid-on runs differ visibly but not totally
    from social_recording.platforms.base import PAID_PLATFORMS

    distinct = set(owners)
    paid = {u for u in distinct if platform_of(u) in PAID_PLATFORMS}
    assert 0 < len(paid) < len(distinct) / 2
