"""What a platform's sandbox fake (`social_recording/platforms/<platform>/fake.py`) builds on, in one
module: the world it is made from (`FakeWorld`), the provider interface the transport routes to, the
reply helpers, the scenario's outcomes, the deterministic content. The fakes import the sandbox only
through here, and nothing in the sandbox imports this module but the transport, which loads the fakes
by convention from their descriptor's package (docs/architecture.md, "Layers" and "The sandbox").
"""

from __future__ import annotations

from dataclasses import dataclass

from social_recording.sandbox._det import EPOCH_END, Det, iso_ms, iso_s, twitter_date
from social_recording.sandbox.providers import _text as fake_content
from social_recording.sandbox.providers._common import (
    MISSING,
    NO_CALL,
    SANDBOX_PUBLIC_ADDRESS,
    Call,
    FailureLadder,
    Outcomes,
    Provider,
    RateWindow,
    Reply,
    TargetProvider,
    body_json,
    html_reply,
    json_reply,
    plain_error_page,
)
from social_recording.sandbox.providers.shortlink import Redirects
from social_recording.sandbox.scenario import INVALID_UNSERVABLE, OutcomeKind, Scenario
from social_recording.sandbox.subjects import canonical_or_none, target_subjects


@dataclass(frozen=True)
class FakeWorld:
    """What a provider account's fakes are built from (`<package>.fake.make_fakes(world)`)."""

    scenario: Scenario
    outcomes: Outcomes
    redirects: Redirects


__all__ = [
    "EPOCH_END",
    "INVALID_UNSERVABLE",
    "MISSING",
    "NO_CALL",
    "SANDBOX_PUBLIC_ADDRESS",
    "Call",
    "Det",
    "FailureLadder",
    "FakeWorld",
    "OutcomeKind",
    "Outcomes",
    "Provider",
    "RateWindow",
    "Redirects",
    "Reply",
    "Scenario",
    "TargetProvider",
    "body_json",
    "canonical_or_none",
    "fake_content",
    "html_reply",
    "iso_ms",
    "iso_s",
    "json_reply",
    "plain_error_page",
    "target_subjects",
    "twitter_date",
]
