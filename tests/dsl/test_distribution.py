"""dsl.distribution: a clash with PyPI's `kernels` / `jit` / `simulator` distributions is an ImportError
naming the other distribution, at `import dsl` (and so at `import jit`, `import kernels`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from dsl.distribution import PACKAGES, check_packages

ROOT = Path(__file__).resolve().parents[2]


def _dist_info(site: Path, name: str, version: str, files: list[str]) -> None:
    info = site / f"{name}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    (info / "RECORD").write_text("".join(f"{f},,\n" for f in files + [f"{info.name}/RECORD"]))


def _site_with_our_packages(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    for package in PACKAGES:
        os.symlink(ROOT / package, site / package)
    return site


def test_the_checkout_itself_is_clean():
    check_packages()


def test_a_distribution_claiming_our_init_is_named(tmp_path):
    site = _site_with_our_packages(tmp_path)
    _dist_info(site, "jit", "0.2.1", ["jit/util.py"])  # another `jit`, but it claims none of our files
    _dist_info(site, "wavetile", "0.1.0", ["kernels/__init__.py"])  # our own record
    check_packages(site)
    _dist_info(site, "kernels", "0.4.0", ["kernels/__init__.py", "kernels/layer.py"])
    with pytest.raises(ImportError, match=r"'kernels' package .* distribution kernels 0\.4\.0 .*pip uninstall"):
        check_packages(site)


def test_import_jit_fails_clearly_on_a_clash(tmp_path):
    site = _site_with_our_packages(tmp_path)
    _dist_info(site, "simulator", "1.0", ["simulator/__init__.py"])
    env = {**os.environ, "PYTHONPATH": str(site)}
    done = subprocess.run([sys.executable, "-c", "import jit"], env=env, capture_output=True, text=True,
                          cwd=tmp_path, timeout=120)
    assert done.returncode != 0
    assert "ImportError: wavetile: the 'simulator' package" in done.stderr and "simulator 1.0" in done.stderr
