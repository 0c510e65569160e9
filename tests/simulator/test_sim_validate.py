"""simulator.validate: the scores it computes, and a run over a slice of the stored H200 sweep."""

import csv
import json
import os
import sys
from pathlib import Path

import numpy as np
import pytest

from simulator import validate
from simulator.counters import Counters

SWEEPS = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu"


def test_spearman_matches_hand_computed_ranks():
    a = np.array([1.0, 2.0, 3.0, 4.0])
    assert validate.spearman(a, a * 10) == pytest.approx(1.0)
    assert validate.spearman(a, -a) == pytest.approx(-1.0)
    # ties share their mean rank: ranks (0, 1.5, 1.5, 3) against (0, 1, 2, 3)
    b = np.array([1.0, 5.0, 5.0, 9.0])
    expected = np.corrcoef([0, 1.5, 1.5, 3], [0, 1, 2, 3])[0, 1]
    assert validate.spearman(b, a) == pytest.approx(expected)


def _group(measured, modeled, statuses=None):
    configs = []
    for i, t in enumerate(measured):
        configs.append(validate.Config(str(i), (statuses or ["ok"] * len(measured))[i], t, Counters(programs=1), (1,)))
    table = dict(zip((c.config for c in configs), modeled))
    return validate.Group("g", "f", "calibration", configs), lambda c: table[c.config]


def test_regret_counts_the_pick_within_noise_as_a_tie():
    group, model = _group([1.0, 1.01, 2.0, 4.0], [2.0, 1.0, 3.0, 4.0])
    score = validate.score_group(group, model)
    assert score.regret == 0.0  # the pick (1.01) is within 2 % of the best (1.0)
    group, model = _group([1.0, 1.5, 2.0, 4.0], [2.0, 1.0, 3.0, 4.0])
    score = validate.score_group(group, model)
    assert score.regret == pytest.approx(0.5)
    assert score.regret5 == 0.0
    assert score.mape == pytest.approx(np.median([1.0, 1 / 3, 0.5, 0.0]))


def test_rejections_and_overflows_are_counted():
    group, model = _group([1.0, 2.0, None, 3.0], [1.0, None, 5.0, None], ["ok", "ok", "out_of_resources", "error"])
    score = validate.score_group(group, model)
    assert score.rejected_ok == 1  # config 1 ran on the GPU but the model refused it
    assert score.overflows == 1 and score.missed_overflows == 1  # config 2 overflowed, the model accepted it


def test_validate_runs_on_a_slice_of_the_stored_sweep(capsys):
    code = validate.main(["--split", "all", "--family", "softmax"])
    out = capsys.readouterr().out
    assert code in (0, 1)
    assert "softmax_fp32_4096x1024" in out and "median rho" in out and "random pick" in out


def test_stored_counters_are_what_the_compiler_gives_now():
    """Re-model one stored config: the counters file must describe the current compiler and profiler."""
    sys.path.insert(0, str(SWEEPS))
    import model_sweep
    import sweep_cases

    stored = {}
    with open(validate.DATA / "h200_counters.jsonl") as f:
        for line in f:
            row = json.loads(line)
            stored[(row["case"], row["config"])] = row
    # a one-pass row kernel, a sampled TF32 matmul (operand layouts in its tiles) and a paged decode (gathers)
    for name, index in (("softmax_fp32_4096x1024", 2), ("matmul_fp32_2048", 0), ("decode_fp16_b64_h32_d64", 3)):
        case = next(c for c in sweep_cases.cases() if c.name == name)
        case.configs = case.configs[index:index + 1]
        fresh = model_sweep.model_case(case, "h200", seed=20261201)[0]
        old = stored[(case.name, fresh["config"])]["counters"]
        new = fresh["counters"]
        for key in ("load_requests", "store_requests", "global_sectors", "shared_wavefronts", "registers_per_thread",
                    "phase_rounds", "exchanges", "warp_instructions", "tensor_tiles"):
            assert new[key] == old[key], (name, key)
        assert new["dram_bytes"] == pytest.approx(old["dram_bytes"], rel=0.02)


def test_the_readme_figures_hold_on_the_two_blind_sets():
    """README: holdout26 and holdout27, modeled before they ran and scored once (then 0.82 (0.54) / 0 % / 25.0 % / 15 %,
    holdout27 missing its picks' p90 by its fp32 column sums' pick), pooled 40 groups now score 0.82 (0.59) / 1.1 % /
    20 % / 15 % with every overflow predicted, and each set meets every threshold on its own."""
    scores = {split: _scores(split, validate.HELD_OUT[split]) for split in ("holdout26", "holdout27")}
    pooled = validate.summary(scores["holdout26"] + scores["holdout27"])
    assert pooled["groups"] == 40 and validate.passes(pooled) and pooled["overflows"] == 7
    assert pooled["rho"] >= 0.823 and pooled["rho_p10"] >= 0.585 and pooled["regret"] <= 0.011
    assert pooled["regret_p90"] <= 0.201 and pooled["mape"] <= 0.151
    assert all(validate.passes(validate.summary(mine)) for mine in scores.values())


def _blind_scores(split: str, groups: int, configs: int) -> dict:
    """A blind set's scores by case, after checking it is the set that was chosen and that every group it scores
    has counters stored (from before its timing)."""
    sys.path.insert(0, str(SWEEPS))
    import sweep_cases

    chosen = [c for c in sweep_cases.cases() if c.split == split]
    assert len(chosen) == groups and sum(len(c.configs) for c in chosen) == configs
    scores = {s.case: s for s in _scores(split, validate.HELD_OUT[split])}
    assert set(scores) == {c.name for c in chosen}
    return scores


def test_the_readme_figures_hold_on_the_third_blind_set():
    """README: holdout28, chosen and modeled at stop 43 before any timing, scored 0.83 (0.49) / 3.7 % / 62 % / 17 %
    blind, missing the picks' p90 through its paged decode (pick 4.6x slow) and bf16 column sums (3.2x); with a loop
    body's loads counted for unrolling (stop 45) the column sums' pick is the best config and the set scores
    0.83 (0.49) / 2.4 % / 22 % / 17 %, and with sampled programs' equal work no longer read as unequal (stop 46)
    0.84 (0.66) / 2.4 % / 18 % / 15 %, its GEMV's pick 47 % slow. Every config that ran has counters stored from before
    the timing."""
    scores = _blind_scores("holdout28", 19, 335)
    total = validate.summary(list(scores.values()))
    assert validate.passes(total) and total["overflows"] == 3 and total["rejected_ok"] == 0
    assert total["rho"] >= 0.835 and total["rho_p10"] >= 0.659 and total["regret"] <= 0.025
    assert total["regret_p90"] <= 0.178 and total["mape"] <= 0.155
    slow = {case: round(s.regret, 2) for case, s in scores.items() if s.regret > 0.25}
    assert slow == {"holdout28_decode_fp16_b16_h40_kv8_d128": 3.63, "holdout28_gemv_bf16_5120x5120": 0.47}
    assert scores["holdout28_colsum_bf16_5000x5000"].regret == 0.0


def test_the_readme_figures_hold_on_what_counting_a_body_s_loads_moved():
    """README: with a loop body's loads counted for unrolling, holdout27's and holdout28's column sums pick the best
    config (2.2x and 3.2x slow before; holdout27's runs 20 % slow since stop 46); the MoE combine of holdout21 and
    holdout25 picks configs 75-81 % slow (from 0 %) and holdout's looped logsumexp one 15 % slow (from 0 %); validation
    does not move."""
    spec, before = validate.get_spec("h200"), _old_unrolling()
    cases = {"holdout27_colsum_fp32_3000x7000": (1.22, 0.2), "holdout28_colsum_bf16_5000x5000": (2.18, 0.0),
             "holdout21_moe_combine_bf16_4096x2048_k8": (0.0, 0.81),
             "holdout21_moe_combine_shared_fp16_3000x4096_k4": (0.0, 0.75),
             "holdout25_moe_combine_bf16_2048x4096_k8": (0.0, 0.80), "holdout_lse_fp32_4096x32000": (0.0, 0.15)}
    regrets = {}
    for split in ("holdout", "holdout21", "holdout25", "holdout27", "holdout28"):
        for group in validate.load(validate.DATA / validate.HELD_OUT[split], validate.DATA / "h200_counters.jsonl"):
            if group.case in cases:
                regrets[group.case] = tuple(round(validate.score_group(group, validate.model_seconds(s)).regret, 2)
                                            for s in (before, spec))
    assert regrets == cases
    groups = [g for g in validate.load(validate.DATA / "h200_sweep.csv", validate.DATA / "h200_counters.jsonl")
              if g.split == "validation"]
    assert all(validate.score_group(g, validate.model_seconds(before)) == validate.score_group(
        g, validate.model_seconds(spec)) for g in groups)


def test_the_set_that_waits_for_a_gpu_has_its_ranking_on_record():
    """README: holdout30 is chosen (24 groups, 439 configs), every config's counters are stored, and it is not
    scored before it is measured."""
    sys.path.insert(0, str(SWEEPS))
    import sweep_cases

    chosen = [c for c in sweep_cases.cases() if c.split == "holdout30"]
    assert len(chosen) == 24 and sum(len(c.configs) for c in chosen) == 439
    with open(validate.DATA / "h200_counters.jsonl") as f:
        stored = {row["case"] for row in map(json.loads, f) if row["case"].startswith("holdout30_")}
    assert stored == {c.name for c in chosen}
    assert "holdout30" not in validate.HELD_OUT and not (validate.DATA / "h200_holdout30.csv").exists()


def test_the_readme_figures_hold_on_the_fourth_blind_set():
    """README: holdout29, chosen and modeled at stop 45 before any timing (the model's picks were the same whether a
    loop body counts each load once or twice), scored once: 0.78 (0.60) / 5.2 % / 21 % / 16 %, every threshold but
    the rank correlation met, 3 of 3 overflows predicted; its fp32 column sums over 6,000 columns pick a config 2x
    slow, its GEMV one 28 % slow. Since stop 46: 0.78 (0.62) / 4.2 % / 20 % / 16 %. With the four blind sets pooled,
    82 groups, every threshold is met."""
    scores = _blind_scores("holdout29", 23, 406)
    total = validate.summary(list(scores.values()))
    assert not validate.passes(total) and total["overflows"] == 3 and total["rejected_ok"] == 0
    assert 0.78 <= total["rho"] < 0.8 and total["rho_p10"] >= 0.619 and total["regret"] <= 0.042
    assert total["regret_p90"] <= 0.204 and total["mape"] <= 0.164
    assert {case: round(s.regret, 2) for case, s in scores.items() if s.regret > 0.25} == {
        "holdout29_colsum_fp32_4000x6000": 1.01, "holdout29_gemv_fp16_7168x3584": 0.28}
    blind = list(scores.values()) + sum((_scores(split, validate.HELD_OUT[split])
                                         for split in ("holdout26", "holdout27", "holdout28")), [])
    pooled = validate.summary(blind)
    assert pooled["groups"] == 82 and validate.passes(pooled) and pooled["overflows"] == 13
    old = validate.summary(_scores("holdout29", validate.HELD_OUT["holdout29"], spec=_old_unrolling()))
    assert round(old["rho"], 2) == 0.78 and round(old["regret_p90"], 2) == 0.20 and round(old["mape"], 2) == 0.17
    assert pooled["rho"] >= 0.823 and pooled["rho_p10"] >= 0.592 and pooled["regret"] <= 0.024
    assert pooled["regret_p90"] <= 0.212 and pooled["mape"] <= 0.158


def _old_unrolling():
    """The H200 spec with the unrolling rule before stop 45: a body's loads not counted, unrolled up to 40."""
    return validate.get_spec("h200").replace(unroll_load_instructions=0.0, unroll_instructions=40.0)


def _scores(split: str, csv_name: str, compiled_registers: bool = False, compiled_waits: bool = False,
            spec=None) -> list:
    spec = spec or validate.get_spec("h200")
    groups = [g for g in validate.load(validate.DATA / csv_name, validate.DATA / "h200_counters.jsonl")
              if g.split == split]
    if compiled_registers:
        groups = validate.with_compiled_registers(groups, spec, validate.DATA / "h200_compile_facts.jsonl")
    if compiled_waits:
        groups = validate.with_compiled_waits(groups, validate.DATA / "h200_sass_loops.jsonl")
    spread = 0.0 if compiled_registers else validate.REGISTER_SPREAD
    return [validate.score_group(g, validate.model_seconds(spec, spread)) for g in groups]


def _held_out(**options) -> tuple[list, dict]:
    """Every held-out group's score (scored as _scores does with `options`), and each set's summary by split."""
    by_split = {split: _scores(split, csv_name, **options) for split, csv_name in validate.HELD_OUT.items()}
    return sum(by_split.values(), []), {split: validate.summary(mine) for split, mine in by_split.items()}


def _figures(split: str, csv_name: str) -> dict:
    return validate.summary(_scores(split, csv_name))


def test_the_readme_figures_hold_on_the_validation_split():
    """README 'How far the modeled time can be trusted' quotes these: a model change that makes them worse
    must update the README (and say why)."""
    total = _figures("validation", "h200_sweep.csv")
    assert total["groups"] == 41
    assert total["rho"] >= 0.882 and total["rho_p10"] >= 0.732 and total["regret"] <= 0.0
    assert total["regret_p90"] <= 0.16 and total["mape"] <= 0.149
    assert total["rejected_ok"] == 0 and total["missed_overflows"] == 0 and total["overflows"] == 9


@pytest.mark.parametrize("split, groups, rho, regret, regret_p90, mape", [
    ("holdout", 10, 0.853, 0.024, 0.134, 0.152),
    ("holdout2", 11, 0.613, 0.087, 0.199, 0.151),
    ("holdout3", 10, 0.873, 0.0, 0.057, 0.169),
    ("holdout4", 10, 0.891, 0.0, 0.144, 0.136),
    ("holdout5", 10, 0.815, 0.013, 0.292, 0.144),
    ("holdout6", 10, 0.769, 0.016, 0.061, 0.136),
    ("holdout7", 10, 0.843, 0.0, 0.049, 0.155),
    ("holdout8", 10, 0.853, 0.0, 0.051, 0.119),
    ("holdout9", 10, 0.772, 0.012, 0.162, 0.16),
    ("holdout10", 10, 0.624, 0.011, 0.117, 0.159),
    ("holdout11", 10, 0.776, 0.0, 0.099, 0.159),
    ("holdout12", 10, 0.637, 0.08, 0.832, 0.165),
    ("holdout13", 10, 0.839, 0.092, 0.247, 0.228),
    ("holdout14", 10, 0.876, 0.047, 0.235, 0.156),
    ("holdout15", 6, 0.772, 0.132, 0.182, 0.216),
    ("holdout16", 13, 0.87, 0.0, 0.121, 0.16),
    ("holdout17", 10, 0.776, 0.0, 0.106, 0.159),
    ("holdout18", 11, 0.796, 0.024, 0.122, 0.176),
    ("holdout19", 13, 0.852, 0.0, 0.169, 0.187),
    ("holdout20", 8, 0.805, 0.085, 0.141, 0.088),
    ("holdout21", 8, 0.232, 0.346, 0.953, 0.217),
    ("holdout22", 14, 0.87, 0.0, 0.094, 0.151),
    ("holdout23", 13, 0.846, 0.0, 0.142, 0.143),
    ("holdout24", 22, 0.814, 0.038, 0.267, 0.172),
    ("holdout25", 23, 0.761, 0.0, 0.279, 0.158),
    ("holdout26", 20, 0.827, 0.0, 0.116, 0.148),
    ("holdout27", 20, 0.826, 0.026, 0.215, 0.153),
    ("holdout28", 19, 0.835, 0.025, 0.178, 0.155),
    ("holdout29", 23, 0.782, 0.042, 0.204, 0.164),
])
def test_the_readme_figures_hold_on_the_held_out_kernels(split, groups, rho, regret, regret_p90, mape):
    total = _figures(split, f"h200_{split}.csv")
    assert total["groups"] == groups
    assert total["rho"] >= rho and total["regret"] <= regret and total["regret_p90"] <= regret_p90
    assert total["mape"] <= mape and total["rejected_ok"] == 0 and total["missed_overflows"] == 0


def test_the_readme_figures_hold_where_stores_split():
    """README, the split-store change: soft-capping ranks 0.75 with its pick 2 % slow, the seeded dropout 0.95, the
    fp32 odd-length multiply-add 0.51, GeGLU's backward over 31,000,003 elements 0.96, the unaligned bf16 add 0.79."""
    scores = {}
    for split, csv_name in [("calibration", "h200_sweep.csv")] + list(validate.HELD_OUT.items()):
        scores.update({s.case: s for s in _scores(split, csv_name)})
    softcap = scores["holdout7_softcap_fp32_50M"]
    assert round(softcap.rho, 2) == 0.75 and round(softcap.regret, 2) == 0.02
    expected = {"holdout3_dropout_fp32_16M": 0.95, "holdout12_fma3_fp32_9999991": 0.51,
                "holdout17_geglu_bwd_fp16_31000003": 0.96, "add_bf16_unaligned_48M": 0.79}
    assert {case: round(scores[case].rho, 2) for case in expected} == expected


def test_the_readme_figures_hold_on_holdout18_s_groups():
    """README, holdout18, the layout Triton proves and the L1's time in a round: attention, the skinny matmul and the
    fp16 add rank 0.77-0.96 (RMSNorm 0.60 since the L1 keeps its weight row from program to program); the odd-N
    matmuls' picks run 5 % (holdout18), 48 % and 5 % slow (holdout19), the bf16 one with a [N, K] weight 12 % (rho
    0.79); Triton's looped LayerNorm ranks 0.89, the Welford one 0.84, the 64-channel im2col 0.81, the depthwise
    convolution 0.87, holdout19's LayerNorm 0.90 (since reductions pass each result through shared memory in turn and
    the L1 keeps a weight row from program to program); the transpose -0.18."""
    scores = {s.case: s for split in ("holdout3", "holdout13", "holdout14", "holdout15", "holdout18", "holdout19")
              for s in _scores(split, f"h200_{split}.csv")}
    good = ["attention_fp16_d64_bh16_s2999", "matmul_fp16_skinny_m5", "add_fp16_20M"]
    assert all(0.765 <= scores[f"holdout18_{name}"].rho <= 0.965 for name in good)
    assert round(scores["holdout18_rmsnorm_bf16_5000x4099"].rho, 2) == 0.60
    picks = {case: round(scores[case].regret, 2) for case in (
        "holdout18_matmul_fp16_1999x3001x1001", "holdout19_matmul_fp16_3000x1000x2000",
        "holdout19_matmul_bf16_2048x4100x1536", "holdout18_matmul_bf16_wt_777x5003x2049")}
    assert list(picks.values()) == [0.05, 0.48, 0.05, 0.12]
    assert round(scores["holdout18_matmul_bf16_wt_777x5003x2049"].rho, 2) == 0.79
    ranks = {"holdout3_layernorm_looped_bf16_16384x3000": 0.89, "holdout15_welford_layernorm_fp16_8192x7000": 0.84,
             "holdout13_im2col_fp16_n8_56x56_c64": 0.81, "holdout14_depthwise_conv3x3_fp16_n32_56x56_c128": 0.87,
             "holdout19_layernorm_bf16_7000x2049": 0.90, "holdout18_transpose_fp32_3001x4099": -0.18}
    assert {case: round(scores[case].rho, 2) for case in ranks} == ranks


def test_the_readme_figures_hold_on_what_to_trust():
    """README 'Trust it for ...': the median rank correlation of the kernel families it names, the worst pick of a
    LayerNorm (a Welford one, 19 % slow; Triton's looped ones pick their best config since stop 47) and the row sums'
    rank."""
    scores = {}
    for split, csv_name in [("validation", "h200_sweep.csv")] + list(validate.HELD_OUT.items()):
        scores.update({s.case: s for s in _scores(split, csv_name)})

    def rho(prefix: str) -> float:
        return float(np.median([s.rho for case, s in scores.items() if case.startswith(prefix)]))

    assert rho("softmax_") >= 0.94 and rho("rmsnorm_") >= 0.94 and rho("attention_") >= 0.81
    assert rho("holdout2_bmm") >= 0.961 and rho("holdout7_w8a16") >= 0.938
    assert rho("matmul_") >= 0.863
    assert max(s.regret for case, s in scores.items() if "layernorm" in case) <= 0.19
    assert max(s.regret for case, s in scores.items() if case.startswith("holdout3_layernorm_looped")) == 0
    row_sums = [s.rho for case, s in scores.items() if case.startswith("rowsum")]
    assert min(row_sums) >= 0.63


def test_fifteen_held_out_sets_meet_every_threshold_and_all_groups_pooled_do():
    """README and tutorial 04: holdout, holdout3, holdout4, holdout7, holdout8, holdout13, holdout14, holdout16,
    holdout19, holdout20, holdout22, holdout23 and holdout26 to holdout28 meet the validation thresholds (rho >= 0.8,
    picks <= 10 % / 25 % slow, time error <= 25 %); the other fourteen do not. All 364 groups pooled meet them. Every
    set but holdout21 ranks 0.61-0.89 with its picks 0-13 % slow at the median (tutorial 04)."""
    scores, sets = _held_out()
    rest = [t for split, t in sets.items() if split != "holdout21"]
    assert 0.61 <= min(t["rho"] for t in rest) and max(t["rho"] for t in rest) < 0.895
    assert max(t["regret"] for t in rest) <= 0.132
    meet = {split for split, t in sets.items()
            if t["rho"] >= 0.8 and t["regret"] <= 0.10 and t["regret_p90"] <= 0.25 and t["mape"] <= 0.25}
    assert meet == {"holdout", "holdout3", "holdout4", "holdout7", "holdout8", "holdout13", "holdout14", "holdout16",
                    "holdout19", "holdout20", "holdout22", "holdout23", "holdout26", "holdout27", "holdout28"}
    pooled = validate.summary(scores)  # README: the 364 groups pooled score 0.83 (0.54) / 0 % / 19 % / 16 %
    assert len(scores) == 364 and validate.passes(pooled) and pooled["rho"] >= 0.825 and pooled["rho_p10"] >= 0.536
    assert pooled["regret"] <= 0.0 and pooled["regret_p90"] <= 0.195 and pooled["mape"] <= 0.159


def test_with_triton_s_register_counts_the_held_out_kernels_meet_the_thresholds():
    """README: scored with Triton's own register and spill counts in place of the estimate
    (`python -m simulator.validate --compiled-registers`; holdout29 has no compile facts and keeps the estimate), the
    364 held-out groups pooled pass every threshold and fifteen sets meet them (fifteen with the estimate too, which
    scores as well pooled)."""
    scores, sets = _held_out(compiled_registers=True)
    meet = sum(map(validate.passes, sets.values()))
    pooled = validate.summary(scores)
    assert len(scores) == 364 and validate.passes(pooled) and meet == 15
    assert pooled["rho"] >= 0.828 and pooled["regret_p90"] <= 0.216 and pooled["mape"] <= 0.161


def test_compiled_registers_replace_the_estimate_by_triton_s_counts(tmp_path):
    """A config that compiled without spilling takes n_regs; one that spilled, the budget plus its spilled bytes
    in registers; one without facts keeps the estimate."""
    spec = validate.get_spec("h200")
    counters = Counters(num_warps=4, registers_per_thread=77)
    group = validate.Group("k", "f", "validation", [validate.Config(f"c{i}", "ok", 1e-3, counters, (1,))
                                                     for i in range(3)])
    facts = tmp_path / "facts.jsonl"
    facts.write_text("".join(json.dumps({"case": "k", "config": config, "n_regs": regs, "n_spills": spills}) + "\n"
                             for config, regs, spills in (("c0", 40, 0), ("c1", 255, 90))))
    (out,) = validate.with_compiled_registers([group], spec, facts)
    registers = [c.counters.registers_per_thread for c in out.configs]
    assert registers == [40, validate.register_budget(spec, 4) + 23, 77]
    assert group.configs[0].counters.registers_per_thread == 77  # the stored groups are left as they were


def test_compiled_waits_come_from_the_main_loop_of_the_machine_code(tmp_path):
    """The loop that loads the most bytes gives the waits; a build that failed or has no loop leaves the config as it
    was, and the stored groups are not changed."""
    group = validate.Group("k", "f", "validation", [validate.Config(f"c{i}", "ok", 1e-3, Counters(num_warps=4), (1,))
                                                     for i in range(3)])
    machine_code = tmp_path / "sass.jsonl"
    rows = [{"case": "k", "config": "c0", "loops": [{"loads": 2, "load_bytes": 32, "waits": 1, "instructions": 9},
                                                    {"loads": 9, "load_bytes": 144, "waits": 7, "instructions": 90}]},
            {"case": "k", "config": "c1", "status": "out_of_resources"}]
    machine_code.write_text("".join(json.dumps(row) + "\n" for row in rows))
    (out,) = validate.with_compiled_waits([group], machine_code)
    assert [c.counters.loop_load_waits for c in out.configs] == [7, 0, 0]
    assert group.configs[0].counters.loop_load_waits == 0


def test_given_the_compiler_s_waits_the_held_out_groups_pooled_pass():
    """README: given the machine code's waits, the 364 held-out groups pooled score 0.83 (0.55) / 0 % / 17 % / 16 %
    and sixteen sets pass (configs without stored machine code keep the model's own count)."""
    scores, sets = _held_out(compiled_waits=True)
    meet = sum(map(validate.passes, sets.values()))
    pooled = validate.summary(scores)
    assert len(scores) == 364 and validate.passes(pooled) and meet == 16
    assert pooled["rho"] >= 0.828 and pooled["rho_p10"] >= 0.548 and pooled["regret"] <= 0.0
    assert pooled["regret_p90"] <= 0.175 and pooled["mape"] <= 0.158


def test_the_readme_figures_hold_with_the_compiler_s_waits():
    """README: given the times Triton's machine code waits for a main loop's loads, the nine paged decodes rank
    0.81-0.92 (the model alone: 0.50-0.89) and the blind ones' picks run 8 %, 45 %, 21 %, 33 %, 2 % and 22 % slow
    (142 %, 45 %, 21 %, 363 %, 2 %, 22 %); the seven column sums rank 0.93-1.00 (0.54-0.91), and of the three slow
    picks (the fp32 sums over 8,192 and 6,000 columns, 1.9x and 2x, and over 7,000, 20 %) the first two become the
    best config."""
    spec = validate.get_spec("h200")
    groups = [g for split, csv_name in [("calibration", "h200_sweep.csv"), ("validation", "h200_sweep.csv")]
              + list(validate.HELD_OUT.items())
              for g in validate.load(validate.DATA / csv_name, validate.DATA / "h200_counters.jsonl")
              if g.split == split and (g.family == "paged_decode" or g.family == "reduction" and "colsum" in g.case)]
    waited = validate.with_compiled_waits(groups, validate.DATA / "h200_sass_loops.jsonl")
    model = validate.model_seconds(spec)
    before = {g.case: validate.score_group(g, model) for g in groups}
    after = {g.case: validate.score_group(g, model) for g in waited}
    decodes = [case for case in before if "decode" in case]
    sums = [case for case in before if "colsum" in case]
    assert len(decodes) == 9 and len(sums) == 7
    assert 0.81 <= min(after[c].rho for c in decodes) and max(after[c].rho for c in decodes) <= 0.93
    assert 0.49 <= min(before[c].rho for c in decodes) <= 0.50 and max(before[c].rho for c in decodes) <= 0.89
    blind = [c for c in decodes if c.startswith(("holdout26", "holdout27", "holdout28", "holdout29"))]
    assert [round(before[c].regret, 2) for c in blind] == [1.42, 0.45, 0.21, 3.63, 0.02, 0.22]
    assert [round(after[c].regret, 2) for c in blind] == [0.08, 0.45, 0.21, 0.33, 0.02, 0.22]
    assert min(after[c].rho for c in sums) >= 0.93 and 0.54 <= min(before[c].rho for c in sums) <= 0.55
    slow = {c: round(before[c].regret, 2) for c in sums if before[c].regret}
    assert slow == {"colsum_fp32_4096x8192": 0.89, "holdout27_colsum_fp32_3000x7000": 0.2,
                    "holdout29_colsum_fp32_4000x6000": 1.01}
    assert {c: round(after[c].regret, 2) for c in sums if after[c].regret} == {"holdout27_colsum_fp32_3000x7000": 0.2}


def test_compiled_waits_need_the_machine_s_machine_code(capsys):
    with pytest.raises(SystemExit):
        validate.main(["--machine", "mtt-s5000", "--compiled-waits"])
    assert "no machine code read for mtt-s5000" in capsys.readouterr().err


def test_a_group_none_of_whose_configs_ran_correctly_is_left_out(tmp_path):
    """A sweep whose check failed for every config of a group has no timing to rank; the other groups still score."""
    fields = ("case", "family", "split", "config", "status", "ms")  # the columns validate reads
    rows = [("good", "ok", "0.5"), ("good", "ok", "0.7"), ("bad", "wrong", "0.4"), ("bad", "wrong", "0.6")]
    measured, modeled = tmp_path / "sweep.csv", tmp_path / "counters.jsonl"
    with open(measured, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(fields)
        writer.writerows((case, "f", "validation", f"c{i}", status, ms)
                         for i, (case, status, ms) in enumerate(rows))
    modeled.write_text("".join(json.dumps({"case": case, "config": f"c{i}", "grid": [1],
                                           "counters": Counters(num_warps=4).as_dict()}) + "\n"
                               for i, (case, _, _) in enumerate(rows)))
    groups = validate.load(measured, modeled)
    assert [(g.case, [c.measured_s for c in g.configs]) for g in groups] == [("good", [0.5e-3, 0.7e-3])]


def test_compiled_registers_need_the_machine_s_compile_facts(capsys):
    with pytest.raises(SystemExit):
        validate.main(["--machine", "mtt-s5000", "--compiled-registers"])
    assert "no compile facts for mtt-s5000" in capsys.readouterr().err


def _sass_loops():
    os.environ.setdefault("WAVETILE_SWEEP_BACKEND", "wavetile")  # the reader only: no triton on this machine
    sys.path.insert(0, str(SWEEPS))
    import sass_loops

    return sass_loops


def test_sass_loop_reader_counts_loads_and_the_waits_for_them():
    listing = """
        /*0100*/                   MOV R2, R3 ;                                /* 0x0000000300027202 */
        /*0110*/               @P0 LDG.E.128 R4, desc[UR4][R2.64] ;            /* 0x0000000402040981 */
        /*0120*/                   LDG.E.128 R8, desc[UR4][R2.64+0x10] ;       /* 0x0000100402087981 */
        /*0130*/                   FADD R12, R4, R12 ;                         /* 0x0000000c040c7221 */
        /*0140*/                   LDG.E R16, desc[UR4][R2.64+0x20] ;          /* 0x0000200402107981 */
        /*0150*/                   FADD R12, R16, R12 ;                        /* 0x0000000c100c7221 */
        /*0160*/              @!P1 BRA 0x100 ;                                 /* 0xfffffffc00e49947 */
        /*0170*/                   EXIT ;                                      /* 0x000000000000794d */
    """
    # the first add waits for the two 16-byte loads issued together, the second for the 4-byte one
    assert _sass_loops().loops(listing) == [{"instructions": 7, "loads": 3, "load_bytes": 36, "waits": 2}]


def test_the_readme_figures_hold_on_the_stored_machine_code():
    """README: a loop the compiler does not software-pipeline waits for its loads several times per iteration."""
    waits = {"up to 16": [], "17-128": [], "over 128": []}  # by the bytes a thread loads per iteration
    with open(validate.DATA / "h200_sass_loops.jsonl") as f:
        for line in f:
            loops = [loop for loop in json.loads(line).get("loops", []) if loop["loads"]]
            if loops:
                main = max(loops, key=lambda loop: loop["load_bytes"])
                size = main["load_bytes"]
                waits["up to 16" if size <= 16 else "17-128" if size <= 128 else "over 128"].append(main["waits"])
    assert sum(map(len, waits.values())) == 2408
    assert np.median(waits["up to 16"]) == 1
    assert np.median(waits["17-128"]) == 2 and np.median(waits["over 128"]) == 10 and max(waits["over 128"]) >= 100


def _looping_configs():
    """(family, counters, key, the SASS loops that load) of each stored config whose counters have exactly one loop
    phase that is not software-pipelined: the loops of Triton's machine code for it (none when it was unrolled
    away)."""
    sass = {}
    with open(validate.DATA / "h200_sass_loops.jsonl") as f:
        for line in f:
            row = json.loads(line)
            sass[(row["case"], row["config"])] = [loop for loop in row.get("loops", []) if loop["loads"]]
    for csv_name in ["h200_sweep.csv"] + list(validate.HELD_OUT.values()):
        for group in validate.load(validate.DATA / csv_name, validate.DATA / "h200_counters.jsonl"):
            for config in group.configs:
                loops, c = sass.get((group.case, config.config)), config.counters
                keys = [k for k in c.phase_rounds if not k.startswith("-") and c.phase_rounds[k]]
                if loops is not None and len(keys) == 1 and keys[0].split(":")[1] == "0":
                    yield group.family, c, keys[0], loops


def _unrolled_copies(c: Counters, key: str, loops: list[dict]) -> float:
    """Copies of a source iteration in the machine code's loop: the bytes a thread loads per trip of the SASS
    loop over those of one source iteration; all of them when no loop is left."""
    rounds = c.phase_rounds[key] / max(1, c.programs)
    if not loops:
        return rounds
    bytes_per_thread = c.phase_bytes.get(key, 0) / c.phase_rounds[key] / (c.num_warps * 32)
    return max(1.0, loops[0]["load_bytes"] / bytes_per_thread)


def test_the_unrolling_rule_holds_on_the_stored_machine_code():
    """README: the copies of a loop body the cost model takes the backend to unroll (MachineSpec.unroll_*) agree
    with Triton's machine code (within 25 %) on 868 of the 953 configs with one loop that is not pipelined (723 of the
    772 before holdout21, holdout25 and holdout29's machine code, 721 of those before a body's loads were counted;
    532 of the first 576, where LLVM's own parameters, a power of two up to 8 copies within 75 instructions, agreed on
    472); every loop of constant trip count it unrolled fully is predicted so, and the loops of one-element loads over
    unaligned column sums are left rolled, as the machine code has them."""
    from simulator.cost import _Phase
    spec = validate.get_spec("h200")
    single = [(family, c, _Phase.of(key, c, max(1, c.programs)), _unrolled_copies(c, key, loops), not loops)
              for family, c, key, loops in _looping_configs() if len(loops) <= 1]

    def agreeing(machine) -> int:
        return sum(abs(np.log2(actual / phase.unrolled(machine, c.num_warps))) < np.log2(1.25)
                   for _, c, phase, actual, _ in single)

    assert (agreeing(spec), len(single)) == (868, 953)
    full = [phase.unrolled(spec, c.num_warps) == actual for _, c, phase, actual, gone in single if gone]
    assert len(full) == 22 and all(full)
    # counting each load once ties; counting none, with the threshold of 40, agrees on 864
    assert agreeing(spec.replace(unroll_load_instructions=1.0)) == 868
    assert agreeing(_old_unrolling()) == 864
    unaligned = [(phase.unrolled(spec, c.num_warps), actual) for family, c, phase, actual, _ in single
                 if family == "reduction" and phase.accesses / c.num_warps == 8]
    assert len(unaligned) >= 4 and all(modeled == 1 and actual < 1.25 for modeled, actual in unaligned)
    # 16 x 128 bf16 tiles on 8 warps: 85 instructions a source iteration past an unaligned bound, 30 over an aligned one
    with open(validate.DATA / "h200_sass_loops.jsonl") as f:
        rows = {row["case"]: row for row in map(json.loads, f)
                if row["config"] == '{"BLOCK_M": 16, "BLOCK_N": 128, "num_warps": 8}'}
    (narrow,) = [loop for loop in rows["holdout28_colsum_bf16_5000x5000"]["loops"] if loop["loads"]]
    (wide,) = [loop for loop in rows["holdout26_colsum_bf16_6000x4096"]["loops"] if loop["loads"]]
    assert narrow["instructions"] == 85 and round(wide["instructions"] / 4) == 30  # the wide loop unrolled 4 times


def test_the_readme_figures_hold_on_instruction_counts_against_the_machine_code():
    """README: the instructions the model counts per iteration of a loop it does not pipeline, against those of
    Triton's machine code for the same loop (per source iteration: the SASS loop's count over the copies the
    backend unrolled), median by family."""
    ratios: dict[str, list[float]] = {}
    for family, c, key, loops in _looping_configs():
        if len(loops) != 1:
            continue
        rounds, warps = c.phase_rounds[key], c.num_warps
        copies = _unrolled_copies(c, key, loops)
        ratio = c.phase_instructions.get(key, 0) / rounds / warps / (loops[0]["instructions"] / copies)
        ratios.setdefault(family, []).append(ratio)
    median = {family: float(np.median(values)) for family, values in ratios.items()}
    assert len(median) == 22 and sum(0.9 <= m <= 1.2 for m in median.values()) == 9
    assert median["holdout6_moe_combine"] <= 1.1 and 0.95 <= median["holdout_logsumexp"] <= 1.1
    assert median["holdout5_argmax"] <= 1.5 and median["holdout2_gemv"] <= 1.4


def test_the_readme_figures_hold_on_dram_bandwidth_by_run_length():
    """README: reads made of short contiguous runs lose DRAM bandwidth, more when far-apart runs are read together."""
    with open(validate.DATA / "h200_dram_runs.json") as f:
        runs = json.load(f)["runs"]
    best = max(run["bytes_per_s"] for run in runs)
    share = {(run["run_bytes"], run["columns_fastest"]): run["bytes_per_s"] / best for run in runs}
    quoted = {(64, False): 0.70, (32, False): 0.66, (64, True): 0.93, (32, True): 0.77}
    assert all(abs(share[key] - value) <= 0.006 for key, value in quoted.items())
    assert min(value for (size, _), value in share.items() if size >= 128) >= 0.945
    # writes lose less at 64 bytes and more at 128 when far apart: 79 % and 83 %, neighbours 96-97 %
    with open(validate.DATA / "h200_dram_runs.json") as f:
        writes = json.load(f)["write_runs"]
    best = max(run["bytes_per_s"] for run in writes)
    share = {(run["run_bytes"], run["columns_fastest"]): run["bytes_per_s"] / best for run in writes}
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


def test_triton_lays_a_tile_with_no_contiguous_dim_down_its_rows():
    """The H200's facts behind the profiler's tie rule (jit.profiler._fastest_last): Triton 3.6 gives the interleaved
    rotary's stride-2 tile lanes along dim 0 first, and Nsight counts a sector per row for each warp store."""
    with open(validate.DATA / "h200_compile_facts.jsonl") as f:
        facts = {(r["case"], r["config"]): r for r in map(json.loads, f)}
    rotary = "holdout8_rotary_interleaved_bf16_t8192_h32_d128"
    layouts = facts[(rotary, json.dumps({"BLOCK_T": 4, "HALF": 64, "num_warps": 4}, sort_keys=True))]["blocked"]
    assert "threadsPerWarp = [4, 8]" in layouts[0] and "order = [0, 1]" in layouts[0]
    with open(validate.DATA / "h200_ncu.jsonl") as f:
        ncu = [json.loads(line) for line in f]
    stores = {json.loads(r["config"])["BLOCK_T"]: r["metrics"] for r in ncu if r["case"] == rotary}
    per_request = {rows: m["l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"]
                   / m["l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"] for rows, m in stores.items()}
    assert per_request == {1: 4.0, 2: 4.0, 4: 4.0, 8: 8.0, 16: 16.0, 32: 32.0}


def test_cross_warp_reductions_move_the_shared_memory_wavefronts_nsight_counts():
    """A paged decode's sums down its [BLOCK_N, D] tiles exchange partials through shared memory with Triton's layout
    (jit.shared_model.reduction_exchange): on 2-8 warps the stored counters hold 0.4-0.9 of the wavefronts Nsight
    Compute counts, a median 0.72 (what is left: the [BLOCK_N] score reductions and layout conversions of its
    page offsets, which 1-warp configs show alone); laid out contiguously they held 0.01-0.04."""
    with open(validate.DATA / "h200_counters.jsonl") as f:
        counters = {(r["case"], r["config"]): r["counters"] for r in map(json.loads, f) if r.get("counters")}
    with open(validate.DATA / "h200_ncu.jsonl") as f:
        ncu = [r for r in map(json.loads, f) if r["case"].startswith("decode_")]
    ratios = [counters[(r["case"], r["config"])]["exchange_wavefronts"]
              / r["metrics"]["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"]
              for r in ncu if json.loads(r["config"])["num_warps"] > 1]
    assert len(ratios) == 23
    assert 0.4 <= min(ratios) and max(ratios) <= 0.9 and np.median(ratios) >= 0.7


def test_the_readme_figures_hold_on_the_register_estimate():
    """README: the stored configs' register estimates against Triton's n_regs where it does not spill, median error
    12 % / 13 % / 17 % (calibration / validation / held out), p90 42 % held out."""
    with open(validate.DATA / "h200_compile_facts.jsonl") as f:
        facts = {(r["case"], r["config"]): r for r in map(json.loads, f)}
    errors: dict[str, list[float]] = {}
    for csv_name in ["h200_sweep.csv"] + list(validate.HELD_OUT.values()):
        for group in validate.load(validate.DATA / csv_name, validate.DATA / "h200_counters.jsonl"):
            split = "held out" if group.split.startswith("holdout") else group.split
            for config in group.configs:
                fact = facts.get((group.case, config.config), {})
                if config.counters is not None and fact.get("n_regs") and not fact.get("n_spills"):
                    estimate = min(255, config.counters.registers_per_thread)
                    errors.setdefault(split, []).append(abs(estimate / fact["n_regs"] - 1))
    median = {split: np.median(values) for split, values in errors.items()}
    assert {split: len(values) for split, values in errors.items()} == {
        "calibration": 392, "validation": 670, "held out": 5086}
    assert median["calibration"] <= 0.121 and median["validation"] <= 0.129 and median["held out"] <= 0.166
    assert np.percentile(errors["held out"], 90) <= 0.417


def test_the_readme_figures_hold_on_modeling_speed():
    """README: modeling one stored config took a median 0.11 s of CPU (p90 0.40 s, at most 8.9 s), as measured
    when the counters were made (benchmarks/gpu/model_sweep.py records each config's CPU seconds)."""
    with open(validate.DATA / "h200_counters.jsonl") as f:
        seconds = [json.loads(line)["cpu_s"] for line in f]
    assert len(seconds) == 8505
    assert np.median(seconds) <= 0.106 and np.percentile(seconds, 90) <= 0.4 and max(seconds) <= 8.87


def test_the_readme_figures_hold_on_holdout10s_atomics():
    """README: modeled by how many lines each instruction touches, the hottest line and fenced round trips, the
    embedding backward ranks 0.97 and 0.89; the histograms' time errors are 7 % and 16 %, picks 0 % and 2.6 %
    slow."""
    model = validate.model_seconds(validate.get_spec("h200"))
    scores = {g.case: validate.score_group(g, model) for g in
              validate.load(validate.DATA / "h200_holdout10.csv", validate.DATA / "h200_counters.jsonl")}
    assert scores["holdout10_embedding_bwd_fp32_t16384_d1024_v50000"].rho >= 0.97
    assert scores["holdout10_embedding_bwd_bf16_t10000_d3000_v8000"].rho >= 0.89
    histograms = scores["holdout10_histogram_16777216_b4096"], scores["holdout10_histogram_10000003_b1000"]
    assert histograms[0].mape <= 0.07 and histograms[1].mape <= 0.165
    assert histograms[0].regret <= 0.001 and histograms[1].regret <= 0.027
