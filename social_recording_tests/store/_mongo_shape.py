"""What a real MongoDB server rejects in a write that mongomock applies anyway.

mongomock accepts an update that touches one path in two operators (`$set: {"a.b"}` with
`$unset: {"a"}`, `$pull` with `$push` on one array), a positional `$` in an upsert, and field
names with a '.' or a leading '$'; a server refuses them (code 40, "Updating the path 'x' would
create a conflict at 'x'") or reads the '.' as a path separator. It also inserts an upsert's
document without the fields its filter only bounded (`fence: {"$lte": n}`), exactly like a
server, so a store that forgets to set such a field looks fine on both until it reads it back.

`update_problems` and `document_problems` list those defects; `check_mongomock_writes` makes
every mongomock collection write fail on one, so the whole contract suite asserts the shape of
each write the store sends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import mongomock
import pytest

PIPELINE_STAGES = frozenset({"$addFields", "$set", "$project", "$unset", "$replaceRoot", "$replaceWith"})
"""The only stages an update pipeline may hold."""

_POSITIONAL = ("$", "$[]")


def _is_positional(part: str) -> bool:
    return part in _POSITIONAL or (part.startswith("$[") and part.endswith("]"))


def _key_problems(value: Any, where: str) -> Iterator[str]:
    """Field names a server stores but no update operator or query path can reach as one name."""
    if isinstance(value, Mapping):
        for key, inner in value.items():
            if not isinstance(key, str) or not key:
                yield f"{where}: field name {key!r} is not a non-empty string"
                continue
            if "." in key or key.startswith("$"):
                yield f"{where}: field name {key!r} holds '.' or starts with '$'"
            yield from _key_problems(inner, f"{where}.{key}")
    elif isinstance(value, list | tuple):
        for i, inner in enumerate(value):
            yield from _key_problems(inner, f"{where}.{i}")


def document_problems(doc: Mapping[str, Any]) -> list[str]:
    """An inserted document's field names that a server would read as paths or operators."""
    return list(_key_problems(doc, "document"))


def _overlaps(a: str, b: str) -> bool:
    return a == b or a.startswith(b + ".") or b.startswith(a + ".")


def _filter_paths(flt: Mapping[str, Any]) -> Iterator[tuple[str, Any]]:
    for key, value in flt.items():
        if key == "$and" and isinstance(value, list):
            for clause in value:
                yield from _filter_paths(clause)
        elif not key.startswith("$"):
            yield key, value


def _is_equality(condition: Any) -> bool:
    return not (isinstance(condition, Mapping) and any(str(k).startswith("$") for k in condition))


def update_problems(flt: Mapping[str, Any], update: Mapping[str, Any] | Sequence[Any], upsert: bool) -> list[str]:
    """Why a server would refuse (or upsert differently) `update` with filter `flt`; [] when fine."""
    if not isinstance(update, Mapping):
        return [
            f"update pipeline stage {stage!r}: only {sorted(PIPELINE_STAGES)} are allowed"
            for stage in update
            if not (isinstance(stage, Mapping) and len(stage) == 1 and next(iter(stage)) in PIPELINE_STAGES)
        ]
    if not update:
        return ["empty update document"]
    operators = [k for k in update if k.startswith("$")]
    if len(operators) != len(update):
        return [f"update mixes operators and plain fields: {sorted(update)}"]
    problems: list[str] = []
    touched: list[tuple[str, str]] = []
    for op in operators:
        fields = update[op]
        if not isinstance(fields, Mapping) or not fields:
            problems.append(f"{op} needs a non-empty document, got {fields!r}")
            continue
        for path, value in fields.items():
            parts = path.split(".")
            if any(p == "" for p in parts):
                problems.append(f"{op} path {path!r} has an empty part")
            for part in parts:
                if part.startswith("$") and not _is_positional(part):
                    problems.append(f"{op} path {path!r}: part {part!r} starts with '$'")
                elif _is_positional(part) and upsert and part == "$":
                    problems.append(f"{op} path {path!r}: the positional '$' cannot be used in an upsert")
                elif part == "$":
                    array = path.split(".$", 1)[0]
                    if not any(_overlaps(array, f) for f, _ in _filter_paths(flt)):
                        problems.append(f"{op} path {path!r}: the positional '$' needs {array!r} in the filter")
            if op in ("$set", "$setOnInsert", "$push", "$addToSet"):
                problems.extend(_key_problems(value, f"{op} {path!r}"))
            for other_op, other in touched:
                if _overlaps(path, other):
                    problems.append(
                        f"{op} {path!r} and {other_op} {other!r} touch one path: a server refuses the update "
                        f"(\"Updating the path '{path}' would create a conflict at '{other}'\")"
                    )
            touched.append((op, path))
    if upsert:
        written = [path for op, path in touched if op in ("$set", "$setOnInsert", "$max", "$min", "$inc")]
        for path, condition in _filter_paths(flt):
            if not _is_equality(condition) and not any(_overlaps(path, w) for w in written):
                problems.append(
                    f"upsert filter bounds {path!r} ({condition!r}) without the update setting it: "
                    "an inserted document would lack the field"
                )
    return problems


def _checked(
    method: Callable[..., Any], shape: Callable[[tuple[Any, ...], dict[str, Any]], list[str]]
) -> Callable[..., Any]:
    def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        problems = shape(args, kwargs)
        if problems:
            raise AssertionError(f"{self.name}.{method.__name__}: a real MongoDB server would refuse: {problems}")
        return method(self, *args, **kwargs)

    call.__name__ = method.__name__
    return call


def _update_shape(upsert_at: int) -> Callable[[tuple[Any, ...], dict[str, Any]], list[str]]:
    """The shape check of an update method whose positional `upsert` argument is at `upsert_at`."""

    def shape(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[str]:
        flt = args[0] if args else kwargs["filter"]
        update = args[1] if len(args) > 1 else kwargs["update"]
        upsert = bool(args[upsert_at]) if len(args) > upsert_at else bool(kwargs.get("upsert", False))
        return update_problems(flt, update, upsert)

    return shape


def _insert_one_shape(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[str]:
    return document_problems(args[0] if args else kwargs["document"])


def _insert_many_shape(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[str]:
    docs = args[0] if args else kwargs["documents"]
    return [p for doc in docs for p in document_problems(doc)]


def check_mongomock_writes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make every mongomock collection write fail on a shape a real server would refuse."""
    coll = mongomock.Collection
    for name, upsert_at in (("update_one", 2), ("update_many", 2), ("find_one_and_update", 4)):
        monkeypatch.setattr(coll, name, _checked(getattr(coll, name), _update_shape(upsert_at)))
    monkeypatch.setattr(coll, "insert_one", _checked(coll.insert_one, _insert_one_shape))
    monkeypatch.setattr(coll, "insert_many", _checked(coll.insert_many, _insert_many_shape))
