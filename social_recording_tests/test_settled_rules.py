"""The numbers the rules were given, each asserted where a reader would look for it, with the reason
in docs/architecture.md ("Settled numbers"): the ones that differ from the original system say why,
the others match it. A change to any of them is a decision, so it fails here first."""

from __future__ import annotations

import inspect
from datetime import timedelta

import pytest
from pydantic import ValidationError

from social_recording.dagster_defs.jobs.retry import RetrySelectConfig
from social_recording.dagster_defs.resources import RecordingPolicyResource
from social_recording.domain.dedupe import DEDUPE_TTL
from social_recording.domain.policy import DEFAULT_AF_INVESTOR_THRESHOLD, DEFAULT_MAX_ATTEMPTS
from social_recording.domain.url_machine import Rules
from social_recording.locks.base import Lease
from social_recording.locks.extender import _Renewal
from social_recording.recording.candidates import MAX_LIMIT
from social_recording.recording.processor import TOKEN_LOCK_TTL_S
from social_recording.recording.reconcile import DEFAULT_MIN_AF_COUNT
from social_recording.recording.url_recorder import URL_LOCK_TTL_S
from social_recording.settings import Settings
from social_recording.upstream.shortlinks import ShortlinkResolver
from social_recording.upstream.tracker import TrackerClient


def test_the_budget_and_the_af_floor_are_defined_once() -> None:
    assert (DEFAULT_MAX_ATTEMPTS, DEFAULT_AF_INVESTOR_THRESHOLD) == (5, 3)
    fields = Settings.model_fields
    assert fields["max_attempts"].default == DEFAULT_MAX_ATTEMPTS
    assert fields["af_investor_threshold"].default == DEFAULT_AF_INVESTOR_THRESHOLD
    policy = RecordingPolicyResource.model_fields
    assert policy["max_attempts"].default == DEFAULT_MAX_ATTEMPTS
    assert policy["af_investor_threshold"].default == DEFAULT_AF_INVESTOR_THRESHOLD
    assert DEFAULT_MIN_AF_COUNT == DEFAULT_AF_INVESTOR_THRESHOLD


def test_the_reuse_window_is_fourteen_days_and_the_rules_default_to_it() -> None:
    assert timedelta(days=14) == DEDUPE_TTL
    assert Rules(max_attempts=1, min_interval=timedelta(0)).ttl == DEDUPE_TTL


@pytest.mark.parametrize("ttl", [TOKEN_LOCK_TTL_S, URL_LOCK_TTL_S])
def test_a_held_lock_is_renewed_every_third_of_its_ttl(ttl: float) -> None:
    renewal = _Renewal(None, Lease("k", "o", held=True, fence=1), ttl, 0.0)  # type: ignore[arg-type]
    assert renewal.interval == pytest.approx(ttl / 3)


def test_the_token_lock_lives_60_seconds() -> None:
    """Half the original 120 s: it is renewed every 20 s while held, so the TTL only bounds how long a
    crashed run blocks its tokens; the catch-up after a killed run waits for it."""
    assert TOKEN_LOCK_TTL_S == 60.0


def test_a_retry_run_takes_at_most_200_urls() -> None:
    assert MAX_LIMIT == 200
    assert RetrySelectConfig(limit=200).limit == 200
    with pytest.raises(ValidationError, match="200"):
        RetrySelectConfig(limit=201)


@pytest.mark.parametrize(("cls", "seconds"), [(TrackerClient, 5.0), (ShortlinkResolver, 5.0)])
def test_upstream_requests_time_out_after_five_seconds(cls: type, seconds: float) -> None:
    """The tracker's requests and each shortlink hop: a slow upstream is retried later, not waited for."""
    assert inspect.signature(cls.__init__).parameters["timeout_s"].default == seconds
