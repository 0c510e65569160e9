"""Calibration: raw microbenchmark results turn into spec values (no GPU needed for this part)."""

import pytest

from simulator.calibrate import derive
from simulator.specs import get_spec

# what simulator/calibrate.py measured on an H200 (2026-11)
RAW = {
    "units": 132, "clock_hz": 1.98e9, "l2_bytes": 62914560,
    "dram_copy_bytes_per_s": 4.2476e12, "l2_bytes_per_s": 9.915e12, "mem_latency_cycles": 681.5,
    "l2_latency_cycles": 295.5, "launch_overhead_s": 3.3e-6, "barrier_cycles": 20.3,
    "bf16_gemm_flops": 6.927e14, "atomic_ops_per_s": 3.738e11, "same_address_ops_per_s": 5.694e8,
}


def test_derive_turns_measurements_into_spec_values():
    h200 = get_spec("h200")
    spec = derive(RAW, h200.dram_bytes_per_s, h200.peak_tensor_flops("bf16"))
    assert spec["dram_efficiency"] == pytest.approx(0.885, abs=0.005)
    assert spec["tensor_efficiency"] == pytest.approx(0.70, abs=0.01)
    assert spec["atomic_ops_per_clk"] == pytest.approx(1.43, abs=0.01)
    assert spec["atomic_serial_cycles"] == pytest.approx(3.48, abs=0.01)
    assert spec["l2_latency_cycles"] == 295.5


def test_h200_preset_carries_the_measurements():
    h200 = get_spec("h200")
    for field in ("l2_bytes_per_s", "mem_latency_cycles", "l2_latency_cycles", "barrier_cycles",
                  "atomic_serial_cycles", "dram_efficiency"):
        assert h200.sources[field][0] == "H", field
    assert h200.l2_bytes_per_s == pytest.approx(RAW["l2_bytes_per_s"], rel=0.01)


def test_derive_skips_failed_measurements():
    spec = derive({"units": 132, "clock_hz": 1.98e9, "gemm_error": "no GPU"}, 4.8e12, 9.9e14)
    assert spec == {}
