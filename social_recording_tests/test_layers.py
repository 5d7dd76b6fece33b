"""The dependency direction holds. `ALLOWED` is the one table of which package of `social_recording`
may import which: every package has its row, every import in the source (at module level or inside a
function; only type hints are left out) is one the table allows, and neither packages nor modules
form a cycle. Beside it: `domain` imports nothing above it, a platform's URL rules and descriptor are
pure (domain-level), and reading canonical URLs loads no HTTP, sandbox or Dagster code.
See docs/architecture.md, "Layers" and "Providers in one place"."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from test_support.import_graph import cycles, module_graph, package_graph, package_of

PACKAGE = Path(__file__).resolve().parent.parent / "social_recording"
PLATFORM_PACKAGES = sorted(p.parent.name for p in (PACKAGE / "platforms").glob("*/__init__.py"))
PURE_PLATFORM_MODULES = {"social_recording.platforms", "social_recording.platforms.catalogue",
                         *(f"social_recording.platforms.{n}" for n in PLATFORM_PACKAGES),
                         *(f"social_recording.platforms.{n}.spec" for n in PLATFORM_PACKAGES)}
"""Domain-level although they live with their platform: its descriptor and URL rules (`spec.py`), its
package's `__init__`, and the catalogue registering them (test_support/import_graph.py counts them in
`domain`)."""


ALLOWED: dict[str, set[str]] = {
    # the bottom: pure rules, and three leaf helpers. `domain` holds each platform's spec too
    # (platforms/<p>/spec.py and the catalogue, PURE_PLATFORM_MODULES): a platform is its folder, but its
    # URL rules and descriptor are what the canonicaliser, the limits and the settings below read, so
    # they sit at the bottom and import only domain; the rest of the folder is the `platforms` row.
    "social_recording": set(),
    "domain": set(),
    "secret_files": set(),
    "sqlite_file": set(),
    "malloc_arenas": set(),
    # what every HTTP client shares
    "outbound": {"domain"},
    # the backends and the entry of upstream data; the sandbox stands in for the internet
    "store": {"domain", "secret_files", "sqlite_file"},
    "locks": {"domain", "outbound", "sqlite_file"},
    "upstream": {"domain", "outbound"},
    "sandbox": {"domain", "outbound", "sqlite_file"},
    # one package per platform: its generator and its sandbox fake
    "platforms": {"domain", "outbound", "sandbox"},
    # the use cases
    "recording": {"domain", "outbound", "store", "locks", "upstream", "platforms", "malloc_arenas"},
    # the settings of a deployment and the operator's commands
    "settings": {"domain", "secret_files", "store", "locks", "sandbox"},
    "record_settings": {"settings"},
    "next_step": {"domain"},
    "status_spend": {"domain", "locks", "recording", "store"},
    "operations": {"domain", "settings", "store"},
    "status": {"domain", "next_step", "platforms", "recording", "sandbox", "settings", "status_spend", "store"},
    # the Dagster shell and its entry points
    "dagster_defs": {"domain", "locks", "outbound", "platforms", "recording", "sandbox", "settings",
                     "status_spend", "store", "upstream"},
    "definitions": {"dagster_defs", "settings"},
    "demo": {"dagster_defs"},
    "code_server_stop": set(),
    "code_server": {"code_server_stop"},  # Dagster's server; the code location is preloaded by name, never imported here
    "__main__": {"secret_files"},
}
"""package -> the packages it may import. A new package needs its row; a new arrow, a reason."""


def test_every_package_has_its_row_in_the_table() -> None:
    packages = set(package_graph(module_graph()))
    assert sorted(packages - set(ALLOWED)) == [], "packages without a row in ALLOWED"
    assert sorted(set(ALLOWED) - packages) == [], "rows of ALLOWED for packages that no longer exist"


def test_the_table_is_a_layer_order() -> None:
    assert cycles(ALLOWED) == []
    assert all(target in ALLOWED for targets in ALLOWED.values() for target in targets)


def test_every_import_is_one_the_table_allows() -> None:
    wrong = [f"{importer} imports {imported}"
             for package, targets in package_graph(module_graph()).items()
             for target, pairs in targets.items() if target not in ALLOWED.get(package, set())
             for importer, imported in pairs]
    assert wrong == []


def test_no_cycle_between_packages_or_modules() -> None:
    modules = module_graph()
    assert cycles({p: set(t) for p, t in package_graph(modules).items()}) == []
    assert cycles(modules) == []


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return {name for name in found if name.startswith("social_recording")}


def _pure(name: str) -> bool:
    return name == "social_recording" or name.startswith("social_recording.domain") or name in PURE_PLATFORM_MODULES


def test_domain_and_the_platforms_pure_modules_import_only_pure_modules() -> None:
    checked = [p for p in PACKAGE.rglob("*.py") if _pure(_module(p))]
    assert len(checked) > len(PLATFORM_PACKAGES) * 2
    wrong = {_module(p): sorted(n for n in _imports(p) if not (_pure(n) or _pure(n.rpartition(".")[0])))
             for p in checked}
    assert {m: names for m, names in wrong.items() if names} == {}


def test_every_platform_spec_is_counted_in_domain_and_imports_only_pure_modules() -> None:
    specs = {f"social_recording.platforms.{n}.spec" for n in PLATFORM_PACKAGES}
    modules = module_graph()
    assert specs <= set(modules), "a platform package without its spec.py"
    assert {m: package_of(m) for m in sorted(specs) if package_of(m) != "domain"} == {}
    assert {m: sorted(t for t in modules[m] if not _pure(t)) for m in specs if not all(map(_pure, modules[m]))} == {}


def test_reading_canonical_urls_loads_no_http_sandbox_or_dagster_code() -> None:
    probe = ("import json, sys; from social_recording.domain.urls import to_canonical; "
             "to_canonical('https://discord.gg/abc'); print(json.dumps(sorted(sys.modules)))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                       check=True).stdout)
    ours = [m for m in loaded if m.startswith("social_recording")]
    assert [m for m in ours if not _pure(m)] == []
    assert not {"httpx", "dagster", "social_recording.sandbox"} & set(loaded)


def test_nothing_in_dagster_defs_imports_the_sandbox_at_module_level() -> None:
    """The sandbox is one of two upstream resources, chosen in definitions_builder; its package is
    imported only when that resource is set up (type hints aside)."""
    found = []
    for path in sorted((PACKAGE / "dagster_defs").glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:  # module level only
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
                found.extend(f"{path.name}: {n}" for n in names if n.startswith("social_recording.sandbox"))
    assert found == []
