"""How `make test` hands the suite to its pytest-xdist workers (`--dist loadgroup`, tests README,
"Running in parallel"): the unit of work is one test, except tests sharing a fixture built once per
module (a deployment, a daemon), which stay together on one worker, and those of a class sharing a
class fixture, which stay together per class. Units marked `heavy` (minutes: deployments, the model,
the benchmarks) are handed out first, the longest first (`heavy(minutes=N)`, what it takes in the
parallel run on CI's 2-core machine, roughly): the run then ends with many short tests spread over the
workers, not with one worker finishing a long unit it took late while the others wait."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

HEAVY_MARK = "heavy"
HEAVY_MINUTES = 1.0
"""The size of a unit marked plain `heavy`: a unit of a few minutes says so with `heavy(minutes=N)`, one
of seconds among many (a mutant, a fault) with a fraction."""
MODULE_SCOPES = frozenset({"module", "package"})
SERIAL_MARK = "serial"
SERIAL_LIST_INI = "serial_list"
"""Names the file where the parallel part of `make test` writes the ids of the tests marked `serial` it
collected, one a line (`pytest @FILE` reads them): the serial part then runs those without collecting
the whole suite again (a quarter of a minute), and is left out when the file is empty. Given on the
command line (`-o serial_list=FILE`), not in a variable: the pytest sessions a test starts itself (the
mutants', pytester's) do not inherit it. An ini option, which a conftest may register whatever the
arguments: a command-line option would be refused before the suite's conftest is read when no path is
given."""


def add_serial_list_option(parser: pytest.Parser) -> None:
    parser.addini(SERIAL_LIST_INI, "write the ids of the collected tests marked `serial` to this file (make test)",
                  default="")


def shared_scope(item: pytest.Item) -> str | None:
    """The widest scope of a fixture the test shares with others ("module" for module and package
    fixtures, "class"), None when every fixture it uses is its own or the session's."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    scopes = {d.scope for defs in info.name2fixturedefs.values() for d in defs}
    return "module" if scopes & MODULE_SCOPES else "class" if "class" in scopes else None


def heavy_minutes(item: pytest.Item) -> float:
    """How long the test's unit takes, roughly, in minutes; 0 when it is not marked `heavy`."""
    mark = item.get_closest_marker(HEAVY_MARK)
    return 0.0 if mark is None else float(mark.kwargs.get("minutes", HEAVY_MINUTES))


def record_serial(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Write the ids of the items marked `serial` to the SERIAL_LIST_INI file (when it is given):
    before the `-m "not serial"` of the parallel part deselects them. Every pytest-xdist worker writes
    the same list; each replaces the file whole."""
    target = str(config.getini(SERIAL_LIST_INI))
    if not target:
        return
    ids = [item.nodeid for item in items if item.get_closest_marker(SERIAL_MARK) is not None]
    written = Path(f"{target}.{os.getpid()}")
    written.write_text("".join(f"{nodeid}\n" for nodeid in ids), encoding="utf-8")
    os.replace(written, target)


def group_and_order(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Order the items longest heavy units first (equal ones kept in collection order), in place; under
    `--dist loadgroup`, put every test of a module sharing a module fixture in that module's group, and
    every test of a class sharing a class fixture in that class's group."""
    items[:] = sorted(items, key=lambda item: -heavy_minutes(item))
    if not config.getoption("loadgroup", False):
        return
    functions = [item for item in items if isinstance(item, pytest.Function)]
    by_module = {item.module.__name__ for item in functions if shared_scope(item) == "module"}
    for item in functions:
        if item.module.__name__ in by_module:
            in_group(item, item.module.__name__)
        elif item.cls is not None and shared_scope(item) == "class":
            in_group(item, f"{item.module.__name__}.{item.cls.__name__}")


def in_group(item: pytest.Item, group: str) -> None:
    """What pytest-xdist does for an `xdist_group` mark: the group after an `@` ends the test's id, and
    its scheduler gives the tests of one group to one worker. Done here because pytest-xdist 3.8 sets
    `item._nodeid`, which pytest 9.2 no longer reads (the id lives in `item._id`)."""
    grouped = f"{item.nodeid}@{group}"
    if hasattr(item, "_id"):
        from _pytest.nodeid import coerce_node_id

        item._id = coerce_node_id(grouped)
    else:
        item._nodeid = grouped  # type: ignore[attr-defined]
