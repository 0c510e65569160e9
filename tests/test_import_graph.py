"""scripts/import_graph.py: the repository's import graph is layered and has no new cycle, and the
checker does catch an upward import, a module-level cycle and a new cycle hidden in a function."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("import_graph", ROOT / "scripts" / "import_graph.py")
import_graph = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(import_graph)


def test_the_repository_passes():
    result = subprocess.run([sys.executable, str(ROOT / "scripts" / "import_graph.py")], capture_output=True,
                            text=True)
    assert result.returncode == 0, result.stderr
    assert "no new cycle" in result.stdout


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    for package in import_graph.LAYERS:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return tmp_path


def test_jit_importing_kernels_is_reported_even_inside_a_function(tmp_path):
    root = _tree(tmp_path, {"jit/tune.py": "def main():\n    import kernels.registry\n",
                            "kernels/registry.py": "import jit.tune\n"})
    problems = import_graph.violations(root)
    assert any("jit/tune.py:2: jit.tune imports kernels.registry" in p for p in problems), problems


def test_a_module_level_cycle_is_reported(tmp_path):
    root = _tree(tmp_path, {"dsl/a.py": "from dsl import b\n", "dsl/b.py": "from . import a\n"})
    assert any(p.startswith("module-level import cycle among dsl.a, dsl.b") for p in import_graph.violations(root))


def test_a_cycle_through_a_function_is_new_unless_known(tmp_path):
    root = _tree(tmp_path, {"jit/x.py": "import jit.y\n",
                            "jit/y.py": "def f():\n    from jit.x import g\n",
                            "jit/z.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import jit.x\n"})
    problems = import_graph.violations(root)
    assert problems == ["new dependency cycle (counting imports inside functions) among jit.x, jit.y"]
