"""Run Triton programs unmodified on wavetile: `python -m jit.as_triton SCRIPT [args]`.

`install()` puts a meta-path alias in front of the import system so `triton`, `triton.language`,
`triton.testing`, `triton.runtime` (and `triton._internal_testing`, for Triton's own tests) are
wavetile's modules, maps `device="cuda"` torch tensors onto the CPU (see `devices`), and keeps the
text of exec'd kernels readable (see `exec_source`).
"""

from __future__ import annotations

from jit.as_triton import alias, devices, exec_source


def install() -> None:
    alias.install()
    devices.install()
    exec_source.install()


__all__ = ["install"]
