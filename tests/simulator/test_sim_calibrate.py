"""Calibration: raw microbenchmark results turn into spec values (no GPU needed for this part)."""

import json
from pathlib import Path

import numpy as np
import pytest

from simulator.calibrate import derive, fit_atomics, fit_curve, l2_peaks, program_starts
from simulator.specs import get_spec

DATA = Path(__file__).resolve().parents[2] / "simulator" / "data"

# what simulator/calibrate.py measured on an H200 (2026-11)
RAW = {
    "units": 132, "clock_hz": 1.98e9, "l2_bytes": 62914560,
    "dram_copy_bytes_per_s": 4.2476e12, "l2_reread_bytes_per_s": 9.915e12, "dram_chase_cycles": 681.5,
    "l2_chase_cycles": 295.5, "launch_overhead_s": 3.3e-6, "barrier_cycles": 20.3,
    "bf16_gemm_flops": 6.927e14, "atomic_ops_per_s": 3.738e11, "same_address_ops_per_s": 5.694e8,
}


def test_derive_turns_measurements_into_spec_values():
    h200 = get_spec("h200")
    spec = derive(RAW, h200.dram_bytes_per_s, h200.peak_tensor_flops("bf16"))
    assert spec["dram_efficiency"] == pytest.approx(0.885, abs=0.005)
    assert spec["tensor_efficiency"] == pytest.approx(0.70, abs=0.01)
    assert spec["atomic_serial_cycles"] == pytest.approx(3.48, abs=0.01)
    assert spec["barrier_cycles"] == 20.3
    assert "l2_chase_cycles" not in spec  # pointer chases are reported, not spec values
    assert "l2_reread_bytes_per_s" not in spec and "l2_bytes_per_s" not in spec  # an async copy's rate is the spec's


def test_h200_preset_carries_the_measurements():
    h200 = get_spec("h200")
    for field in ("l2_bytes_per_s", "dram_round_cycles", "l2_round_cycles", "l2_load_bytes_per_s", "barrier_cycles",
                  "atomic_serial_cycles", "dram_efficiency", "l2_reuse_near", "l2_dirty"):
        assert h200.sources[field][0] == "H", field
    peaks = l2_peaks(json.loads((DATA / "h200_l2_bandwidth.json").read_text())["points"])
    assert h200.l2_bytes_per_s == pytest.approx(peaks["dot_shared_2_4"], rel=0.01)
    # tiles that concurrent programs share come faster than a program's own, and async copies beat plain loads
    assert peaks["dot_own"] < peaks["dot_shared_2_4"] < peaks["dot_shared_8_16"]
    assert max(peaks["cg"], peaks["staged"]) < peaks["dot_shared_2_4"] and peaks["ld_own"] < peaks["ld_shared"]


def test_program_start_rate_is_the_measured_one():
    """The block scheduler's cost per program is the slope benchmarks/gpu/dispatch_rate.py measured, the same
    from 1 to 16 warps a program."""
    h200 = get_spec("h200")
    measured = json.loads((DATA / "h200_dispatch_rate.json").read_text())
    slopes = program_starts(measured["points"])
    for (_, warps), seconds in slopes.items():
        if warps <= 16:
            assert seconds * h200.units * h200.clock_hz == pytest.approx(h200.program_start_cycles, rel=0.01)
    assert slopes["tiny", 32] > slopes["tiny", 16]  # 1,024-thread programs start slower, which the model leaves out


def test_program_starts_recovers_a_known_slope():
    points = [{"kernel": "k", "num_warps": 4, "programs": n, "seconds": 3e-6 + n * 0.5e-9} for n in (1 << 12, 1 << 16,
                                                                                                  1 << 18, 1 << 20)]
    assert program_starts(points)["k", 4] == pytest.approx(0.5e-9)


def test_derive_skips_failed_measurements():
    spec = derive({"units": 132, "clock_hz": 1.98e9, "gemm_error": "no GPU"}, 4.8e12, 9.9e14)
    assert spec == {}


def test_fit_curve_recovers_a_known_round_trip():
    # points made by the fitted model itself, with a 3 % seeded wobble: the fit finds its parameters again
    rng = np.random.default_rng(7)
    units, clock, latency, peak, p = 132, 1.98e9, 500e-9, 4.2e12, 2.5
    points = []
    for per_unit in (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536):
        flight = units * per_unit
        seconds = (latency ** p + (flight / peak) ** p) ** (1 / p)
        points.append({"source": "dram", "in_flight_per_unit": per_unit,
                       "bytes_per_s": flight / seconds * (1 + 0.03 * rng.standard_normal())})
    fitted = fit_curve(points, units, clock)
    assert fitted["dram_round_cycles"] == pytest.approx(latency * clock, rel=0.1)
    assert fitted["dram_round_fit_error"] < 0.05


def test_h200_round_trips_are_the_fit_of_the_stored_curve():
    h200 = get_spec("h200")
    fitted = fit_curve(json.loads((DATA / "h200_memory_curve.json").read_text()), h200.units, h200.clock_hz)
    assert h200.dram_round_cycles == fitted["dram_round_cycles"]
    assert h200.l2_round_cycles == fitted["l2_round_cycles"]
    assert h200.dram_queue_exponent == fitted["dram_queue_exponent"]
    assert h200.l2_queue_exponent == fitted["l2_queue_exponent"]
    assert h200.l2_load_bytes_per_s == pytest.approx(fitted["l2_round_bytes_per_s"], rel=0.01)


def test_h200_atomic_rates_are_the_fit_of_the_stored_patterns():
    h200 = get_spec("h200")
    points = json.loads((DATA / "h200_atomic_patterns.json").read_text())["points"]
    fitted = fit_atomics(points, h200.units, h200.clock_hz, h200.l2_bytes, h200.max_programs_per_unit,
                         h200.launch_overhead_s)
    for name in ("atomic_ops_per_clk", "atomic_line_requests_per_clk", "atomic_relaxed_ops_per_clk",
                 "atomic_relaxed_line_requests_per_clk", "atomic_line_cycles", "atomic_round_cycles"):
        assert getattr(h200, name) == fitted[name], name
        assert h200.sources[name][0] == "H", name


def test_the_atomic_fit_explains_the_spread_patterns_it_was_fitted_on():
    """Fenced adds over 4,096-131,072 lines, 1-32 lines an instruction: time = ops / rate + line requests / rate
    within 12 %; the same instruction count runs 4.5x slower with 32 lines an instruction than with one."""
    h200 = get_spec("h200")
    points = json.loads((DATA / "h200_atomic_patterns.json").read_text())["points"]
    spread = [p for p in points if 4096 <= p["lines"] <= 131072 and p["warps"] >= 2 and p["reps"] > 1
              and p["sem"] == "acq_rel"]
    assert len(spread) >= 10
    for p in spread:
        modeled = (p["total"] / h200.atomic_ops_per_clk
                   + p["line_requests"] / h200.atomic_line_requests_per_clk) / h200.clock_hz
        assert modeled == pytest.approx(p["seconds"] - h200.launch_overhead_s, rel=0.12), p
    by_lines = {p["lines_per_instruction"]: p["seconds"] for p in spread if p["lines"] == 131072 and p["stride"] == 32
                and p["warps"] == 4 and p["unroll"] == 1}
    assert 4.0 <= by_lines[32.0] / by_lines[1.0] <= 4.6
