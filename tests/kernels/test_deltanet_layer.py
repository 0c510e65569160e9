"""The Gated DeltaNet token mixer end to end: conv -> gates -> delta rule -> gated RMSNorm, prefill and decode."""

import numpy as np
import pytest

from kernels import deltanet_ref as ref
from kernels.deltanet import gated_deltanet_decode, gated_deltanet_prefill, gated_deltanet_reference, split_qkv

HK, HV, D = 2, 4, 128
CONV_DIM = 2 * HK * D + HV * D


def layer_inputs(rng, T):
    x = {"mixed_qkv": rng.standard_normal((T, CONV_DIM)).astype(np.float32),
         "z": rng.standard_normal((T, HV, D)).astype(np.float32),
         "a": rng.standard_normal((T, HV)).astype(np.float32),
         "b": rng.standard_normal((T, HV)).astype(np.float32)}
    params = {"conv_weight": (rng.standard_normal((CONV_DIM, 4)) * 0.5).astype(np.float32),
              "A_log": np.log(np.geomspace(1e-3, 16, HV)).astype(np.float32),
              "dt_bias": rng.standard_normal(HV).astype(np.float32),
              "norm_weight": rng.uniform(0.5, 1.5, D).astype(np.float32), "num_k_heads": HK}
    return x, params


def rows(x, index):
    return {name: t[index] for name, t in x.items()}


def assert_close(got, want, bound=2e-5):
    err = np.max(np.abs(np.asarray(got, np.float64) - want))
    assert err <= bound * max(1.0, float(np.max(np.abs(want)))), f"max error {err:.3g}"


def test_prefill_matches_reference_and_continues_from_caches(rng):
    """Varlen prefill equals the float64 layer; a second prefill from the returned caches equals one long prefill."""
    lens_a, lens_b = np.array([30, 2]), np.array([50, 69])
    x, p = layer_inputs(rng, int((lens_a + lens_b).sum()))
    starts = np.concatenate([[0], np.cumsum(lens_a + lens_b)])
    first = np.concatenate([np.arange(s, s + n) for s, n in zip(starts, lens_a)])
    second = np.concatenate([np.arange(s + n, e) for s, n, e in zip(starts, lens_a, starts[1:])])
    out, conv_state, state = gated_deltanet_prefill(**x, **p, cu_seqlens=starts)
    out_ref, conv_ref, state_ref = gated_deltanet_reference(**x, **p, cu_seqlens=starts)
    assert out.shape == (starts[-1], HV * D) and out.dtype == np.float32
    assert_close(out, out_ref)
    np.testing.assert_array_equal(conv_state, conv_ref)
    assert_close(state, state_ref)

    cu_a, cu_b = np.concatenate([[0], np.cumsum(lens_a)]), np.concatenate([[0], np.cumsum(lens_b)])
    out_a, conv_a, state_a = gated_deltanet_prefill(**rows(x, first), **p, cu_seqlens=cu_a)
    out_b, conv_b, state_b = gated_deltanet_prefill(**rows(x, second), **p, cu_seqlens=cu_b, conv_state=conv_a,
                                                    recurrent_state=state_a)
    assert_close(out_a, out_ref[first])
    assert_close(out_b, out_ref[second])
    np.testing.assert_array_equal(conv_b, conv_ref)
    assert_close(state_b, state_ref)


def test_prefill_then_decode_equals_longer_prefill(rng):
    """Two sequences in cache slots 2 and 0: prefill T, decode M tokens each, equals the prefill of T + M."""
    T, M = (66, 3), 4
    lens = [T[0] + M, T[1] + M]
    x, p = layer_inputs(rng, sum(lens))
    cu = np.array([0, lens[0], sum(lens)])
    out_all, conv_all, state_all = gated_deltanet_prefill(**x, **p, cu_seqlens=cu)
    prompt = np.r_[0:T[0], lens[0]:lens[0] + T[1]]
    _, conv_p, state_p = gated_deltanet_prefill(**rows(x, prompt), **p, cu_seqlens=np.array([0, T[0], sum(T)]))
    slots = np.array([2, 0])
    conv_cache = np.zeros((3, CONV_DIM, 3), np.float32)
    state_cache = np.zeros((3, HV, D, D), np.float32)
    conv_cache[slots], state_cache[slots] = conv_p, state_p
    for m in range(M):
        r = np.array([T[0] + m, lens[0] + T[1] + m])
        out = gated_deltanet_decode(**rows(x, r), **p, conv_state=conv_cache, recurrent_state=state_cache,
                                    state_indices=slots)
        assert_close(out, out_all[r].astype(np.float64))
    np.testing.assert_array_equal(conv_cache[slots], conv_all)
    assert_close(state_cache[slots], state_all.astype(np.float64))
    assert not conv_cache[1].any() and not state_cache[1].any()


def test_split_qkv_views_and_errors(rng):
    y = np.arange(3 * CONV_DIM, dtype=np.float32).reshape(3, CONV_DIM)
    q, k, v = split_qkv(y, HK, HV, D)
    assert q.shape == k.shape == (3, HK, D) and v.shape == (3, HV, D)
    assert all(np.shares_memory(t, y) for t in (q, k, v))
    assert k[1, 0, 0] == y[1, HK * D] and v[2, 1, 3] == y[2, 2 * HK * D + D + 3]
    with pytest.raises(ValueError, match="key heads"):
        split_qkv(y, 3, HV, D)
    x, p = layer_inputs(rng, 4)
    with pytest.raises(ValueError, match="z"):
        gated_deltanet_prefill(**{**x, "z": x["z"][:2]}, **p)
    with pytest.raises(ValueError, match="float32, float16 or bfloat16"):
        gated_deltanet_prefill(**{**x, "mixed_qkv": x["mixed_qkv"].astype(np.float64)}, **p)


def test_reference_layer_is_the_composition(rng):
    """The float64 layer reference is conv -> split -> gates -> recurrence -> gated norm (sanity of the oracle)."""
    x, p = layer_inputs(rng, 9)
    out, _, _ = gated_deltanet_reference(**x, **p)
    y, _ = ref.conv1d_ref(x["mixed_qkv"], p["conv_weight"])
    q, k, v = split_qkv(y, HK, HV, D)
    g, beta = ref.gates_ref(x["a"], x["b"], p["A_log"], p["dt_bias"])
    o, _ = ref.recurrent_ref(q, k, v, g, beta)
    n = o / np.sqrt((o * o).mean(-1, keepdims=True) + 1e-6)
    want = (p["norm_weight"] * n * ref.silu(x["z"].astype(np.float64))).reshape(9, HV * D)
    np.testing.assert_allclose(out, want, rtol=1e-12, atol=1e-12)
