"""`tl.target_info`: the target predicates Triton kernels test, answered as the emulated machine
(an NVIDIA sm_90 part, the target `driver.active.get_current_target()` reports)."""

from __future__ import annotations

from typing import NamedTuple


class GPUTarget(NamedTuple):
    backend: str
    arch: int | str
    warp_size: int


EMULATED_TARGET = GPUTarget("cuda", 90, 32)  # also what `triton.runtime.driver.active` reports


def current_target() -> GPUTarget:
    return EMULATED_TARGET


def is_cuda() -> bool:
    return current_target().backend == "cuda"


def cuda_capability_geq(major: int, minor: int = 0) -> bool:
    """Compute capability >= (major, minor); False off CUDA."""
    target = current_target()
    return target.backend == "cuda" and target.arch >= int(major) * 10 + int(minor)


def is_hip() -> bool:
    return current_target().backend == "hip"


def is_hip_cdna3() -> bool:
    return current_target().arch == "gfx942"


def is_hip_cdna4() -> bool:
    return current_target().arch == "gfx950"
