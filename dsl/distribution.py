"""Refuse to run on files another distribution overwrote: PyPI has projects named `kernels` (Hugging Face's
kernel loader), `jit` and `simulator`, and installing one of them next to wavetile writes into the
same top-level package directory as ours. `import dsl` (which `jit` and `kernels` import) calls
`check_packages()`, which raises an ImportError naming the other distribution.

It stays cheap: one listing of the directory that holds the packages, looking for `<name>-*.dist-info`;
only when one is there is its RECORD read (importlib.metadata), to see whether it claims our files.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGES = ("dsl", "jit", "kernels", "simulator")
"""wavetile's top-level packages, installed side by side."""


def check_packages(root: Path | None = None) -> None:
    """ImportError when a distribution other than wavetile owns one of PACKAGES' __init__.py in `root`
    (default: the directory that holds this package)."""
    root = Path(os.path.abspath(__file__)).parent.parent if root is None else root
    try:
        entries = os.listdir(root)
    except OSError:
        return
    prefixes = tuple(f"{name}-" for name in PACKAGES)
    for entry in entries:
        if entry.endswith(".dist-info") and entry.lower().startswith(prefixes):
            _check_dist_info(root, root / entry)


def _check_dist_info(root: Path, dist_info: Path) -> None:
    from importlib.metadata import Distribution

    dist = Distribution.at(dist_info)
    name = dist.metadata["Name"] or dist_info.name.split("-")[0]
    if name.lower().replace("_", "-") == "wavetile":
        return
    claimed = {str(f).replace("\\", "/") for f in dist.files or ()}
    for package in PACKAGES:
        if f"{package}/__init__.py" in claimed and (root / package / "__init__.py").exists():
            raise ImportError(
                f"wavetile: the '{package}' package in {root} also belongs to the distribution {name} "
                f"{dist.version} (PyPI's '{name}', not wavetile): installing one overwrote the other's files. "
                f"Uninstall both (pip uninstall {name} wavetile) and reinstall the one you want, or keep them "
                f"in separate virtual environments.")
