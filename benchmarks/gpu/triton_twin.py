"""Run the library's own @jit kernels under real Triton: the reverse of the import swap.

`twins("kernels/norm.py")` reads the module's source with `ast` (wavetile is not imported, so this
works on a GPU machine without llvmlite or lark), takes every @jit function, the numeric constants
at module level and the @jit helpers it imports from sibling modules, and writes them into a
temporary module that imports `triton.language as tl` and `triton.jit as jit` instead. The kernel
text Triton compiles is exactly the library's.
"""

from __future__ import annotations

import ast
import importlib.util
import os
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
HEADER = "import triton\nimport triton.language as tl\nfrom triton import jit\n\n"


def _is_jit(node: ast.AST) -> bool:
    if not isinstance(node, ast.FunctionDef):
        return False
    for deco in node.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if isinstance(target, ast.Name) and target.id == "jit":
            return True
    return False


def _parts(path: Path, seen: set[Path]) -> list[str]:
    """Source segments of the module's jit helpers imported from siblings, constants and jit functions."""
    if path in seen:
        return []
    seen.add(path)
    source = path.read_text()
    tree = ast.parse(source)
    parts: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kernels."):
            sibling = REPO / (node.module.replace(".", "/") + ".py")
            if sibling.exists():
                wanted = {alias.name for alias in node.names}
                parts.extend(p for p in _parts(sibling, seen) if _defines(p, wanted) or p.startswith("#const"))
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and \
                isinstance(node.value.value, (int, float)) and all(isinstance(t, ast.Name) for t in node.targets):
            parts.append("#const\n" + ast.get_source_segment(source, node))
        elif _is_jit(node):
            start = min(d.lineno for d in node.decorator_list)
            lines = source.splitlines()[start - 1:node.end_lineno]
            parts.append("\n".join(lines))
    return parts


def _defines(part: str, names: set[str]) -> bool:
    return any(f"def {name}(" in part for name in names)


def twins(module: str) -> object:
    """A module object whose @jit functions are Triton JITFunctions of the library module's kernels."""
    parts = _parts(REPO / module, set())
    text = HEADER + "\n\n".join(p.removeprefix("#const\n") for p in parts) + "\n"
    folder = Path(tempfile.mkdtemp(prefix="wavetile_twin_"))
    name = "twin_" + Path(module).stem
    path = folder / f"{name}.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def library_kernel(module: str, name: str):
    """The library kernel `name` of `module` (a path under the repository): real Triton's twin when
    WAVETILE_SWEEP_BACKEND=triton, else wavetile's own function."""
    if os.environ.get("WAVETILE_SWEEP_BACKEND") == "triton":
        return getattr(twins(module), name)
    mod = importlib.import_module(module.removesuffix(".py").replace("/", "."))
    return getattr(mod, name)
