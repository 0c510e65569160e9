"""The H200 preset's rates against the microbenchmarks they come from (simulator/data), and the figures the README
quotes from them."""

import csv
import json

import numpy as np

from simulator import validate


def test_the_readme_figures_hold_on_dram_bandwidth_by_run_length():
    """README: reads made of short contiguous runs lose DRAM bandwidth, more when far-apart runs are read together."""
    with open(validate.DATA / "h200_dram_runs.json") as f:
        data = json.load(f)

    def shares(runs: list[dict]) -> dict:
        """(run bytes, columns fastest) -> the share of the best run's bandwidth."""
        best = max(run["bytes_per_s"] for run in runs)
        return {(run["run_bytes"], run["columns_fastest"]): run["bytes_per_s"] / best for run in runs}

    share = shares(data["runs"])
    quoted = {(64, False): 0.70, (32, False): 0.66, (64, True): 0.93, (32, True): 0.77}
    assert all(abs(share[key] - value) <= 0.006 for key, value in quoted.items())
    assert min(value for (size, _), value in share.items() if size >= 128) >= 0.945
    # writes lose less at 64 bytes and more at 128 when far apart: 79 % and 83 %, neighbours 96-97 %
    share = shares(data["write_runs"])
    quoted = {(64, False): 0.79, (128, False): 0.83, (64, True): 0.96, (32, False): 0.62}
    assert all(abs(share[key] - value) <= 0.006 for key, value in quoted.items())


def test_partial_sector_write_rate_is_the_measured_median():
    """Stores of runs shorter than a sector go at a rate of their own (MachineSpec.l2_partial_writes_per_s): the
    H200's preset is the median of the measured runs per second, and it is well below what whole sectors reach."""
    with open(validate.DATA / "h200_dram_runs.json") as f:
        data = json.load(f)
    partial = [run["bytes_per_s"] / run["run_bytes"] for run in data["sub_sector_write_runs"] if run["run_bytes"] < 32]
    whole = [run["bytes_per_s"] / run["run_bytes"] for run in data["sub_sector_write_runs"] if run["run_bytes"] == 32]
    spec = validate.get_spec("h200")
    assert len(partial) == 6 and abs(np.median(partial) / spec.l2_partial_writes_per_s - 1) <= 0.02
    assert max(partial) < min(whole) and spec.l2_partial_writes_per_s * spec.sector_bytes < spec.l2_bytes_per_s / 4


def test_the_readme_figures_hold_on_the_streams_probe():
    """README: fills past an unaligned bound, timed on the H200 (benchmarks/gpu/streams.py), against aligned ones."""
    with open(validate.DATA / "h200_streams.csv") as f:
        rows = list(csv.DictReader(f))

    def us(kind: str, per_thread: tuple[int, ...], least_warps: int = 1) -> tuple[float, float]:
        times = [float(r["ms"]) * 1e3 for r in rows if r["case"].startswith(f"streams_fill_{kind}_")
                 for c in [json.loads(r["config"])]
                 if c["BLOCK"] // (32 * c["num_warps"]) in per_thread and c["num_warps"] >= least_warps]
        return min(times), max(times)

    def within(got: tuple[float, float], low: float, high: float) -> bool:
        return low - 0.5 <= got[0] and got[1] <= high + 0.5

    assert within(us("fp32_unaligned", (4,), 4), 40, 60) and within(us("fp32_unaligned", (8, 16, 64)), 77, 133)
    assert within(us("fp32_aligned", (4, 8, 16, 64), 4), 32, 44)
    assert within(us("bf16_unaligned", (4,), 4), 92, 102) and within(us("bf16_unaligned", (8, 16, 64)), 265, 317)


def test_split_store_pieces_go_at_the_rate_the_streams_probe_gives():
    """Stores of one element an instruction past an unaligned bound reach the L2 in pieces (Counters.
    store_split_sectors); MachineSpec.split_pieces_per_clk is the rate at which the model's median error over the
    probe's configs that split is zero (benchmarks/gpu/streams.py, measured on the H200), and charging the pieces
    is what ranks the probe's streams (one element a thread or 64, 1 to 16 warps)."""
    groups = validate.load(validate.DATA / "h200_streams.csv", validate.DATA / "h200_counters.jsonl")
    spec = validate.get_spec("h200")

    def bias(rate: float) -> tuple[int, float]:
        model = validate.model_seconds(spec.replace(split_pieces_per_clk=rate))
        errors = [np.log(model(c) / c.measured_s) for g in groups for c in g.configs if c.counters.store_split_sectors]
        return len(errors), float(np.median(errors))

    splits, at_preset = bias(spec.split_pieces_per_clk)
    assert splits >= 90 and abs(at_preset) < 0.02
    assert bias(0.85 * spec.split_pieces_per_clk)[1] > 0.05 and bias(1.15 * spec.split_pieces_per_clk)[1] < -0.05

    def median_rho(rate: float) -> float:
        model = validate.model_seconds(spec.replace(split_pieces_per_clk=rate))
        return float(np.median([validate.score_group(g, model).rho for g in groups]))

    assert median_rho(spec.split_pieces_per_clk) >= 0.85 > 0.8 > median_rho(1e9)


def test_l1_rates_are_the_measured_ones():
    """A unit's L1 serves a load's words one a bank a wavefront (MachineSpec.l1_wavefronts_per_clk) and looks up its
    lines' tags at l1_lines_per_clk. Loads of one word from each of 8-32 lines whose words share banks (l1_lines.py:
    1-4 sectors a line, the same words) and of 32 rows 128 or 16,384 B apart (l1_banks.py) run a wavefront a line,
    about one a clock, from the L1 or streaming; rows whose words spread over the banks run 2.7-4 lines a clock from
    the L1 and 1.7-2.4 streaming along the rows, the preset the streams of 4-byte elements. Stores, which pass
    through to the L2, are slower still and are left to the L2 term."""
    with open(validate.DATA / "h200_l1_lines.json") as f:
        data = json.load(f)
    with open(validate.DATA / "h200_l1_banks.json") as f:
        probe = json.load(f)
    banks, streams = probe["loads"], probe["streams"]
    spec = validate.get_spec("h200")
    one_bank = [run["lines_per_clk"] for run in data["loads"] if run["lines"] >= 8] + [
        run["lines_per_clk"] for run in banks + streams if run["banks"] == 1]
    assert len(one_bank) == 12 and abs(np.median(one_bank) / spec.l1_wavefronts_per_clk - 1) <= 0.02
    assert max(one_bank) / min(one_bank) < 1.06
    resident = [run["lines_per_clk"] for run in banks if run["banks"] >= 16 and run["programs_per_unit"] == 16]
    streamed = {(run["itemsize"], run["stride"]): run["lines_per_clk"] for run in streams
                if run["banks"] >= 4 and run["programs_per_unit"] == 16}
    assert min(resident) > 2.5 * spec.l1_wavefronts_per_clk
    assert abs(np.median([r for (size, _), r in streamed.items() if size == 4]) / spec.l1_lines_per_clk - 1) <= 0.02
    assert spec.l1_lines_per_clk < min(r for (size, _), r in streamed.items() if size == 2) < min(resident)
    assert max(run["lines_per_clk"] for run in data["stores"]) < spec.l1_wavefronts_per_clk / 2


def test_a_block_re_read_from_another_unit_needs_about_the_same_room_in_the_l2():
    """README: the second pass of benchmarks/gpu/l2_reuse.py's walk hits half the time at 46.3 MiB when each unit
    re-reads its own blocks and at 43.7-44.9 MiB when another program (1 or 529 programs on, another unit) re-reads
    them (simulator/data/h200_l2_shared.json): the L2 does not keep a copy of a line for each half of the chip that
    reads it, which would halve the room for shared lines, so one L2 of the measured capacity models both."""
    with open(validate.DATA / "h200_l2_shared.json") as f:
        runs = json.load(f)

    def half_hit_mib(kernel: str, shift: int | None = None) -> float:
        hits = [(r["mb"], 1 - (r["dram__bytes_read.sum"] / 2**20 - r["mb"]) / r["mb"]) for r in runs
                if r["kernel"] == kernel and r.get("shift") == shift]
        hits.sort()
        for (low, a), (high, b) in zip(hits, hits[1:]):
            if a >= 0.5 > b:
                return low + (a - 0.5) / (a - b) * (high - low)
        raise AssertionError(f"{kernel} never falls below half")

    own = half_hit_mib("reread")
    others = [half_hit_mib("reread_other", shift) for shift in (1, 529)]
    assert round(own, 1) == 46.3 and [round(x, 1) for x in others] == [44.9, 43.7]
    assert min(others) > 0.9 * own > own / 2

