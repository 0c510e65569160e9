"""Every tutorial runs as a script at small sizes and checks itself against numpy."""

import pathlib
import subprocess
import sys

import pytest

TUTORIALS = sorted(p for p in (pathlib.Path(__file__).parents[1] / "tutorials").glob("[0-9][0-9]_*.py"))


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.name)
def test_tutorial_runs(path):
    result = subprocess.run([sys.executable, str(path), "--small"], capture_output=True, text=True, timeout=600,
                            cwd=path.parents[1])
    assert result.returncode == 0, result.stdout + result.stderr
