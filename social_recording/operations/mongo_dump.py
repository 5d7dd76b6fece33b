"""A MongoDB database dumped to files and loaded back, through pymongo.

`mongodump` (MongoDB's database tools) is not packaged by Debian or Ubuntu and is not on the
deployment's image, and its archive format is MongoDB's own; the store's documents are plain BSON
types. So each collection is written as canonical Extended JSON — the lossless text form of BSON
that `mongoexport`/`mongoimport` also speak: dates, ObjectIds and 64-bit integers keep their types —
one document a line in `_id` order, beside its indexes (`<collection>.indexes.json`). Loading inserts
the documents with their `_id`s, then builds the indexes.

Consistency: collections are read one after another, not as one snapshot (a standalone MongoDB and
FerretDB offer none), so a dump is consistent when nothing writes meanwhile — `drain` first
(docs/operations.md, "Backup and restore").
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bson import json_util
from bson.json_util import CANONICAL_JSON_OPTIONS

BATCH = 1_000
"""Documents per insert_many when loading."""
INDEX_OPTIONS = ("unique", "sparse", "partialFilterExpression", "expireAfterSeconds")
"""The index options kept (the store's indexes use `unique`; the others for indexes made by hand)."""


def collections_of(db: Any) -> list[str]:
    return sorted(name for name in db.list_collection_names() if not name.startswith("system."))


def dump_database(db: Any, directory: Path) -> dict[str, int]:
    """Every collection of `db` into `directory`; the number of documents written per collection."""
    directory.mkdir(parents=True, exist_ok=False)
    counts: dict[str, int] = {}
    for name in collections_of(db):
        n = 0
        with (directory / f"{name}.jsonl").open("w", encoding="utf-8") as out:
            for doc in db[name].find({}, sort=[("_id", 1)]):
                out.write(json_util.dumps(doc, json_options=CANONICAL_JSON_OPTIONS) + "\n")
                n += 1
        indexes = [
            {"name": index_name, "key": [[k, _direction(d)] for k, d in info["key"]],
             **{opt: info[opt] for opt in INDEX_OPTIONS if opt in info}}
            for index_name, info in sorted(db[name].index_information().items()) if index_name != "_id_"
        ]
        (directory / f"{name}.indexes.json").write_text(
            json_util.dumps(indexes, json_options=CANONICAL_JSON_OPTIONS, indent=1), encoding="utf-8")
        counts[name] = n
    return counts


def _direction(value: Any) -> Any:
    return int(value) if isinstance(value, int | float) else value


def dumped_collections(directory: Path) -> list[str]:
    return sorted(p.name.removesuffix(".jsonl") for p in directory.glob("*.jsonl"))


def _documents(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            try:
                yield json_util.loads(line, json_options=CANONICAL_JSON_OPTIONS)
            except (ValueError, json.JSONDecodeError) as exc:
                raise ValueError(f"{path}, line {number}: not a canonical Extended JSON document ({exc})") from None


def load_database(db: Any, directory: Path) -> dict[str, int]:
    """Insert every dumped collection into `db` (whose collections of those names must be empty or
    absent), then build their indexes; the number of documents loaded per collection."""
    counts: dict[str, int] = {}
    for name in dumped_collections(directory):
        batch: list[dict[str, Any]] = []
        n = 0
        for doc in _documents(directory / f"{name}.jsonl"):
            batch.append(doc)
            if len(batch) >= BATCH:
                db[name].insert_many(batch, ordered=True)
                n += len(batch)
                batch = []
        if batch:
            db[name].insert_many(batch, ordered=True)
            n += len(batch)
        if n == 0 and name not in db.list_collection_names():
            db.create_collection(name)
        indexes_file = directory / f"{name}.indexes.json"
        if indexes_file.is_file():
            for index in json_util.loads(indexes_file.read_text(encoding="utf-8"), json_options=CANONICAL_JSON_OPTIONS):
                options = {opt: index[opt] for opt in INDEX_OPTIONS if opt in index}
                db[name].create_index([(k, d) for k, d in index["key"]], name=index["name"], **options)
        counts[name] = n
    return counts
