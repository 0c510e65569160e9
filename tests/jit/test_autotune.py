"""@autotune / Config / @heuristics: Triton's semantics, the hooks that protect mutated inputs, failures, caches."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import dsl as tl
from jit import Config, autotune, cdiv, heuristics, jit
from jit.autotune import Autotuner, AutotuneWarning, capture_launches, format_table, strided_copy

REPO = Path(__file__).resolve().parents[2]


def grid_1d(n):
    return lambda meta: (cdiv(n, meta["BLOCK"]),)


@autotune(configs=[Config({"BLOCK": 32}, num_warps=1), Config({"BLOCK": 128}, num_warps=4)], key=["n"],
          objective="cpu", cache_results=False)
@jit
def scale_add(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, alpha * tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@jit
def atomic_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(out_ptr, tl.sum(x, axis=0))


@jit
def affine_inplace(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2.0 + 1.0, mask=mask)


@jit
def masked_copy(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) + 1.0)
    else:
        mask = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)


def test_config_api_matches_triton():
    c = Config({"BLOCK": 64}, num_warps=8, num_stages=2)
    assert c.all_kwargs() == {"BLOCK": 64, "num_warps": 8, "num_stages": 2, "num_ctas": 1}
    assert c == Config({"BLOCK": 64}, num_warps=8, num_stages=2) and c != Config({"BLOCK": 64})
    assert "BLOCK: 64" in str(c) and "num_warps: 8" in str(c)
    assert Config.from_dict(json.loads(json.dumps(c.to_dict()))) == c


def test_autotuned_kernel_is_correct_with_masked_tail(rng):
    for n in (1000, 77):
        x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
        out = np.zeros_like(x)
        scale_add[grid_1d(n)](x, y, out, n, 1.5)
        np.testing.assert_allclose(out, 1.5 * x + y, rtol=1e-6, atol=1e-6)
        assert scale_add.best_config in scale_add.configs
        assert len(scale_add.records) == 2 and all(r.ok and r.cpu_seconds > 0 for r in scale_add.records)
        assert scale_add.configs_timings[scale_add.best_config] == min(scale_add.configs_timings.values())


def test_usable_like_a_jit_function():
    assert scale_add.__name__ == "scale_add" and scale_add.base_fn.__name__ == "scale_add"
    assert scale_add.jit_function.is_wavetile_jit and scale_add.cache_key == scale_add.jit_function.cache_key
    x = np.ones(8, np.float32)
    compiled = scale_add.warmup(x, x, x, 8, 1.0, grid=(1,))
    assert len(compiled) == 2 and all("ir" in k.asm for k in compiled)
    with pytest.raises(RuntimeError, match="launch it as"):
        scale_add(x, x, x, 8, 1.0)


def test_cache_hit_in_memory_and_key_change_retunes(rng):
    x, y = rng.standard_normal(300).astype(np.float32), rng.standard_normal(300).astype(np.float32)
    out = np.empty_like(x)
    scale_add[grid_1d(300)](x, y, out, 300, 2.0)
    first = scale_add.records
    scale_add[grid_1d(300)](x, y, out, 300, -1.0)  # alpha is not in the key
    assert scale_add.cache_hit == "memory" and scale_add.records is first
    np.testing.assert_allclose(out, -x + y, rtol=1e-6, atol=1e-6)
    scale_add[grid_1d(299)](x, y, out, 299, 3.0)
    assert scale_add.cache_hit is None and scale_add.records is not first
    np.testing.assert_allclose(out[:299], 3 * x[:299] + y[:299], rtol=1e-6, atol=1e-6)
    xh = x.astype(np.float16)  # an argument dtype is part of the key too
    scale_add[grid_1d(300)](xh, xh, out, 300, 1.0)
    assert scale_add.cache_hit is None


def test_reset_to_zero_on_atomic_accumulation(rng):
    seen = []
    configs = [Config({"BLOCK": b}, pre_hook=lambda args: seen.append(float(args["out_ptr"][0]))) for b in (32, 64)]
    kernel = autotune(configs, key=["n"], reset_to_zero=["out_ptr"], objective="cpu", cache_results=False)(atomic_sum)
    x = rng.standard_normal(1001).astype(np.float32)
    out = np.array([0.0], np.float32)
    kernel[grid_1d(x.size)](x, out, x.size)
    assert seen[:-1] and all(v == 0.0 for v in seen[:-1])  # every trial started from zero
    np.testing.assert_allclose(out[0], x.astype(np.float64).sum(), rtol=1e-4, atol=1e-3)
    # a second launch (cached) accumulates on top, exactly like the plain kernel would
    kernel[grid_1d(x.size)](x, out, x.size)
    assert kernel.cache_hit == "memory"
    np.testing.assert_allclose(out[0], 2 * x.astype(np.float64).sum(), rtol=1e-4, atol=1e-3)


def test_restore_value_on_inplace_kernel(rng):
    kernel = autotune([Config({"BLOCK": 32}), Config({"BLOCK": 64}, num_warps=2)], key=["n"],
                      restore_value=["x_ptr"], objective="cpu", cache_results=False)(affine_inplace)
    x0 = rng.standard_normal(203).astype(np.float32)
    x = x0.copy()
    kernel[grid_1d(x.size)](x, x.size)
    assert len(kernel.records) == 2
    np.testing.assert_allclose(x, x0 * 2 + 1, rtol=1e-6)  # applied once, not once per trial


def test_broken_config_is_skipped_with_warning_and_all_broken_is_fatal(rng):
    kernel = autotune([Config({"BLOCK": 48}), Config({"BLOCK": 64})], key=["n"], restore_value=["x_ptr"],
                      objective="cpu", cache_results=False)(affine_inplace)
    x0 = rng.standard_normal(130).astype(np.float32)
    x = x0.copy()
    with pytest.warns(AutotuneWarning, match="BLOCK: 48.*skipped"):
        kernel[grid_1d(x.size)](x, x.size)
    assert kernel.best_config.kwargs == {"BLOCK": 64}
    assert not kernel.records[0].ok and "power of 2" in kernel.records[0].error
    np.testing.assert_allclose(x, x0 * 2 + 1, rtol=1e-6)
    assert "failed" in format_table(kernel.records, "cpu") and "must be a power" in format_table(kernel.records, "cpu")
    broken = autotune([Config({"BLOCK": 48}), Config({"BLOCK": 24})], key=["n"], objective="cpu",
                      cache_results=False)(affine_inplace)
    with pytest.warns(AutotuneWarning), pytest.raises(RuntimeError, match="every config failed"):
        broken[grid_1d(x.size)](x, x.size)


def test_heuristics_stack_under_autotune(rng):
    kernel = autotune([Config({"BLOCK": 16}), Config({"BLOCK": 32})], key=["n"], objective="cpu",
                      cache_results=False)(heuristics({"EVEN": lambda a: a["n"] % a["BLOCK"] == 0})(masked_copy))
    for n in (64, 45):
        x = rng.standard_normal(n).astype(np.float32)
        out = np.zeros_like(x)
        kernel[grid_1d(n)](x, out, n)
        np.testing.assert_allclose(out, x + 1, rtol=1e-6)
    assert isinstance(kernel, Autotuner) and kernel.jit_function is masked_copy
    alone = heuristics({"BLOCK": lambda a: 16, "EVEN": lambda a: a["n"] % 16 == 0})(masked_copy)  # without autotune
    x = rng.standard_normal(45).astype(np.float32)
    out = np.zeros_like(x)
    alone[(cdiv(45, 16),)](x, out, 45)
    np.testing.assert_allclose(out, x + 1, rtol=1e-6)


def test_capture_launches_records_inputs_and_written_arrays(rng):
    x, y = rng.standard_normal(50).astype(np.float32), rng.standard_normal(50).astype(np.float32)
    out = np.full_like(x, 7.0)
    with capture_launches() as launches:
        scale_add[grid_1d(50)](x, y, out, 50, 0.5)
    assert len(launches) == 1 and launches[0].kernel is scale_add and launches[0].changed == ["out_ptr"]
    np.testing.assert_array_equal(launches[0].args[2], np.full_like(x, 7.0))  # the inputs as they were
    np.testing.assert_allclose(out, 0.5 * x + y, rtol=1e-6)  # the launch itself ran (first config, untuned)
    assert launches[0].args[0] is x and launches[0].args[1] is y  # unchanged inputs are not copied


def test_strided_copy_keeps_strides_and_alignment(rng):
    base = rng.standard_normal((6, 10)).astype(np.float32)
    view = base[:, 2:7]  # a strided view, as a slice of a fused projection's output is
    copy = strided_copy(view, 4096)
    assert copy.strides == view.strides and copy.ctypes.data % 4096 == 0 and not np.shares_memory(copy, base)
    np.testing.assert_array_equal(copy, view)
    transposed = strided_copy(base.T)
    assert transposed.strides == base.T.strides
    np.testing.assert_array_equal(transposed, base.T)


def test_conflicting_meta_parameter_and_bad_key():
    x = np.ones(4, np.float32)
    with pytest.raises(ValueError, match="Conflicting meta-parameters"):
        scale_add[(1,)](x, x, x, 4, 1.0, BLOCK=32)
    with pytest.raises(ValueError, match="names no argument"):
        autotune([Config({"BLOCK": 32})], key=["m"])(affine_inplace)
    with pytest.raises(ValueError, match="objective"):
        autotune([Config({"BLOCK": 32})], key=["n"], objective="fast")(affine_inplace)


def test_ties_are_broken_by_config_order_and_do_bench_is_used(rng):
    configs = [Config({"BLOCK": 64}), Config({"BLOCK": 32}), Config({"BLOCK": 128})]
    kernel = autotune(configs, key=["n"], objective="cpu", cache_results=False, do_bench=lambda fn: (fn(), 1.0)[1],
                      restore_value=["x_ptr"])(affine_inplace)
    x0 = rng.standard_normal(100).astype(np.float32)
    x = x0.copy()
    kernel[grid_1d(x.size)](x, x.size)
    assert kernel.best_config is configs[0] and all(r.cpu_seconds == 1e-3 for r in kernel.records)
    np.testing.assert_allclose(x, x0 * 2 + 1, rtol=1e-6)


def test_prune_configs_by(rng):
    configs = [Config({"BLOCK": b}) for b in (16, 32, 64, 128)]
    pruned_seen = []

    def early(cfgs, named, **kwargs):
        pruned_seen.append(named["n"])
        return [c for c in cfgs if c.kwargs["BLOCK"] <= 64]

    kernel = autotune(configs, key=["n"], objective="cpu", cache_results=False, restore_value=["x_ptr"],
                      prune_configs_by={"early_config_prune": early, "perf_model": lambda **a: -a["BLOCK"],
                                        "top_k": 2})(affine_inplace)
    x0 = rng.standard_normal(90).astype(np.float32)
    x = x0.copy()
    kernel[grid_1d(x.size)](x, x.size)
    assert pruned_seen == [90]
    assert sorted(r.config.kwargs["BLOCK"] for r in kernel.records) == [32, 64]
    np.testing.assert_allclose(x, x0 * 2 + 1, rtol=1e-6)


def test_print_env_prints_choice_and_table(rng, monkeypatch, capsys):
    monkeypatch.setenv("WAVETILE_AUTOTUNE_PRINT", "1")
    kernel = autotune([Config({"BLOCK": 32}), Config({"BLOCK": 64})], key=["n"], objective="cpu",
                      cache_results=False, restore_value=["x_ptr"])(affine_inplace)
    x = rng.standard_normal(50).astype(np.float32)
    kernel[grid_1d(50)](x, 50)
    text = capsys.readouterr().out
    assert "best config" in text and "BLOCK: 32" in text and "BLOCK: 64" in text and "CPU ms" in text


DISK_SCRIPT = """
import sys, numpy as np
sys.path.insert(0, {here!r})
import test_autotune as t
kernel = t.disk_kernel()
x = np.arange(70, dtype=np.float32)
kernel[t.grid_1d(70)](x, 70)
assert np.allclose(x, np.arange(70) * 2 + 1)
print(kernel.cache_hit, kernel.best_config.kwargs["BLOCK"], len(kernel.records))
"""


def disk_kernel():
    return autotune([Config({"BLOCK": 32}), Config({"BLOCK": 64})], key=["n"], objective="cpu",
                    restore_value=["x_ptr"])(affine_inplace)


def test_disk_cache_hit_in_a_new_process(tmp_path, monkeypatch):
    monkeypatch.setenv("WAVETILE_CACHE_DIR", str(tmp_path))
    script = textwrap.dedent(DISK_SCRIPT.format(here=str(Path(__file__).parent)))
    env = {**os.environ, "WAVETILE_CACHE_DIR": str(tmp_path)}
    first = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=REPO)
    assert first.returncode == 0, first.stderr
    hit, block, n = first.stdout.split()
    assert hit == "None" and n == "2"
    second = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=REPO)
    assert second.returncode == 0, second.stderr
    assert second.stdout.split() == ["disk", block, "2"]
    # the same process, a fresh autotuner: also a disk hit; with caching off it tunes again
    x = np.arange(70, dtype=np.float32)
    kernel = disk_kernel()
    kernel[grid_1d(70)](x, 70)
    assert kernel.cache_hit == "disk"
    monkeypatch.setenv("WAVETILE_AUTOTUNE_CACHE", "0")
    kernel = disk_kernel()
    kernel[grid_1d(70)](x, 70)
    assert kernel.cache_hit is None


def test_model_objective_uses_modeled_time(rng):
    kernel = autotune([Config({"BLOCK": 16}, num_warps=1), Config({"BLOCK": 256}, num_warps=4)], key=["n"],
                      restore_value=["x_ptr"], cache_results=False)(affine_inplace)
    x0 = rng.standard_normal(4099).astype(np.float32)
    x = x0.copy()
    kernel[grid_1d(x.size)](x, x.size)
    np.testing.assert_allclose(x, x0 * 2 + 1, rtol=1e-6)
    recs = kernel.records
    assert all(r.ok and r.modeled_seconds > 0 and r.bound for r in recs)
    best = min(recs, key=lambda r: r.modeled_seconds)
    assert kernel.best_config == best.config
    # the machine is part of the key: another machine tunes again
    kernel[grid_1d(x.size)](x, x.size, machine="h200")
    assert kernel.cache_hit is None and kernel.last_key[-2] == "h200"
    # every candidate is modeled from a cold L2: tuning again gives the same figures
    again = autotune(kernel.configs, key=["n"], restore_value=["x_ptr"], cache_results=False)(affine_inplace)
    again[grid_1d(x.size)](x, x.size)
    assert [r.modeled_seconds for r in again.records] == [r.modeled_seconds for r in recs]


def test_model_guided_search_times_only_the_top_k(rng):
    configs = [Config({"BLOCK": 16}, num_warps=1), Config({"BLOCK": 64}), Config({"BLOCK": 256}, num_warps=8)]
    kernel = autotune(configs, key=["n"], objective="cpu", model_top_k=1, restore_value=["x_ptr"],
                      cache_results=False)(affine_inplace)
    x0 = rng.standard_normal(3000).astype(np.float32)
    x = x0.copy()
    kernel[grid_1d(x.size)](x, x.size)
    np.testing.assert_allclose(x, x0 * 2 + 1, rtol=1e-6)
    timed = [r for r in kernel.records if np.isfinite(r.cpu_seconds)]
    assert len(timed) == 1 and all(np.isfinite(r.modeled_seconds) for r in kernel.records)
    assert timed[0].modeled_seconds == min(r.modeled_seconds for r in kernel.records)
    assert kernel.best_config == timed[0].config
