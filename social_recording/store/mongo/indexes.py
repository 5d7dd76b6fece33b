"""The Mongo store's indexes, made idempotently when it opens and then checked rather than assumed:
a server may accept a `create_index` it did not carry out (docs/architecture.md, "Mongo-protocol
servers").
"""

from __future__ import annotations

import contextlib

from pymongo.errors import OperationFailure

from social_recording.store.mongo.connection import MongoConnection
from social_recording.store.mongo.schema import INDEXES, IndexConflictError

_INDEX_OPTIONS_CONFLICT = 85
"""Server code for "an index with these keys exists under another name / other options"."""

_INDEX_KEY_SPECS_CONFLICT = 86
"""Server code for "an index of this name exists with other keys": an index cannot be altered, and
a name names one index, so an index whose keys changed between releases is refused until dropped."""


class IndexesMixin(MongoConnection):
    """Make the indexes of `INDEXES`, or refuse to open beside one that conflicts."""

    def _ensure_indexes(self) -> None:
        for coll, indexes in INDEXES.items():
            for name, keys, unique in indexes:
                try:
                    self._create_index(coll, name, keys, unique)
                except OperationFailure as exc:
                    if exc.code != _INDEX_KEY_SPECS_CONFLICT or unique:
                        raise self._conflict(coll, name, keys, unique) from exc
                    # An older release built this name with fewer keys (the retry and unresolved
                    # indexes gained their tie-breakers): rebuild it. Only non-unique indexes are
                    # rebuilt; they serve speed, while a unique one's keys decide what is stored.
                    with contextlib.suppress(OperationFailure):  # a concurrent opener dropped it
                        self.db[coll].drop_index(name)
                    self._create_index(coll, name, keys, unique)
        # A server may accept a create_index it did not carry out (FerretDB answers ok when an index
        # of that name exists without `unique`): what stands is checked, not assumed.
        for coll, indexes in INDEXES.items():
            for name, keys, unique in indexes:
                if not self._has_index(coll, name, keys, unique):
                    raise self._conflict(coll, name, keys, unique)

    def _create_index(self, coll: str, name: str, keys: list[tuple[str, int]], unique: bool) -> None:
        try:
            self.db[coll].create_index(keys, name=name, unique=unique)
        except OperationFailure as exc:
            if exc.code != _INDEX_OPTIONS_CONFLICT or not self._has_equivalent(coll, keys, unique):
                raise

    def _indexes(self, coll: str) -> dict[str, tuple[list[tuple[str, int]], bool]]:
        return {
            name: ([(k, int(d)) for k, d in info["key"]], bool(info.get("unique", False)))
            for name, info in self.db[coll].index_information().items()
        }

    def _has_equivalent(self, coll: str, keys: list[tuple[str, int]], unique: bool) -> bool:
        return (keys, unique) in self._indexes(coll).values()

    def _has_index(self, coll: str, name: str, keys: list[tuple[str, int]], unique: bool) -> bool:
        """The index `name` with these keys and uniqueness, or an equivalent under another name."""
        found = self._indexes(coll)
        return found.get(name) == (keys, unique) or (keys, unique) in found.values()

    def _conflict(self, coll: str, name: str, keys: list[tuple[str, int]], unique: bool) -> IndexConflictError:
        found = self._indexes(coll)
        same_keys = [n for n, (k, _u) in found.items() if k == keys]
        have = ", ".join(f"{n} {k} unique={u}" for n, (k, u) in sorted(found.items()) if n == name or n in same_keys)
        return IndexConflictError(
            f"MongoDB database {self.db_name!r}, collection {coll!r}: the store needs index {name!r} on "
            f"{keys} unique={unique}, but the database has {have or 'none of that name or keys'}; drop the "
            f"conflicting index (db.{coll}.dropIndex(<name>)) and open the store again"
        )
