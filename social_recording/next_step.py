"""What happens next to one URL, in words an operator acts on (`status --url`).

The per-URL state machine's own `decide` says what recording a new holder of the URL does now
(reuse the window's answer, adopt a spent streak or a fresh failure, or call); the recorder's gates
before a call (no usable generator: `unsupported`; a paid platform while paid calls are off:
`skipped_paid`) come after it, as in `recording/attempt.py`. Nothing here is a rule of its own:
it reads the same rules with the settings the deployment runs with (docs/architecture.md, "The
per-URL state machine").
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime

from social_recording.domain.models import SocialUrl, UrlState, ensure_utc
from social_recording.domain.status import ABSORBING, FetchStatus
from social_recording.domain.url_machine import Act, Rules, RunIntent, Why, decide, next_call_at
from social_recording.domain.urls import Platform

ENABLE_PAID = "SOCIAL_RECORDING_ENABLE_PAID"


@dataclass(frozen=True)
class NextStep:
    new_holder: FetchStatus
    """What a token that starts holding the URL now is recorded as (PENDING: its recording calls)."""
    calls: bool
    """Whether that recording sends a provider request."""
    action: str
    """What happens next, and what an operator can do about it."""


def _iso(value: datetime) -> str:
    return ensure_utc(value).isoformat(timespec="seconds").replace("+00:00", "Z")


def _waiting(holders: Sequence[tuple[str, SocialUrl]], status: FetchStatus) -> str:
    behind = sorted({el.status.value for _, el in holders if el.status is not status and el.status not in ABSORBING})
    if not behind:
        return ""
    return (f"; holders still {', '.join(behind)} take it at their next recording (the retry job takes error and "
            "pending elements)")


def next_step(state: UrlState | None, url: str, platform: Platform, *, now: datetime, rules: Rules,
              enable_paid: bool, paid: bool, usable: Collection[Platform],
              holders: Sequence[tuple[str, SocialUrl]] = ()) -> NextStep:
    """The next step of `url` for a new holder now, and for the holders already there."""
    now = ensure_utc(now)
    decision = decide(state, SocialUrl(url=url), request=RunIntent(Why.LIVE, since=now), selected=None, now=now,
                      rules=rules)
    if decision.act is Act.REUSE and decision.status is not None:
        until = ("" if state is None or state.answered_at is None
                 else f" until {_iso(state.answered_at + rules.ttl)}, when the next recording calls again")
        return NextStep(decision.status, False,
                        f"the window's answer {decision.status.value} is reused without a call{until}"
                        + _waiting(holders, decision.status))
    if decision.act is Act.ADOPT and decision.status is FetchStatus.EXHAUSTED:
        return NextStep(FetchStatus.EXHAUSTED, False,
                        f"{decision.detail}: no run calls it again; `retry_job` with `statuses: [exhausted]` "
                        "re-examines its holders once (one call)")
    if decision.act is Act.ADOPT and decision.status is not None:
        due = (next_call_at(state, now, rules) if state else None) or now
        return NextStep(decision.status, False,
                        f"its last call, at {_iso(state.attempted_at) if state and state.attempted_at else '?'}, "
                        f"failed ({state.streak if state else 0} of {rules.max_attempts} failed calls in a row): "
                        f"recorded {decision.status.value} without a call until its back-off ends at {_iso(due)}; "
                        "then the retry job calls it again")
    if platform not in usable:
        return NextStep(FetchStatus.UNSUPPORTED, False,
                        f"no usable generator for {platform.value} (a missing provider key, or none written): "
                        "recorded unsupported without a call; once it has one, the retry job takes the holders "
                        "recorded for want of it")
    if paid and not enable_paid:
        return NextStep(FetchStatus.SKIPPED_PAID, False,
                        f"{platform.value} is paid and paid calls are off ({ENABLE_PAID} is not true): recorded "
                        f"skipped_paid without a call; with {ENABLE_PAID}=true where the jobs run, the retry job "
                        "calls it once and its other holders reuse the answer")
    if decision.act is Act.RESUME:
        return NextStep(FetchStatus.PENDING, True,
                        f"the next recording {decision.detail} (the request is paid once; no new submission); the "
                        "retry job takes pending and error holders")
    streak = f" (after {state.streak} failed call(s) in a row, back-off over)" if state and state.streak else ""
    return NextStep(FetchStatus.PENDING, True,
                    f"due: the next recording of any holder calls it{streak}; the retry job takes pending and "
                    "error holders" + ("" if state else ", and nothing has been recorded for this URL yet"))

