"""simulator.validate: the scores it computes, a run over a slice of the stored H200 sweep, and the figures the
README quotes for the validation split and the held-out sets."""

import csv
import json
import sys

import numpy as np
import pytest
from stored_scores import SWEEPS, held_out_scores, split_figures, split_scores

from simulator import validate
from simulator.counters import Counters


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


def test_the_readme_figures_hold_on_the_validation_split():
    """README 'How far the modeled time can be trusted' quotes these: a model change that makes them worse
    must update the README (and say why)."""
    total = split_figures("validation", "h200_sweep.csv")
    assert total["groups"] == 41
    assert total["rho"] >= 0.898 and total["rho_p10"] >= 0.673 and total["regret"] <= 0.0
    assert total["regret_p90"] <= 0.16 and total["mape"] <= 0.147
    assert total["rejected_ok"] == 0 and total["missed_overflows"] == 0 and total["overflows"] == 9


@pytest.mark.parametrize("split, groups, rho, regret, regret_p90, mape", [
    ("holdout", 10, 0.834, 0.025, 0.135, 0.148),
    ("holdout2", 11, 0.612, 0.088, 0.2, 0.17),
    ("holdout3", 10, 0.856, 0.0, 0.156, 0.143),
    ("holdout4", 10, 0.877, 0.0, 0.096, 0.163),
    ("holdout5", 10, 0.789, 0.0, 0.293, 0.149),
    ("holdout6", 10, 0.823, 0.034, 0.175, 0.156),
    ("holdout7", 10, 0.838, 0.0, 0.05, 0.155),
    ("holdout8", 10, 0.845, 0.0, 0.052, 0.115),
    ("holdout9", 10, 0.773, 0.028, 0.163, 0.144),
    ("holdout10", 10, 0.687, 0.011, 0.379, 0.16),
    ("holdout11", 10, 0.779, 0.0, 0.1, 0.155),
    ("holdout12", 10, 0.655, 0.08, 0.833, 0.175),
    ("holdout13", 10, 0.783, 0.042, 0.164, 0.229),
    ("holdout14", 10, 0.855, 0.048, 0.179, 0.153),
    ("holdout15", 6, 0.809, 0.067, 0.162, 0.173),
    ("holdout16", 13, 0.865, 0.0, 0.122, 0.161),
    ("holdout17", 10, 0.766, 0.0, 0.038, 0.182),
    ("holdout18", 11, 0.795, 0.0, 0.123, 0.173),
    ("holdout19", 13, 0.856, 0.0, 0.056, 0.157),
    ("holdout20", 8, 0.809, 0.086, 0.14, 0.11),
    ("holdout21", 8, 0.306, 0.183, 0.681, 0.222),
    ("holdout22", 14, 0.874, 0.0, 0.121, 0.155),
    ("holdout23", 13, 0.850, 0.037, 0.143, 0.155),
    ("holdout24", 22, 0.830, 0.061, 0.209, 0.167),
    ("holdout25", 23, 0.769, 0.0, 0.169, 0.171),
    ("holdout26", 20, 0.850, 0.0, 0.11, 0.144),
    ("holdout27", 20, 0.867, 0.0, 0.112, 0.146),
    ("holdout28", 19, 0.875, 0.026, 0.108, 0.153),
    ("holdout29", 23, 0.849, 0.046, 0.124, 0.161),
    ("holdout30", 24, 0.840, 0.0, 0.146, 0.159),
    ("holdout31", 25, 0.819, 0.05, 0.296, 0.149),
    ("holdout32", 30, 0.848, 0.0, 0.136, 0.14),
    ("holdout33", 15, 0.819, 0.081, 0.183, 0.168),
])
def test_the_readme_figures_hold_on_the_held_out_kernels(split, groups, rho, regret, regret_p90, mape):
    total = split_figures(split, f"h200_{split}.csv")
    assert total["groups"] == groups
    assert total["rho"] >= rho and total["regret"] <= regret and total["regret_p90"] <= regret_p90
    assert total["mape"] <= mape and total["rejected_ok"] == 0 and total["missed_overflows"] == 0


def test_the_readme_figures_hold_where_stores_split():
    """README, the split-store change (as of stop 49's model): soft-capping ranks 0.74 with its pick the best
    config, the seeded dropout 0.95, the fp32 odd-length multiply-add 0.52, GeGLU's backward over 31,000,003 elements
    0.94, the unaligned bf16 add 0.79."""
    scores = {}
    for split, csv_name in [("calibration", "h200_sweep.csv")] + list(validate.HELD_OUT.items()):
        scores.update({s.case: s for s in split_scores(split, csv_name)})
    softcap = scores["holdout7_softcap_fp32_50M"]
    assert round(softcap.rho, 2) == 0.74 and round(softcap.regret, 2) == 0.0
    expected = {"holdout3_dropout_fp32_16M": 0.95, "holdout12_fma3_fp32_9999991": 0.52,
                "holdout17_geglu_bwd_fp16_31000003": 0.94, "add_bf16_unaligned_48M": 0.79}
    assert {case: round(scores[case].rho, 2) for case in expected} == expected


def test_the_readme_figures_hold_on_holdout18_s_groups():
    """README, holdout18, the layout Triton proves and the L1's time in a round, as of stop 49's model: attention, the
    skinny matmul, the fp16 add and RMSNorm rank 0.79-0.96; the odd-N matmuls' picks run 5 % (holdout18), 0 % and 0 %
    slow (holdout19), the bf16 one with a [N, K] weight 12 % (rho 0.79); Triton's looped LayerNorm ranks 0.92, the
    Welford one 0.63, the 64-channel im2col 0.69, the depthwise convolution 0.71, holdout19's LayerNorm 0.92; the
    transpose -0.23."""
    scores = {s.case: s for split in ("holdout3", "holdout13", "holdout14", "holdout15", "holdout18", "holdout19")
              for s in split_scores(split, f"h200_{split}.csv")}
    good = ["attention_fp16_d64_bh16_s2999", "matmul_fp16_skinny_m5", "add_fp16_20M"]
    assert all(0.79 <= scores[f"holdout18_{name}"].rho <= 0.965 for name in good)
    assert round(scores["holdout18_rmsnorm_bf16_5000x4099"].rho, 2) == 0.83
    picks = {case: round(scores[case].regret, 2) for case in (
        "holdout18_matmul_fp16_1999x3001x1001", "holdout19_matmul_fp16_3000x1000x2000",
        "holdout19_matmul_bf16_2048x4100x1536", "holdout18_matmul_bf16_wt_777x5003x2049")}
    assert list(picks.values()) == [0.05, 0.0, 0.0, 0.12]
    assert round(scores["holdout18_matmul_bf16_wt_777x5003x2049"].rho, 2) == 0.79
    ranks = {"holdout3_layernorm_looped_bf16_16384x3000": 0.92, "holdout15_welford_layernorm_fp16_8192x7000": 0.63,
             "holdout13_im2col_fp16_n8_56x56_c64": 0.69, "holdout14_depthwise_conv3x3_fp16_n32_56x56_c128": 0.71,
             "holdout19_layernorm_bf16_7000x2049": 0.92, "holdout18_transpose_fp32_3001x4099": -0.23}
    assert {case: round(scores[case].rho, 2) for case in ranks} == ranks


def test_the_readme_figures_hold_on_what_to_trust():
    """README 'Trust it for ...': the median rank correlation of the kernel families it names, the worst pick of a
    LayerNorm (a Welford one, 30 % slow; Triton's looped ones pick their best config since stop 47) and the row sums'
    rank."""
    scores = {}
    for split, csv_name in [("validation", "h200_sweep.csv")] + list(validate.HELD_OUT.items()):
        scores.update({s.case: s for s in split_scores(split, csv_name)})

    def rho(prefix: str) -> float:
        return float(np.median([s.rho for case, s in scores.items() if case.startswith(prefix)]))

    assert rho("softmax_") >= 0.94 and rho("rmsnorm_") >= 0.94 and rho("attention_") >= 0.86
    assert rho("holdout2_bmm") >= 0.967 and rho("holdout7_w8a16") >= 0.925
    assert rho("matmul_") >= 0.886
    assert max(s.regret for case, s in scores.items() if "layernorm" in case) <= 0.305
    assert max(s.regret for case, s in scores.items() if case.startswith("holdout3_layernorm_looped")) == 0
    row_sums = [s.rho for case, s in scores.items() if case.startswith("rowsum")]
    assert min(row_sums) >= 0.67


def test_twenty_one_held_out_sets_meet_every_threshold_and_all_groups_pooled_do():
    """README and tutorial 04: holdout, holdout3, holdout4, holdout6, holdout7, holdout8, holdout14 to holdout16,
    holdout19, holdout20, holdout22 to holdout24, holdout26 to holdout30, holdout32 and holdout33 meet the validation
    thresholds
    (rho >= 0.8, picks <= 10 % / 25 % slow, time error <= 25 %); the other twelve do not (holdout31, scored blind,
    misses the picks' p90). All 458 groups pooled meet them. Every set but holdout21 ranks 0.61-0.88 with its picks
    0-9 % slow at the median (tutorial 04)."""
    scores, sets = held_out_scores()
    rest = [t for split, t in sets.items() if split != "holdout21"]
    assert 0.61 <= min(t["rho"] for t in rest) and max(t["rho"] for t in rest) < 0.885
    assert max(t["regret"] for t in rest) <= 0.087
    meet = {split for split, t in sets.items()
            if t["rho"] >= 0.8 and t["regret"] <= 0.10 and t["regret_p90"] <= 0.25 and t["mape"] <= 0.25}
    assert meet == {"holdout", "holdout3", "holdout4", "holdout6", "holdout7", "holdout8", "holdout14", "holdout15",
                    "holdout16", "holdout19", "holdout20", "holdout22", "holdout23", "holdout24", "holdout26",
                    "holdout27", "holdout28", "holdout29", "holdout30", "holdout32", "holdout33"}
    pooled = validate.summary(scores)  # README: the 458 groups pooled score 0.84 (0.55) / 0 % / 18 % / 16 %
    assert len(scores) == 458 and validate.passes(pooled) and pooled["rho"] >= 0.841 and pooled["rho_p10"] >= 0.552
    assert pooled["regret"] <= 0.0 and pooled["regret_p90"] <= 0.182 and pooled["mape"] <= 0.157


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


def test_the_readme_figures_hold_on_modeling_speed():
    """README: modeling one stored config took a median 0.12 s of CPU (p90 0.41 s, at most 8.9 s), as measured
    when the counters were made (benchmarks/gpu/model_sweep.py records each config's CPU seconds)."""
    with open(validate.DATA / "h200_counters.jsonl") as f:
        seconds = [json.loads(line)["cpu_s"] for line in f]
    assert len(seconds) == 9732
    assert np.median(seconds) <= 0.119 and np.percentile(seconds, 90) <= 0.406 and max(seconds) <= 8.87
