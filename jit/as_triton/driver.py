"""`triton.runtime.driver`: the "device" Triton programs ask about is the emulated machine.

`driver.active.get_current_target()` says backend "cuda", arch 90, warp size 32: kernel libraries pick
their NVIDIA code paths on it, and wavetile follows NVIDIA's numerics (measured on an H200).
`get_device_properties` answers from the emulated machine's spec (`WAVETILE_MACHINE`), so sizing
code such as tutorial 02's occupancy estimate sees the machine the profiler models.
"""

from __future__ import annotations

import simulator.specs as specs
from dsl.target_info import EMULATED_TARGET, GPUTarget


class _Utils:
    """Device properties under the names Triton's CUDA driver gives them."""

    @staticmethod
    def get_device_properties(device=None) -> dict:
        spec = specs.current_spec()
        return {"max_shared_mem": spec.shared_bytes_per_program_max, "multiprocessor_count": spec.units,
                "max_num_regs": spec.registers_per_unit, "warpSize": spec.warp_size,
                "sm_clock_rate": int(spec.clock_hz / 1e3), "mem_clock_rate": 0, "mem_bus_width": 0}


class ActiveDriver:
    """What `triton.runtime.driver.active` answers: a CPU torch device standing for the emulated GPU."""

    utils = _Utils()

    @staticmethod
    def is_active() -> bool:
        return True

    @staticmethod
    def get_active_torch_device():
        import torch

        return torch.device("cpu")

    @staticmethod
    def get_current_target() -> GPUTarget:
        return EMULATED_TARGET

    @staticmethod
    def get_current_device() -> int:
        return 0

    @staticmethod
    def get_current_stream(device=None) -> int:
        return 0

    @staticmethod
    def get_device_interface():
        import torch

        return torch.cpu

    @staticmethod
    def get_empty_cache_for_benchmark():
        import torch

        return torch.empty(64 << 20, dtype=torch.int8)

    @staticmethod
    def clear_cache(cache) -> None:
        cache.zero_()


active = ActiveDriver()


class _Driver:
    """`from triton.runtime.driver import driver`: the object whose `.active` is the driver."""

    active = active

    def set_active(self, driver) -> None:
        raise NotImplementedError("triton.runtime.driver.set_active: wavetile has one driver, the emulated machine")

    def reset_active(self) -> None:
        """Nothing to reset: there is one driver."""


driver = _Driver()
