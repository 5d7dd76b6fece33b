"""Run configuration of the three ops (DESIGN §12). Validated by Dagster before a run starts.

No `from __future__ import annotations` here or in ops.py: Dagster reads the config and resource
annotations of an op at decoration time and cannot resolve string annotations.
"""

from enum import Enum

from dagster import Config
from pydantic import Field

from social_recording.domain.policy import DEFAULT_MIN_INTERVAL_MINUTES
from social_recording.domain.status import FetchStatus


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


class TokenRef(Config):
    address: str = Field(min_length=1, description="Mint address.")
    symbol: str = Field(default="", description="Display symbol (informational).")


class RecordTokensConfig(Config):
    """`live_tokens_job`: the batch the token_flow_sensor launched (<= 20 tokens)."""

    tokens: list[TokenRef] = Field(description="Tokens to record, as launched by token_flow_sensor.")
    max_workers: int = Field(default=4, ge=1, le=32, description="Tokens recorded in parallel.")


class ReconcileConfig(Config):
    """`reconcile_job`: record tokens of the partition's window that we never saw (token axis)."""

    min_af_count: int | None = Field(
        default=None, ge=1, description="AF investor floor; default SOCIAL_RECORDING_AF_INVESTOR_THRESHOLD."
    )
    limit: int | None = Field(default=None, ge=1, description="Cap on tokens recorded in this run.")
    deadline_seconds: float | None = Field(
        default=None, gt=0, description="No token is started after this many seconds."
    )
    max_workers: int = Field(default=4, ge=1, le=32, description="Tokens recorded in parallel.")


class RetryConfig(Config):
    """`retry_job`: re-attempt URLs that are not converged (URL axis). `ok` cannot be named."""

    statuses: list[RetryableStatus] | None = Field(
        default=None,
        description=(
            "Statuses to re-attempt. Leave empty for the default selection: error and pending, plus "
            "skipped_paid when paid calls are on and unsupported when a generator now exists for its "
            "platform (what a retry can change under this configuration). Naming statuses selects "
            "them as named, absorbing ones included (not_found, blocked, invalid, exhausted: one fresh "
            "call each). `ok` cannot be named: it is final, and re-opening it would pay again for an "
            "answer already recorded."
        ),
    )
    token_addresses: list[str] | None = Field(default=None, description="Only these tokens.")
    limit: int = Field(default=50, ge=1, le=10_000, description="Cap on URLs.")
    min_interval_minutes: int = Field(
        default=DEFAULT_MIN_INTERVAL_MINUTES, ge=0,
        description="Back-off since the element's last recording (0: retry everything due now).",
    )
    deadline_seconds: float | None = Field(default=None, gt=0, description="No URL started after this.")
    max_workers: int = Field(default=4, ge=1, le=32, description="Tokens processed in parallel.")

    def fetch_statuses(self) -> list[FetchStatus] | None:
        return None if not self.statuses else [FetchStatus(s.value) for s in self.statuses]
