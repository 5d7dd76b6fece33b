"""reconcile_job's partitions (UTC days) and the one check every entry applies to a partition key.

A run can be launched with any `dagster/partition` tag (the GraphQL API, `dagster job execute
--tags`, a schedule's request), and Dagster checks the key only where it builds it itself (the UI's
partition picker, `--partition`). The reconcile stage and the schedule call `check_partition_key`
before anything else, so a key outside the set is refused before any request (docs/architecture.md,
"Reconcile").
"""

from datetime import date

from dagster import DailyPartitionsDefinition, PartitionsDefinition

PARTITION_FMT = "%Y-%m-%d"


class PartitionKeyError(ValueError):
    """A partition key that is not one of reconcile_job's days; the message names it and the range."""


def daily_partitions(start: date) -> DailyPartitionsDefinition:
    """UTC days over the tracker's `last_transfer_at`, today included (`end_offset=1`): the daily
    reconcile runs today's partition so far, and a later run of the same day picks up the rest."""
    return DailyPartitionsDefinition(start_date=start.isoformat(), timezone="UTC", fmt=PARTITION_FMT, end_offset=1)


def valid_range(partitions_def: PartitionsDefinition) -> str:
    """The set's days as `first to last` (last = today, UTC), for error messages."""
    first, last = partitions_def.get_first_partition_key(), partitions_def.get_last_partition_key()
    return f"{first} to {last}" if first and last else "(none yet: the first day has not begun)"


def check_partition_key(partitions_def: PartitionsDefinition, key: object) -> str:
    """`key` itself when it is one of the set's days now; otherwise PartitionKeyError naming the key
    and the valid range (a day before the first partition, a day that has not begun, or no day)."""
    if isinstance(key, str) and partitions_def.has_partition_key(key):
        return key
    shown = repr(key) if isinstance(key, str) else "(none)"
    raise PartitionKeyError(
        f"partition key {shown} is not a partition of reconcile_job: valid keys are the UTC days "
        f"{valid_range(partitions_def)} (YYYY-MM-DD; the first is SOCIAL_RECORDING_PARTITION_START, "
        f"the last is today)"
    )
