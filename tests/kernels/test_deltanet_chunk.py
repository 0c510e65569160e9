"""Chunked gated delta rule (prefill) against the float64 token-by-token recurrence.

Bound: fp32 outputs and final states within 2e-5 * max(1, max|ref|) of the float64 recurrence (the
kernel's error is at the fp32 recurrence's own level, ~1e-7, for these sizes).
"""

import numpy as np
import pytest
from ml_dtypes import bfloat16

from kernels import deltanet_ref as ref
from kernels.deltanet_chunk import AUTOTUNE_CONFIGS, chunk_gated_delta_rule

HK, HV, D = 2, 4, 128  # Qwen3.5's head dim, fewer heads for speed; grouped values (2 value heads per key head)
BOUND = 2e-5


def assert_close(got, want, bound=BOUND):
    err = np.max(np.abs(np.asarray(got, np.float64) - want)) if want.size else 0.0
    assert err <= bound * max(1.0, float(np.max(np.abs(want), initial=0))), f"max error {err:.3g}"


def rule(x, **kw):
    return chunk_gated_delta_rule(x["q"], x["k"], x["v"], x["g"], x["beta"], **kw)


def reference(x, **kw):
    return ref.recurrent_ref(x["q"], x["k"], x["v"], x["g"], x["beta"], **kw)


@pytest.mark.parametrize("T", [1, 63, 64, 65, 200])
@pytest.mark.parametrize("with_state", [False, True])
def test_chunked_equals_recurrence(rng, T, with_state):
    x = ref.random_inputs(rng, T, HK, HV, D, D)
    h0 = rng.standard_normal((1, HV, D, D)).astype(np.float32) if with_state else None
    o, ht = rule(x, initial_state=h0)
    o_ref, ht_ref = reference(x, initial_state=h0)
    assert o.dtype == np.float32 and ht.dtype == np.float32 and ht.shape == (1, HV, D, D)
    assert_close(o, o_ref)
    assert_close(ht, ht_ref)


def test_varlen_packing_equals_separate_runs(rng):
    lens = [65, 1, 0, 130, 7]
    cu = np.concatenate([[0], np.cumsum(lens)])
    x = ref.random_inputs(rng, int(cu[-1]), HK, HV, D, D)
    h0 = rng.standard_normal((len(lens), HV, D, D)).astype(np.float32)
    o, ht = rule(x, initial_state=h0, cu_seqlens=cu)
    for n, (bos, eos) in enumerate(zip(cu[:-1], cu[1:])):
        part = {name: t[bos:eos] if name not in ("A_log", "dt_bias") else t for name, t in x.items()}
        o_n, ht_n = rule(part, initial_state=h0[n:n + 1])
        np.testing.assert_array_equal(o[bos:eos], o_n)
        np.testing.assert_array_equal(ht[n], ht_n[0])
    o_ref, ht_ref = reference(x, initial_state=h0, cu_seqlens=cu)
    assert_close(o, o_ref)
    assert_close(ht, ht_ref)
    np.testing.assert_array_equal(ht[2], h0[2])  # the empty sequence leaves its state untouched


def test_zero_gates_are_no_ops(rng):
    """g = 0 keeps the state undecayed; beta = 0 writes nothing, so the state stays the initial one."""
    x = ref.random_inputs(rng, 100, HK, HV, D, D)
    h0 = rng.standard_normal((1, HV, D, D)).astype(np.float32)
    x["g"][:] = 0
    x["beta"][:] = 0
    o, ht = rule(x, initial_state=h0)
    np.testing.assert_allclose(ht, h0, rtol=0, atol=0)
    q = ref._prep_qk(x["q"], x["k"], None, True, np.float64)[0]
    assert_close(o, np.einsum("thk,hkv->thv", np.repeat(q, HV // HK, axis=1), h0[0].astype(np.float64)))
    # g = 0 alone: pure delta rule, still equal to the recurrence
    x = ref.random_inputs(rng, 70, HK, HV, D, D)
    x["g"][:] = 0
    o, ht = rule(x, initial_state=h0)
    o_ref, ht_ref = reference(x, initial_state=h0)
    assert_close(o, o_ref)
    assert_close(ht, ht_ref)


@pytest.mark.parametrize("g_value", [-80.0, -1e4, -1e30])
def test_strong_decay_stays_finite(rng, g_value):
    x = ref.random_inputs(rng, 130, HK, HV, D, D)
    x["g"][::3] = g_value  # every third token wipes the state
    h0 = rng.standard_normal((1, HV, D, D)).astype(np.float32)
    o, ht = rule(x, initial_state=h0)
    assert np.all(np.isfinite(o)) and np.all(np.isfinite(ht))
    o_ref, ht_ref = reference(x, initial_state=h0)
    assert_close(o, o_ref)
    assert_close(ht, ht_ref)


def test_raw_gates_in_kernel_equal_precomputed(rng):
    x = ref.random_inputs(rng, 77, HK, HV, D, D)
    o, ht = chunk_gated_delta_rule(x["q"], x["k"], x["v"], a=x["a"], b=x["b"], A_log=x["A_log"],
                                   dt_bias=x["dt_bias"])
    o_ref, ht_ref = reference(x)
    assert_close(o, o_ref)
    assert_close(ht, ht_ref)


def test_bf16_odd_head_dims_value_block_tails_without_l2norm(rng):
    """bf16 in and out; dk = 100 pads to 128, dv = 40 with BV = 32 (the second config) is one full and one masked
    value block; the kernel's own q/k L2 norm is off (keys arrive with norm 0.8, queries with norm 2)."""
    x = ref.random_inputs(rng, 90, 1, 3, 100, 40)
    for name, norm in (("q", 2.0), ("k", 0.8)):
        x[name] = (x[name] * norm / np.linalg.norm(x[name], axis=-1, keepdims=True)).astype(bfloat16)
    x["v"] = x["v"].astype(bfloat16)
    assert AUTOTUNE_CONFIGS[1].kwargs == {"BV": 32}
    o, ht = rule(x, config=AUTOTUNE_CONFIGS[1], l2norm=False)
    o_ref, ht_ref = reference(x, l2norm=False)  # from the same bf16 values; the output is rounded once to bf16
    assert o.dtype == bfloat16 and o.shape == (90, 3, 40)
    np.testing.assert_allclose(o.astype(np.float64), o_ref, rtol=8e-3, atol=8e-3 * np.abs(o_ref).max())
    assert_close(ht, ht_ref)
    assert np.abs(o_ref - reference(x)[0]).max() > 0.1 * np.abs(o_ref).max()  # the flag matters


def test_qwen35_heads_strided_views(rng):
    """16 key heads, 32 value heads of 128, q/k/v as views into one [T, q|k|v] buffer, two sequences."""
    T, hk, hv = 20, 16, 32
    x = ref.random_inputs(rng, T, hk, hv, D, D)
    mixed = np.concatenate([x["q"].reshape(T, -1), x["k"].reshape(T, -1), x["v"].reshape(T, -1)], axis=1)
    q, k, v = mixed[:, :hk * D].reshape(T, hk, D), mixed[:, hk * D:2 * hk * D].reshape(T, hk, D), \
        mixed[:, 2 * hk * D:].reshape(T, hv, D)
    assert not q.flags.c_contiguous and np.shares_memory(q, mixed)
    cu = np.array([0, 9, T])
    h0 = (rng.standard_normal((2, hv, D, D)) * 0.3).astype(np.float32)
    o, ht = chunk_gated_delta_rule(q, k, v, x["g"], x["beta"], initial_state=h0, cu_seqlens=cu)
    o_ref, ht_ref = reference(x, initial_state=h0, cu_seqlens=cu)
    assert_close(o, o_ref)
    assert_close(ht, ht_ref)


def test_chunked_numpy_reference_equals_recurrence(rng):
    x = ref.random_inputs(rng, 150, 1, 2, 16, 8)
    cu = np.array([0, 64, 65, 150])
    h0 = rng.standard_normal((3, 2, 16, 8))
    o, ht = ref.chunked_ref(x["q"], x["k"], x["v"], x["g"], x["beta"], initial_state=h0, cu_seqlens=cu)
    o_ref, ht_ref = reference(x, initial_state=h0, cu_seqlens=cu)
    np.testing.assert_allclose(o, o_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(ht, ht_ref, rtol=1e-10, atol=1e-12)
    assert ref.chunked_flops(128, 32, 128, 128) > ref.recurrent_flops(128, 32, 128, 128)


def test_rejects_bad_arguments(rng):
    x = ref.random_inputs(rng, 10, HK, HV, 16, 16)
    q, k, v, g, beta = x["q"], x["k"], x["v"], x["g"], x["beta"]
    with pytest.raises(ValueError, match="same shape"):
        chunk_gated_delta_rule(q, k[:, :1], v, g, beta)
    with pytest.raises(ValueError, match="multiple of key heads"):
        chunk_gated_delta_rule(q, k, v[:, :3], g[:, :3], beta[:, :3])
    with pytest.raises(ValueError, match="float32, float16 or bfloat16"):
        chunk_gated_delta_rule(q.astype(np.float64), k, v, g, beta)
    with pytest.raises(ValueError, match="share a dtype"):
        chunk_gated_delta_rule(q, k, v.astype(np.float16), g, beta)
    with pytest.raises(ValueError, match="g must be a float32"):
        chunk_gated_delta_rule(q, k, v, g.astype(np.float16), beta)
    with pytest.raises(ValueError, match="shape"):
        chunk_gated_delta_rule(q, k, v, g[:5], beta)
    with pytest.raises(ValueError, match="either g and beta"):
        chunk_gated_delta_rule(q, k, v, g, beta, a=x["a"])
    with pytest.raises(ValueError, match="go together"):
        chunk_gated_delta_rule(q, k, v, a=x["a"], b=x["b"])
    with pytest.raises(ValueError, match="initial_state"):
        chunk_gated_delta_rule(q, k, v, g, beta, initial_state=np.zeros((1, HV, 16, 8), np.float32))
    with pytest.raises(ValueError, match="cu_seqlens"):
        chunk_gated_delta_rule(q, k, v, g, beta, cu_seqlens=np.array([0, 4, 9]))
    with pytest.raises(ValueError, match="contiguous"):
        chunk_gated_delta_rule(q[:, :, ::2], k[:, :, ::2], v, g, beta)
