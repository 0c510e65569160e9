"""Check the import graph of wavetile's packages: packages layered, no new cycle between modules.

    python scripts/import_graph.py          # exit 1 and say why on a violation

The graph comes from the source (ast), not from importing anything. Three rules:

- packages are layered: `dsl` < `simulator` < `jit` < `kernels` (`LAYERS`): a module may import its
  own package and the ones below, never one above, not even inside a function.
- no cycle of module-level imports (the ones that run at import time; `if TYPE_CHECKING:` blocks
  are left out).
- no new cycle of dependencies: counting the imports inside functions too (the usual way to hide a
  cycle), every strongly connected component of modules lies inside one of `KNOWN_CYCLES`, which
  are there to be removed, not added to.

tests/test_import_graph.py runs it, and so does .ci/run.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("dsl", "simulator", "jit", "kernels")
"""Lowest first: each package may import only itself and the packages before it."""

KNOWN_CYCLES: tuple[frozenset[str], ...] = (
    frozenset({"jit.codegen.addresses", "jit.codegen.checks", "jit.codegen.elements", "jit.codegen.memory"}),
    frozenset({"jit.interp.machine", "jit.sanitize"}),
    frozenset({"jit.eager", "jit.interpreter"}),
)
"""Today's dependency cycles (through imports inside functions): allowed to shrink, never to grow."""


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the layered packages by dotted name (a package is its __init__)."""
    found = {}
    for package in LAYERS:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> Iterator[tuple[str, bool, int]]:
    """(imported module, at module level?, line) for each import in the module's source."""
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    for node, top in _walk(tree.body, True):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:  # `from p import m` imports module p.m when there is one, else a name of p
            base = _resolve_from(name, is_package, node)
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        for target in targets:
            module = _known_prefix(target, known)
            if module is not None and module != name and not name.startswith(module + "."):
                yield module, top, node.lineno  # (a module's own packages are imported before it anyway)


def _walk(body: list[ast.stmt], top: bool) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, top
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            yield from _walk(node.orelse, top)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            yield from _walk(node.body, False)
        else:
            for field in ("body", "orelse", "finalbody", "handlers"):
                for child in getattr(node, field, None) or []:
                    if isinstance(child, ast.ExceptHandler):
                        yield from _walk(child.body, top)
                    elif isinstance(child, ast.stmt):
                        yield from _walk([child], top)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _resolve_from(name: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    parts = name.split(".")
    if not is_package:
        parts.pop()
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join(parts + ([node.module] if node.module else []))


def _known_prefix(target: str, known: set[str]) -> str | None:
    """The longest module of ours that `target` names or lies in (`jit.tune.main` -> `jit.tune`)."""
    parts = target.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in known:
            return candidate
        parts.pop()
    return None


def strongly_connected(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Tarjan's algorithm, iterative: the components with more than one module (or a self-loop)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1 or node in graph.get(node, ()):
                    found.append(frozenset(component))
    return found


def violations(root: Path = ROOT) -> list[str]:
    """What breaks the rules, one line each (empty when the graph is clean)."""
    found = modules(root)
    known = set(found)
    problems = []
    module_level: dict[str, set[str]] = {name: set() for name in found}
    every: dict[str, set[str]] = {name: set() for name in found}
    for name, path in found.items():
        layer = LAYERS.index(name.split(".")[0])
        for target, top, line in imports(name, path, known):
            target_layer = LAYERS.index(target.split(".")[0])
            if target_layer > layer:
                problems.append(f"{path.relative_to(root)}:{line}: {name} imports {target}, but "
                                f"{LAYERS[layer]} is below {LAYERS[target_layer]} ({' < '.join(LAYERS)})")
            every[name].add(target)
            if top:
                module_level[name].add(target)
    for component in strongly_connected(module_level):
        problems.append(f"module-level import cycle among {', '.join(sorted(component))}")
    for component in strongly_connected(every):
        if not any(component <= allowed for allowed in KNOWN_CYCLES):
            problems.append(f"new dependency cycle (counting imports inside functions) among "
                            f"{', '.join(sorted(component))}")
    return problems


def main() -> int:
    problems = violations()
    for line in problems:
        print(line, file=sys.stderr)
    if not problems:
        print(f"import graph: {len(modules())} modules, packages layered {' < '.join(LAYERS)}, no new cycle")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
