"""What every sensor evaluation returns: the runs it launches or, when it launches none, why not,
with the cursor it keeps. A skip reason is said on the tick (the sensor's page), never only in the
terminal, and names what was read (docs/architecture.md, "Jobs")."""

from collections.abc import Sequence

from dagster import RunRequest, SensorResult, SkipReason


def sensor_answer(cursor: str | None, run_requests: Sequence[RunRequest] = (), skip_reason: str = "") -> SensorResult:
    """`run_requests` when there are any, else `skip_reason`; `cursor` either way."""
    if run_requests:
        return SensorResult(run_requests=list(run_requests), cursor=cursor)
    return SensorResult(skip_reason=SkipReason(skip_reason), cursor=cursor)
