"""The import graph of `social_recording`, read from the source with `ast` (nothing is imported).

Every `import` counts, at module level and inside functions alike (a function's import runs against
the layers as much as a module's); only those under `if TYPE_CHECKING:` are left out (type hints,
never run). `from a.b import c` is an edge to `a.b.c` when that is a module, else to `a.b`; the
parent packages an import runs on the way are not edges of their own. A *package* is a first-level
subpackage (`domain`, `sandbox`, ...) or a top-level module (`settings`, `status`, ...); the root
`__init__` is `social_recording`; a platform's spec (`platforms/<p>/spec.py`, its package's `__init__`)
and the catalogue are `domain`, pure data kept in the platform's folder. docs/architecture.md, "Layers".

`python -m test_support.import_graph` prints the package graph and the cycles between modules
(`-v`: every import behind each edge; `--type-checking`: the TYPE_CHECKING imports counted too).
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = "social_recording"
PACKAGE_DIR = Path(__file__).resolve().parent.parent / ROOT


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_files() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE_DIR.rglob("*.py"))}


def _domain_level(parts: list[str]) -> bool:
    """A platform's pure part, which lives in its folder: `platforms/<p>/spec.py`, the platform
    package's `__init__` (re-exporting it) and `platforms/catalogue.py` registering them all."""
    if parts[:2] != [ROOT, "platforms"]:
        return False
    rest = parts[2:]
    return rest in ([], ["catalogue"]) or len(rest) == 1 and (PACKAGE_DIR / "platforms" / rest[0]).is_dir() or (
        len(rest) == 2 and rest[1] == "spec")


def package_of(module: str) -> str:
    """A module's layer: its first-level package, except that a platform's spec, its package's
    `__init__` and the catalogue are `domain` (docs/architecture.md, "Layers")."""
    parts = module.split(".")
    if _domain_level(parts):
        return "domain"
    return parts[1] if len(parts) > 1 else ROOT


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _import_nodes(node: ast.AST, type_checking: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import under `node`, at any depth; those under `if TYPE_CHECKING:` only if `type_checking`."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and _is_type_checking(child.test) and not type_checking:
            for other in child.orelse:
                yield from _import_nodes_of(other, type_checking)
            continue
        yield from _import_nodes_of(child, type_checking)


def _import_nodes_of(node: ast.AST, type_checking: bool) -> Iterator[ast.Import | ast.ImportFrom]:
    if isinstance(node, ast.Import | ast.ImportFrom):
        yield node
    yield from _import_nodes(node, type_checking)


def _absolute(module: str, node: ast.ImportFrom, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")[: len(module.split(".")) - node.level + (1 if is_package else 0)]
    return ".".join([*base, *([node.module] if node.module else [])])


def imports_of(module: str, path: Path, known: set[str], type_checking: bool = False) -> set[str]:
    """The modules of `social_recording` that `module` imports (its own name left out)."""
    found: set[str] = set()
    for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8")), type_checking):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
            continue
        source = _absolute(module, node, path.name == "__init__.py")
        for alias in node.names:
            found.add(f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source)
    return {name for name in found if name in known and name != module}


def module_graph(type_checking: bool = False) -> dict[str, set[str]]:
    """module -> the modules it imports; `type_checking` counts the `if TYPE_CHECKING:` ones too."""
    files = module_files()
    known = set(files)
    return {module: imports_of(module, path, known, type_checking) for module, path in files.items()}


def package_graph(modules: dict[str, set[str]]) -> dict[str, dict[str, list[tuple[str, str]]]]:
    """package -> imported package -> the (importing module, imported module) pairs behind the edge."""
    graph: dict[str, dict[str, list[tuple[str, str]]]] = {package_of(m): {} for m in modules}
    for module, targets in modules.items():
        for target in sorted(targets):
            if package_of(target) != package_of(module):
                graph[package_of(module)].setdefault(package_of(target), []).append((module, target))
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def main() -> None:
    modules = module_graph(type_checking="--type-checking" in sys.argv)
    packages = package_graph(modules)
    edges = sum(len(targets) for targets in packages.values())
    print(f"{len(modules)} modules, {len(packages)} packages, {edges} package -> package edges")
    for package in sorted(packages):
        targets = packages[package]
        print(f"{package} -> {', '.join(f'{t} ({len(targets[t])})' for t in sorted(targets)) or '-'}")
    package_cycles = cycles({p: set(t) for p, t in packages.items()})
    print(f"\npackage cycles: {len(package_cycles)}")
    for component in package_cycles:
        print("  " + " <-> ".join(component))
    module_cycles = cycles(modules)
    print(f"module cycles: {len(module_cycles)}")
    for component in module_cycles:
        print("  " + " <-> ".join(component))
    if "-v" in sys.argv:
        for package in sorted(packages):
            for target, pairs in sorted(packages[package].items()):
                for importer, imported in pairs:
                    print(f"{package} -> {target}: {importer} imports {imported}")


if __name__ == "__main__":
    main()
