"""Causal depthwise conv1d + SiLU of Gated DeltaNet (prefill over packed sequences, decode in place)."""

import numpy as np
import pytest
from ml_dtypes import bfloat16

from kernels import deltanet_ref as ref
from kernels.deltanet_conv import causal_conv1d, causal_conv1d_update

D, K = 300, 4  # channels not a multiple of the channel block


def inputs(rng, T, n_seqs=1, dtype=np.float32):
    x = rng.standard_normal((T, D)).astype(dtype)
    w = (rng.standard_normal((D, K)) * 0.5).astype(np.float32)
    s0 = rng.standard_normal((n_seqs, D, K - 1)).astype(dtype)
    return x, w, s0


@pytest.mark.parametrize("with_state", [False, True])
def test_prefill_varlen_matches_reference(rng, with_state):
    lens = [1, 2, 0, 37, 70]  # shorter than the kernel, empty, more than one token block
    cu = np.concatenate([[0], np.cumsum(lens)])
    x, w, s0 = inputs(rng, int(cu[-1]), len(lens))
    s0 = s0 if with_state else None
    y, st = causal_conv1d(x, w, cu, s0)
    y_ref, st_ref = ref.conv1d_ref(x, w, cu, s0)
    np.testing.assert_allclose(y, y_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(st, st_ref)  # the state is copied inputs, bit for bit


def test_prefill_bf16_weight_3d_and_strided_rows(rng):
    x, w, s0 = inputs(rng, 50, dtype=bfloat16)
    wide = np.zeros((50, D + 20), bfloat16)
    wide[:, 7:7 + D] = x
    y, st = causal_conv1d(wide[:, 7:7 + D], w[:, None, :], None, s0)
    y_ref, st_ref = ref.conv1d_ref(x, w, None, s0)
    assert y.dtype == bfloat16 and st.dtype == bfloat16
    np.testing.assert_allclose(y.astype(np.float64), y_ref, rtol=8e-3, atol=8e-3)
    np.testing.assert_array_equal(st.astype(np.float64), st_ref)


def test_decode_steps_continue_prefill(rng):
    """Prefill of T tokens then M single-token updates equals prefill of T + M (outputs and state)."""
    T, M = 5, 4
    x, w, s0 = inputs(rng, T + M, 1)
    y_all, st_all = causal_conv1d(x, w, None, s0)
    _, state = causal_conv1d(x[:T], w, None, s0)
    for t in range(T, T + M):
        y_t = causal_conv1d_update(x[t:t + 1], w, state)
        np.testing.assert_allclose(y_t[0], y_all[t], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(state, st_all)


def test_decode_batched_with_state_indices(rng):
    slots, idx = 7, np.array([6, 0, 3])
    x = rng.standard_normal((3, D)).astype(np.float32)
    w = rng.standard_normal((D, K)).astype(np.float32)
    cache = rng.standard_normal((slots, D, K - 1)).astype(np.float32)
    before = cache.copy()
    y = causal_conv1d_update(x, w, cache, state_indices=idx)
    y_ref, new_ref = ref.conv1d_update_ref(x, w, before[idx])
    np.testing.assert_allclose(y, y_ref, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(cache[idx], new_ref)
    untouched = np.setdiff1d(np.arange(slots), idx)
    np.testing.assert_array_equal(cache[untouched], before[untouched])


def test_rejects_bad_arguments(rng):
    x, w, s0 = inputs(rng, 6, 1)
    with pytest.raises(ValueError, match="weight"):
        causal_conv1d(x, w[:10], None)
    with pytest.raises(ValueError, match="float32, float16 or bfloat16"):
        causal_conv1d(x.astype(np.float64), w)
    with pytest.raises(ValueError, match="initial_state"):
        causal_conv1d(x, w, None, s0.astype(np.float16))
    with pytest.raises(ValueError, match="initial_state"):
        causal_conv1d(x, w, np.array([0, 2, 6]), s0)  # one state row for two sequences
    with pytest.raises(ValueError, match="cu_seqlens"):
        causal_conv1d(x, w, np.array([0, 7]))
    with pytest.raises(ValueError, match="slots"):
        causal_conv1d_update(x[:2], w, s0)  # one slot for two rows
    with pytest.raises(ValueError, match="state_indices"):
        causal_conv1d_update(x[:2], w, np.zeros((3, D, K - 1), np.float32), state_indices=np.array([1, 1]))
