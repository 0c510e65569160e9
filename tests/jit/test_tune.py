"""The tune script: config spaces, sweeps with output checks, ranked tables, CSV/JSON, --save, --jobs."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest

import dsl as tl
from jit import Config, autotune, cdiv, jit
from jit.tune import TuneProblem, config_space, main, make_problem, rank, sweep, table, tune_problem

HERE = Path(__file__).resolve()
N = 300


@autotune([Config({"BLOCK": 32, "BUG": False}), Config({"BLOCK": 128, "BUG": False}, num_warps=2)], key=["n"])
@jit
def twice(x_ptr, out_ptr, n, BLOCK: tl.constexpr, BUG: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x * 3.0 if BUG else x * 2.0, mask=mask)


@tune_problem(twice, name="test.twice")
def twice_problem(n: int = N) -> TuneProblem:
    x = np.random.default_rng(1).standard_normal(n).astype(np.float32)
    return TuneProblem(twice, args=(x, np.zeros_like(x), n), grid=lambda meta: (cdiv(n, meta["BLOCK"]),),
                       outputs=["out_ptr"], rtol=1e-6, atol=1e-6)


def test_config_space_sources():
    problem = twice_problem()
    assert config_space(problem) == twice.configs
    space = config_space(problem, ["BLOCK=32,64", "BUG=False", "num_warps=1,4"])
    assert len(space) == 4 and Config({"BLOCK": 64, "BUG": False}, num_warps=1) in space
    assert all(c.num_warps in (1, 4) and "num_warps" not in c.kwargs for c in space)
    with pytest.raises(SystemExit, match="NAME=V1"):
        config_space(problem, ["BLOCK"])


def test_sweep_checks_outputs_and_reports_failures():
    configs = [Config({"BLOCK": 48, "BUG": False}), Config({"BLOCK": 64, "BUG": False}),
               Config({"BLOCK": 64, "BUG": True}), Config({"BLOCK": 32, "BUG": False}, num_warps=2)]
    rows = sweep("test.twice", {"n": 77}, "mtt-s5000", configs, progress=False, cpu_runs=1,
                 problem=twice_problem(77))
    assert [r.check for r in rows][:2] == ["-", "ref"] and rows[3].check == "ok"
    assert rows[2].check.startswith("MISMATCH") and "power of 2" in rows[0].record.error
    ranked = rank(rows, "cpu")
    assert ranked[0].check in ("ref", "ok") and {ranked[-1].check[:8], ranked[-2].check[:8]} == {"-", "MISMATCH"}
    text = table(ranked, "cpu")
    for column in ("modeled us", "bound", "occupancy", "L2 hit", "bank confl", "CPU ms", "check"):
        assert column in text
    good = [r.record for r in rows if r.check in ("ref", "ok")]
    assert all(r.modeled_seconds > 0 and not math.isinf(r.modeled_seconds) and r.bound for r in good)
    assert all(0 < r.occupancy <= 1 and 0 <= r.l2_hit_rate <= 1 for r in good)


def test_cli_writes_csv_json_and_saves_the_winner(rng, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("WAVETILE_CACHE_DIR", str(tmp_path / "cache"))
    out_csv, out_json = tmp_path / "t.csv", tmp_path / "t.json"
    rc = main([f"{HERE}:twice", f"n={N}", "--machine", "h200", "--csv", str(out_csv), "--json", str(out_json),
               "--save", "--no-progress", "--cpu-runs", "1"])
    text = capsys.readouterr().out
    assert rc == 0 and "on h200: 2 configs" in text and "saved the winner" in text
    rows = list(csv.DictReader(out_csv.open()))
    data = json.loads(out_json.read_text())
    assert [r["rank"] for r in rows] == ["1", "2"] and data["machine"] == "h200"
    assert data["rows"][0]["config"] == rows[0]["config"]
    assert float(rows[0]["modeled_us"]) <= float(rows[1]["modeled_us"])
    best = Config.from_dict(data["best"])
    # the kernel's own @autotune finds the saved winner on its first launch: no tuning
    fresh = autotune(twice.configs, key=["n"])(twice.fn)
    x = rng.standard_normal(N).astype(np.float32)
    out = np.zeros_like(x)
    fresh[lambda meta: (cdiv(N, meta["BLOCK"]),)](x, out, N, machine="h200")
    assert fresh.cache_hit == "disk" and fresh.best_config == best
    np.testing.assert_array_equal(out, x * 2)


def test_cli_with_worker_processes_and_mismatch_exit_code(tmp_path, capsys):
    rc = main([f"{HERE}:twice_problem", "n=70", "--jobs", "2", "--space", "BLOCK=32", "--space", "BUG=False,True",
               "--objective", "cpu", "--no-model", "--no-progress", "--cpu-runs", "1",
               "--json", str(tmp_path / "j.json")])
    text = capsys.readouterr().out
    assert rc == 2 and "2 configs" in text and "MISMATCH" in text
    rows = json.loads((tmp_path / "j.json").read_text())["rows"]
    assert sum(r["check"].startswith("MISMATCH") for r in rows) == 1
    assert all(r["check"] in ("ref", "ok") for r in rows if r["meta.BUG"] is False)


def test_bad_targets():
    with pytest.raises(SystemExit, match="no attribute"):
        main([f"{HERE}:nothing_here"])
    with pytest.raises(SystemExit, match="no tune problem"):
        main([f"{HERE}:N"])


def fake_library(name: str, options: dict) -> TuneProblem:
    """A `--library` resolver: names without a colon come here."""
    assert name == "fake.twice"
    return twice_problem(**options)


def test_names_without_a_colon_go_to_the_library_resolver():
    problem = make_problem("fake.twice", {"n": 40}, library=f"{HERE}:fake_library")
    assert problem.kernel.__name__ == "twice" and problem.args[2] == 40
    assert make_problem("test.twice", {"n": 41}).args[2] == 41  # a factory registered by name wins


def test_the_default_library_resolves_a_registry_case():
    problem = make_problem("norm.rmsnorm", {"case": 0})
    assert "norm.rmsnorm" in problem.description and problem.outputs
    with pytest.raises(SystemExit, match="no kernel-library case 'norm.nothing'"):
        make_problem("norm.nothing", {})
