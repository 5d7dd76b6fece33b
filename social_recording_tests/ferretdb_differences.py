"""The differences between FerretDB and MongoDB that are FerretDB's alone, each with the test that shows it.

A test marked `@pytest.mark.ferretdb_differs(<difference>)` runs unchanged on every backend; on
FerretDB it is expected to fail with an AssertionError (pytest's xfail, its reason the text below),
strictly when the difference shows on every run. On a real MongoDB (`make test-mongo`) it must pass.
Differences the store was changed to depend on neither way are not here: docs/architecture.md
("Mongo-protocol servers") lists every difference met, these included.
"""

from __future__ import annotations

from dataclasses import dataclass

from test_support.ferretdb_server import FERRETDB_VERSION


@dataclass(frozen=True)
class Difference:
    summary: str
    """One line: the xfail reason pytest prints."""
    ferretdb: str
    """What FerretDB does, and where in its source."""
    mongodb: str
    """The MongoDB manual's statement of the real behaviour."""
    manual: str
    """The manual page."""
    deterministic: bool
    """True when the difference shows on every run (a strict xfail); False for a race it may miss."""

    def reason(self) -> str:
        return f"FerretDB {FERRETDB_VERSION}: {self.summary} (MongoDB: {self.manual})"


CONDITIONAL_UPDATE_NOT_ATOMIC = Difference(
    summary="a conditional update is read-then-write, not atomic: racing fenced writes can both apply",
    ferretdb=(
        "update and findAndModify read the matching document, apply the update in FerretDB's process and "
        "write the whole document back by _id (internal/handler/common/update.go UpdateDocument; the "
        "PostgreSQL backend's UpdateAll runs `UPDATE ... WHERE _jsonb->'_id' = $2`): the filter is not "
        "checked again at the write, so two racing conditional updates (`fence <= mine`, `status != ok`) "
        "can both apply and the later write wins; so can two writes made on the same URL state version."
    ),
    mongodb=(
        "\"In MongoDB, a write operation is atomic on the level of a single document\"; \"When a "
        "findAndModify operation ... the update is performed on that document. Concurrent queries and "
        "additional updates on that document are not affected until the current update is complete.\""
    ),
    manual="https://www.mongodb.com/docs/manual/core/write-operations-atomicity/",
    deterministic=False,
)

NO_SECONDARY_INDEX_IN_PLANS = Difference(
    summary="queries never use a secondary index (PostgreSQL Seq Scan plans)",
    ferretdb=(
        "the PostgreSQL backend builds each index as a btree over `_jsonb->'field'` expressions but pushes "
        "filters down as `_jsonb->'field' @> value` (equality on top-level scalars only; ranges, `$in`, "
        "`$ne` and sorts are evaluated in FerretDB's process), which no btree serves: every plan is a "
        "`Seq Scan` (explain answers with PostgreSQL's plan, not a queryPlanner winningPlan)."
    ),
    mongodb=(
        "\"Indexes support efficient execution of queries in MongoDB. Without indexes, MongoDB must scan "
        "every document in a collection to return query results. If an appropriate index exists for a "
        "query, MongoDB uses the index to limit the number of documents it must scan.\""
    ),
    manual="https://www.mongodb.com/docs/manual/indexes/",
    deterministic=True,
)

INC_NOT_ATOMIC = Difference(
    summary="an $inc is read-then-write, not atomic: racing increments of one document are lost",
    ferretdb=(
        "the same path as any update (internal/handler/common/update.go UpdateDocument): the document is "
        "read, the increment applied in FerretDB's process and the whole document written back by _id, so "
        "two writers incrementing one counter at once both write their own sum and one increment is lost "
        "(4 processes x 300 increments of one counter left 481, not 1,200)."
    ),
    mongodb="\"$inc is an atomic operation within a single document.\"",
    manual="https://www.mongodb.com/docs/manual/reference/operator/update/inc/",
    deterministic=False,
)
