"""The dependency direction holds: `domain` imports nothing above it, a platform's URL rules and
descriptor are pure (domain-level), and reading canonical URLs loads no HTTP, sandbox or Dagster code.
See docs/architecture.md, "Providers in one place"."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "social_recording"
PLATFORM_PACKAGES = sorted(p.parent.name for p in (PACKAGE / "platforms").glob("*/__init__.py"))
PURE_PLATFORM_MODULES = {"social_recording.platforms", "social_recording.platforms.catalogue",
                         *(f"social_recording.platforms.{n}" for n in PLATFORM_PACKAGES),
                         *(f"social_recording.platforms.{n}.urls" for n in PLATFORM_PACKAGES)}
"""Domain-level although they live with their platform: URL rules and descriptors."""


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
