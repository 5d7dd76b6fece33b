"""Run configuration, validated by Dagster before a run starts.

Users and scripts configure the three jobs through one node each — `retry_urls`, `reconcile_window`,
`record_tokens` — with the configs below (`{"ops": {"retry_urls": {"config": {...}}}}`). Each node is
a graph of stages; its config mapping hands every stage the part it needs (`stage_configs`).

No `from __future__ import annotations` here or in the op modules: Dagster reads config and resource
annotations at decoration time and cannot resolve string annotations.
"""

from enum import Enum
from typing import Any

from dagster import Config
from pydantic import Field, field_validator

from social_recording.domain.policy import DEFAULT_MIN_INTERVAL_MINUTES
from social_recording.domain.status import FetchStatus
from social_recording.recording.candidates import DEFAULT_LIMIT
from social_recording.recording.concurrency import (
    DEFAULT_PROVIDER_CONCURRENCY,
    MAX_PROVIDER_CONCURRENCY,
    check_provider_concurrency,
)
from social_recording.recording.job_pool import DEFAULT_MAX_WORKERS, MAX_WORKERS_LIMIT


def _workers() -> Any:
    return Field(default=DEFAULT_MAX_WORKERS, ge=1, le=MAX_WORKERS_LIMIT,
                 description="Tokens recorded in parallel (each token's URLs run side by side).")


_PROVIDER_CONCURRENCY_HELP = (
    "Concurrent provider calls per provider account in this run (1.."
    f"{MAX_PROVIDER_CONCURRENCY}); providers not named keep their default: "
    + ", ".join(f"{p} {n}" for p, n in sorted(DEFAULT_PROVIDER_CONCURRENCY.items()))
    + ". The providers' request rates are enforced separately, across every run, by the shared limiter."
)


class _CallBounds(Config):
    """The per-provider call bounds every recording stage takes (validated at launch)."""

    provider_concurrency: dict[str, int] = Field(default_factory=dict, description=_PROVIDER_CONCURRENCY_HELP)

    @field_validator("provider_concurrency")
    @classmethod
    def _known_providers(cls, v: dict[str, int]) -> dict[str, int]:
        return check_provider_concurrency(v)


class RetryableStatus(Enum):
    """Every FetchStatus but `ok`: a retry may never reopen a success (it would pay again for an
    answer already recorded, and `ok` is final).

    An Enum (not a free string) so that `statuses: [ok]` fails Dagster's config validation at
    launch, before any run exists.
    """

    not_found = "not_found"
    blocked = "blocked"
    invalid = "invalid"
    exhausted = "exhausted"
    error = "error"
    unsupported = "unsupported"
    skipped_paid = "skipped_paid"
    pending = "pending"


assert {s.value for s in RetryableStatus} == {s.value for s in FetchStatus} - {FetchStatus.OK.value}


def _set(**values: Any) -> dict[str, Any]:
    """A stage's config without the unset (None) values: the stage's own defaults apply."""
    return {"config": {k: v for k, v in values.items() if v is not None}}


# --------------------------------------------------------------------------- live
# Each job's user-facing config is the union of its stages' configs: every field is declared once,
# on the stage that uses it, and `stage_configs` hands each stage its part.


class TokenRef(Config):
    address: str = Field(min_length=1, description="Mint address.")
    symbol: str = Field(default="", description="Display symbol (informational).")


class LiveBatchConfig(_CallBounds):
    """The live recording stage."""

    tokens: list[TokenRef] = Field(description="Tokens to record, as launched by token_flow_sensor.")
    max_workers: int = _workers()


class RecordTokensConfig(LiveBatchConfig):
    """`live_tokens_job`: the batch token_flow_sensor launched (at most 20 tokens)."""

    def stage_configs(self) -> dict[str, Any]:
        return {
            "record_live_tokens": _set(tokens=[t.model_dump() for t in self.tokens], max_workers=self.max_workers,
                                       provider_concurrency=self.provider_concurrency or None),
        }


# --------------------------------------------------------------------------- reconcile


class WindowConfig(Config):
    """The window-reading stage."""

    min_af_count: int | None = Field(
        default=None, ge=1, description="AF investor floor; default SOCIAL_RECORDING_AF_INVESTOR_THRESHOLD."
    )


class RecordWindowConfig(_CallBounds):
    """The window-recording stage."""

    limit: int | None = Field(default=None, ge=1, description="Cap on tokens recorded in this run.")
    deadline_seconds: float | None = Field(
        default=None, gt=0, description="No token is started after this many seconds."
    )
    max_workers: int = _workers()


class ReconcileConfig(WindowConfig, RecordWindowConfig):
    """`reconcile_job`: record the tokens of the partition's UTC day that were never stored."""

    def stage_configs(self) -> dict[str, Any]:
        return {
            "read_reconcile_window": _set(min_af_count=self.min_af_count),
            "record_window_tokens": _set(limit=self.limit, deadline_seconds=self.deadline_seconds,
                                         max_workers=self.max_workers,
                                         provider_concurrency=self.provider_concurrency or None),
        }


# --------------------------------------------------------------------------- retry

STATUSES_HELP = (
    "Statuses to re-attempt. Leave empty for the default selection: error and pending, plus "
    "skipped_paid when paid calls are on and unsupported when a generator now exists for its "
    "platform (what a retry can change under this configuration). Naming statuses selects "
    "them as named, absorbing ones included (not_found, blocked, invalid, exhausted: one fresh "
    "call each). `ok` cannot be named: it is final, and re-opening it would pay again for an "
    "answer already recorded."
)


class RetrySelectConfig(Config):
    """The selection stage."""

    statuses: list[RetryableStatus] | None = Field(default=None, description=STATUSES_HELP)
    token_addresses: list[str] | None = Field(default=None, description="Only these tokens.")
    limit: int = Field(default=DEFAULT_LIMIT, ge=1, le=10_000, description="Cap on URLs.")
    min_interval_minutes: int = Field(
        default=DEFAULT_MIN_INTERVAL_MINUTES, ge=0,
        description="Back-off since the element's last recording (0: retry everything due now).",
    )

    def fetch_statuses(self) -> list[FetchStatus] | None:
        return None if not self.statuses else [FetchStatus(s.value) for s in self.statuses]


class RetryRecordConfig(_CallBounds):
    """The recording stage."""

    deadline_seconds: float | None = Field(default=None, gt=0, description="No URL started after this.")
    max_workers: int = _workers()


class RetryConfig(RetrySelectConfig, RetryRecordConfig):
    """`retry_job`: re-attempt URLs that are not converged. `ok` cannot be named."""

    def stage_configs(self) -> dict[str, Any]:
        return {
            "select_retry_candidates": _set(
                statuses=[s.value for s in self.statuses] if self.statuses else None,
                token_addresses=self.token_addresses or None,
                limit=self.limit,
                min_interval_minutes=self.min_interval_minutes,
            ),
            "record_retry_candidates": _set(deadline_seconds=self.deadline_seconds, max_workers=self.max_workers,
                                            provider_concurrency=self.provider_concurrency or None),
        }
