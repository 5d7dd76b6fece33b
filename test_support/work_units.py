"""How `make test` hands the suite to its pytest-xdist workers (`--dist loadgroup`, tests README,
"Running in parallel"): the unit of work is one test, except a module whose tests share a fixture
built once per module (a deployment, a daemon): its tests stay together on one worker. Units marked
`heavy` (minutes: deployments, the model, the benchmarks) are handed out first, so the run does not
end with one worker finishing a long test while the others wait."""

from __future__ import annotations

import pytest

HEAVY_MARK = "heavy"
SHARED_SCOPES = frozenset({"module", "class", "package"})


def shares_a_fixture(item: pytest.Item) -> bool:
    """Whether the test uses a fixture built once for its module, class or package."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(d.scope in SHARED_SCOPES for defs in info.name2fixturedefs.values() for d in defs)


def group_and_order(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Order the items heavy units first (each kept in its collection order), in place; under
    `--dist loadgroup`, put every test of a module sharing a fixture in that module's group."""
    items[:] = sorted(items, key=lambda item: item.get_closest_marker(HEAVY_MARK) is None)
    if not config.getoption("loadgroup", False):
        return
    shared = {item.module.__name__ for item in items if isinstance(item, pytest.Function) and shares_a_fixture(item)}
    for item in items:
        if isinstance(item, pytest.Function) and item.module.__name__ in shared:
            in_group(item, item.module.__name__)


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

