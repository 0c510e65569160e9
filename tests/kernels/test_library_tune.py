"""`python -m kernels.tune` (the library-wide sweep) and the config table: round trip, host functions launching the
table's pick, a wrong config rejected by the reference check, and --ops filtering. Tiny steps, in-process runs."""

import json

import numpy as np
import pytest
import tune_fixture

import simulator
from jit.autotune import capture_launches
from jit.tune import TuneProblem, sweep
from kernels import config_table, moe, registry, tuning
from kernels import tune as libtune
from kernels.norm import AUTOTUNE_CONFIGS, rmsnorm, rmsnorm_kernel_tuned, rmsnorm_reference

FIXTURE = "tune_fixture:workload"


@pytest.fixture
def table_dir(tmp_path, monkeypatch):
    """Host functions read tables from a fresh directory (not the committed kernels/configs)."""
    monkeypatch.setattr(config_table, "TABLE_DIR", tmp_path)
    return tmp_path


@pytest.fixture
def fixture_cases(monkeypatch):
    monkeypatch.setattr(registry, "_PROVIDERS", [*registry._PROVIDERS, tune_fixture.cases])


def _rms_key(n_rows, n_cols, dtype=np.float32):
    x = np.zeros((n_rows, n_cols), dtype)
    w = np.zeros(n_cols, np.float32)
    args = (x, x, w, x, x, n_rows, n_cols, 1e-6)
    return config_table.shape_key(rmsnorm_kernel_tuned, args, {"HAS_RESIDUAL": False, "ZERO_CENTERED": False,
                                                              "BLOCK_N": 256})


def test_table_round_trips_and_lookup_rules(table_dir):
    entries = [{"key": _rms_key(1, 200), "config": config_table.as_config(AUTOTUNE_CONFIGS[2]).to_dict()},
               {"key": _rms_key(1, 4096), "config": config_table.as_config(AUTOTUNE_CONFIGS[3]).to_dict()}]
    path = config_table.save("mtt-s5000", {"norm._rmsnorm_kernel": entries}, {"written_by": "test"})
    assert path == table_dir / "mtt-s5000.json"
    loaded = config_table.load("mtt-s5000")["norm._rmsnorm_kernel"]
    assert sorted(json.dumps(e, sort_keys=True) for e in loaded) == sorted(json.dumps(e, sort_keys=True)
                                                                           for e in entries)
    assert config_table.lookup(loaded, _rms_key(1, 200)) == (entries[0], config_table.EXACT)
    assert config_table.lookup(loaded, _rms_key(1, 3000)) == (entries[1], config_table.NEAREST)  # log2 nearest
    assert config_table.lookup(loaded, _rms_key(1, 300)) == (entries[0], config_table.NEAREST)
    assert config_table.lookup(loaded, _rms_key(1, 200, np.float16)) == (None, config_table.DEFAULT)  # dtypes
    assert config_table.load("h200") == {}


def test_host_function_launches_the_tables_config(table_dir, rng):
    n_rows, n_cols = 37, 200
    chosen = config_table.as_config(AUTOTUNE_CONFIGS[3])  # ROWS=8: not the first config
    config_table.save("mtt-s5000", {"norm._rmsnorm_kernel": [{"key": _rms_key(n_rows, n_cols),
                                                              "config": chosen.to_dict()}]}, {})
    x = rng.standard_normal((n_rows, n_cols)).astype(np.float32)
    w = rng.standard_normal(n_cols).astype(np.float32)
    with simulator.machine("mtt-s5000"), simulator.profile() as prof:
        got = rmsnorm(x, w)
    assert config_table.last_pick(rmsnorm_kernel_tuned) == config_table.EXACT
    assert prof.launches[-1].constexprs["ROWS"] == 8
    np.testing.assert_allclose(got, rmsnorm_reference(x, w), rtol=1e-5, atol=1e-6)
    with simulator.machine("mtt-s5000"), simulator.profile() as prof:
        rmsnorm(x[:, :150].copy(), w[:150])  # same dtypes, nearest key: the table's pick again
    assert config_table.last_pick(rmsnorm_kernel_tuned) == config_table.NEAREST
    assert prof.launches[-1].constexprs["ROWS"] == 8
    with simulator.machine("h200"), simulator.profile() as prof:  # no table for h200: the first config
        rmsnorm(x, w)
    assert config_table.last_pick(rmsnorm_kernel_tuned) == config_table.DEFAULT
    assert prof.launches[-1].constexprs["ROWS"] == AUTOTUNE_CONFIGS[0]["ROWS"]


def test_a_wrong_config_is_reported_and_never_chosen(table_dir, fixture_cases, capsys):
    rc = libtune.main(["--models", FIXTURE, "--decode", "1,3", "--prefill", "0", "--jobs", "1", "--fresh",
                       "--table-dir", str(table_dir)])
    out = capsys.readouterr().out
    assert rc == 0
    table = json.loads((table_dir / "mtt-s5000.json").read_text())["kernels"]["tune_fixture.scale_kernel"]
    assert [e["key"]["values"] for e in table] == [{"n": 300_007}, {"n": 900_007}]
    bad = config_table.as_config(tune_fixture.AUTOTUNE_CONFIGS[2]).to_dict()
    assert all(e["config"] != bad for e in table)
    assert "config 2 rejected: tune.scale n=1000: max err" in out
    report = (table_dir / "mtt-s5000.report.md").read_text()
    assert "tune_fixture.scale_kernel" in report and "config 2 rejected" in report
    # the check is what kept it out: the model alone ranks the half-done config fastest
    target = libtune.collect_targets([libtune.tune_shapes.Step(FIXTURE, "decode", 3)])[0]
    verdicts = {("tune_fixture.scale_kernel", i): (True, "ok") for i in range(3)}
    unchecked = libtune.tune_target(target, "mtt-s5000", verdicts, None, 1, fresh=False)
    assert unchecked.best == bad


def test_ops_filters_kernels_and_the_table_keeps_the_rest(table_dir, capsys):
    other = {"key": {"values": {"n": 1}, "dtypes": ["float32"]}, "config": {"kwargs": {"BLOCK": 1}}}
    config_table.save("mtt-s5000", {"elsewhere.kernel": [other]}, {})
    (table_dir / "mtt-s5000.report.csv").write_text(  # an earlier report: its other kernel's row stays
        "kernel,shape_key,steps,configs,default_us,best_us,best_config,notes\n"
        'elsewhere.kernel,n=1 | float32,s,2,4.0,3.0,"{}",config 1 failed: x; config 0 rejected: y\n'
        "norm._gated_rmsnorm_kernel,n=9 | float32,s,2,4.0,3.0,{},\n")  # a swept kernel's old row goes
    rc = libtune.main(["--models", "tiny", "--decode", "2", "--prefill", "0", "--ops", "norm._gated", "--jobs", "1",
                       "--table-dir", str(table_dir)])
    assert rc == 0
    kernels = json.loads((table_dir / "mtt-s5000.json").read_text())["kernels"]
    assert set(kernels) == {"elsewhere.kernel", "norm._gated_rmsnorm_kernel"}
    assert kernels["elsewhere.kernel"] == [other]
    csv_rows = (table_dir / "mtt-s5000.report.csv").read_text().splitlines()
    assert len(csv_rows) == 3 and csv_rows[1].startswith("elsewhere.kernel")
    assert csv_rows[2].startswith("norm._gated_rmsnorm_kernel") and "n=9" not in csv_rows[2]
    md = (table_dir / "mtt-s5000.report.md").read_text()
    assert "| elsewhere.kernel " in md and "| 2        |" in md  # its two rejected configs, read back from notes
    assert "1 kernels" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="no autotuned kernel matches --ops 'nothing'"):
        libtune.main(["--models", "tiny", "--decode", "2", "--prefill", "0", "--ops", "nothing",
                      "--table-dir", str(table_dir)])



def test_attention_launches_the_tables_config_and_keeps_its_default(table_dir, rng):
    """A family that picked its own default before (attention: default_config by head dim) now takes the table's
    pick, and its own default, not the first config, when the table has none."""
    from jit.autotune import capture_launches
    from kernels.attention import AUTOTUNE_CONFIGS as ATTN
    from kernels.attention import attention, attention_fwd_tuned, attention_reference

    B, S, H, Hkv, D = 1, 37, 4, 2, 16  # 37 queries: not a multiple of any BLOCK_M
    q, k, v = (rng.standard_normal((B, S, h, D)).astype(np.float32) for h in (H, Hkv, Hkv))
    with capture_launches() as launches:  # how kernels.tune sees the launch, and the key it tunes it under
        attention(q, k, v)
    assert [config_table.kernel_id(launch.kernel) for launch in launches] == ["attention.attention_fwd_kernel"]
    key = config_table.shape_key(launches[0].kernel, launches[0].args, launches[0].kwargs)
    config_table.save("mtt-s5000", {"attention.attention_fwd_kernel": [{"key": key, "config": ATTN[4].to_dict()}]},
                      {})
    with simulator.machine("mtt-s5000"), simulator.profile() as prof:
        got = attention(q, k, v)
    assert config_table.last_pick(attention_fwd_tuned) == config_table.EXACT
    assert (prof.launches[-1].constexprs["BLOCK_M"], prof.launches[-1].constexprs["BLOCK_N"]) == (32, 32)
    np.testing.assert_allclose(got, attention_reference(q, k, v), rtol=1e-5, atol=1e-5)
    with simulator.machine("h200"), simulator.profile() as prof:  # no table: attention's own default (64x64)
        attention(q, k, v)
    assert config_table.last_pick(attention_fwd_tuned) == config_table.DEFAULT
    assert (prof.launches[-1].constexprs["BLOCK_M"], prof.launches[-1].constexprs["BLOCK_N"]) == (64, 64)
    wide = attention_fwd_tuned.named_args((), {"head_dim": 160})  # above 128 its default is 32-key blocks
    assert config_table.default_config(attention_fwd_tuned, ATTN, (), {"head_dim": 160}) == ATTN[1]
    assert attention_fwd_tuned.default_rule(wide) == ATTN[1]


def _routed_key(tuned, numel, n, k, dtype):
    """The table key of a routed grouped-GEMM launch: its @autotune key values and array dtypes, written out."""
    arrays = [dtype, dtype, "int32", "int32", dtype] if tuned is moe._grouped_swiglu_tuned else \
        [dtype, dtype, "int32", "int32", "float32", "float32"]
    return {"values": {"numel": numel, "N": n, "K": k, "direct": 0}, "dtypes": arrays}


def test_routed_moe_launches_the_tables_block_height_and_matches_the_reference(table_dir, rng):
    m, hidden, experts, inter, k = 21, 80, 6, 48, 3  # 63 pairs: partial blocks of 32 rows
    a = moe.make_moe_inputs(rng, m, hidden, experts, inter, 1, np.float16)
    tall = config_table.as_config(moe.AUTOTUNE_CONFIGS[1])  # BLOCK_M 32: not the default's 16
    entries = {f"moe.{t.jit_function.__name__}": [{"key": _routed_key(t, m * k, n, kk, "float16"),
                                                   "config": tall.to_dict()}]
               for t, n, kk in ((moe._grouped_swiglu_tuned, inter, hidden), (moe._grouped_down_tuned, hidden, inter))}
    config_table.save("mtt-s5000", entries, {})
    with simulator.machine("mtt-s5000"), simulator.profile() as prof:
        got = moe.moe_forward(a["x"], a["w_router"], a["w1"], a["w2"], k)
    grouped = [r for r in prof.launches if r.kernel.startswith("_grouped")]
    assert [r.kernel for r in grouped] == ["_grouped_swiglu_kernel", "_grouped_down_kernel"]
    assert [r.constexprs["BLOCK_M"] for r in grouped] == [32, 32]
    assert config_table.last_pick(moe._grouped_down_tuned) == config_table.EXACT
    w, ids, _ = moe.moe_router_reference(a["x"], a["w_router"], k)
    np.testing.assert_allclose(got.astype(np.float64), moe.moe_reference(a["x"], a["w1"], a["w2"], w, ids),
                               rtol=2e-3, atol=2e-3)  # fp16 intermediate and output, as test_moe's tolerance
    with simulator.machine("h200"), simulator.profile() as prof:  # no table: today's first config
        moe.moe_forward(a["x"], a["w_router"], a["w1"], a["w2"], k)
    assert {r.constexprs["BLOCK_M"] for r in prof.launches if r.kernel.startswith("_grouped")} == {16}
    # with every config's time in the entries, the height the two GEMMs favour together: 16: 20, 32: 25, 64: 14 us
    for times, (name, [e]) in zip(([10.0, 5.0, 6.0], [10.0, 20.0, 8.0]), entries.items()):
        entries[name] = [{**e, "config_us": times}]
    config_table.save("mtt-s5000", entries, {})
    with simulator.machine("mtt-s5000"), simulator.profile() as prof:
        again = moe.moe_forward(a["x"], a["w_router"], a["w1"], a["w2"], k)
    assert [r.constexprs["BLOCK_M"] for r in prof.launches if r.kernel.startswith("_grouped")] == [64, 64]
    np.testing.assert_allclose(again.astype(np.float64), moe.moe_reference(a["x"], a["w1"], a["w2"], w, ids),
                               rtol=2e-3, atol=2e-3)


def test_a_routed_tune_problem_is_realigned_for_each_config(rng):
    """The captured routed launch, re-derived by moe's builder, runs every config on rows padded to its height."""
    a = moe.make_moe_inputs(rng, 9, 64, 5, 32, 1, np.float32)
    with simulator.machine("mtt-s5000"), capture_launches() as launches:
        moe.moe_forward(a["x"], a["w_router"], a["w1"], a["w2"], 2)
    routed = [c for c in launches if c.kernel is moe._grouped_swiglu_tuned and c.args[-1] == 0][0]
    problem = TuneProblem(routed.kernel, routed.args, routed.grid, [], routed.kwargs, modeled_only=True,
                          builder=tuning.builder_of(routed.kernel))
    rows = sweep("moe", {}, "mtt-s5000", list(routed.kernel.configs), problem=problem, progress=False)
    assert all(r.record.ok for r in rows), [r.record.error for r in rows]
    for config in routed.kernel.configs:
        rebuilt = moe.routed_tune_problem(problem, config.to_dict())
        sorted_ids, expert_ids = rebuilt.args[2], rebuilt.args[3]
        assert sorted_ids.size == expert_ids.size * config.kwargs["BLOCK_M"]
        assert sorted(sorted_ids[sorted_ids < 18]) == list(range(18))  # every pair once
