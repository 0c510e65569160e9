"""Recurrent decode step of the gated delta rule, and its hand-off from the chunked prefill.

Bound as for the prefill: within 2e-5 * max(1, max|ref|) of the float64 recurrence.
"""

import numpy as np
import pytest

from kernels import deltanet_ref as ref
from kernels.deltanet_chunk import chunk_gated_delta_rule
from kernels.deltanet_decode import gated_delta_decode

HK, HV, D = 2, 4, 128
BOUND = 2e-5


def assert_close(got, want, bound=BOUND):
    err = np.max(np.abs(np.asarray(got, np.float64) - want))
    assert err <= bound * max(1.0, float(np.max(np.abs(want)))), f"max error {err:.3g}"


def test_batched_step_with_state_indices(rng):
    """Three sequences at different positions share one launch; each reads and writes only its own slot."""
    N, slots, idx = 3, 6, np.array([5, 0, 2])
    x = ref.random_inputs(rng, N, HK, HV, D, D)
    cache = rng.standard_normal((slots, HV, D, D)).astype(np.float32)
    before = cache.copy()
    o = gated_delta_decode(x["q"], x["k"], x["v"], cache, x["g"], x["beta"], state_indices=idx)
    cu = np.arange(N + 1)  # row n is a one-token sequence starting from its slot's state
    o_ref, states = ref.recurrent_ref(x["q"], x["k"], x["v"], x["g"], x["beta"], initial_state=before[idx],
                                      cu_seqlens=cu)
    assert_close(o, o_ref)
    assert_close(cache[idx], states)
    untouched = np.setdiff1d(np.arange(slots), idx)
    np.testing.assert_array_equal(cache[untouched], before[untouched])


@pytest.mark.parametrize("T, M", [(70, 5), (1, 3)])
def test_prefill_then_decode_equals_longer_prefill(rng, T, M):
    """Two sequences of lengths T and T + 7: prefill, then M decode steps with raw gates, equals prefill of all."""
    lens = [T + M, T + 7 + M]
    x = ref.random_inputs(rng, sum(lens), HK, HV, D, D)
    h0 = rng.standard_normal((2, HV, D, D)).astype(np.float32)
    cu_all = np.array([0, lens[0], sum(lens)])
    o_all, ht_all = chunk_gated_delta_rule(x["q"], x["k"], x["v"], x["g"], x["beta"], initial_state=h0,
                                           cu_seqlens=cu_all)
    prompt = np.r_[0:T, lens[0]:lens[0] + T + 7]
    sub = {n: x[n][prompt] for n in ("q", "k", "v", "g", "beta")}
    _, state = chunk_gated_delta_rule(sub["q"], sub["k"], sub["v"], sub["g"], sub["beta"], initial_state=h0,
                                      cu_seqlens=np.array([0, T, 2 * T + 7]))
    for m in range(M):
        rows = np.array([T + m, lens[0] + T + 7 + m])
        o = gated_delta_decode(x["q"][rows], x["k"][rows], x["v"][rows], state, a=x["a"][rows], b=x["b"][rows],
                               A_log=x["A_log"], dt_bias=x["dt_bias"])
        assert_close(o, o_all[rows].astype(np.float64))
    assert_close(state, ht_all.astype(np.float64))


def test_qwen35_heads_and_no_op_gates(rng):
    """16 key / 32 value heads of 128; beta = 0 and g = 0 leave the state as it was."""
    hk, hv = 16, 32
    x = ref.random_inputs(rng, 2, hk, hv, D, D)
    cache = (rng.standard_normal((2, hv, D, D)) * 0.3).astype(np.float32)
    before = cache.copy()
    o = gated_delta_decode(x["q"], x["k"], x["v"], cache, x["g"], x["beta"])
    o_ref, states = ref.recurrent_ref(x["q"], x["k"], x["v"], x["g"], x["beta"], initial_state=before,
                                      cu_seqlens=np.arange(3))
    assert_close(o, o_ref)
    assert_close(cache, states)
    before = cache.copy()
    gated_delta_decode(x["q"], x["k"], x["v"], cache, np.zeros_like(x["g"]), np.zeros_like(x["beta"]))
    np.testing.assert_array_equal(cache, before)


def test_strong_decay_stays_finite(rng):
    x = ref.random_inputs(rng, 2, HK, HV, D, D)
    cache = rng.standard_normal((2, HV, D, D)).astype(np.float32)
    x["g"][:] = -1e30
    o = gated_delta_decode(x["q"], x["k"], x["v"], cache, x["g"], x["beta"])
    assert np.all(np.isfinite(o)) and np.all(np.isfinite(cache))
    o_ref, states = ref.recurrent_ref(x["q"], x["k"], x["v"], x["g"], x["beta"], initial_state=cache * 0,
                                      cu_seqlens=np.arange(3))
    assert_close(o, o_ref)
    assert_close(cache, states)


def test_rejects_bad_arguments(rng):
    x = ref.random_inputs(rng, 2, HK, HV, 16, 16)
    q, k, v, g, beta = x["q"], x["k"], x["v"], x["g"], x["beta"]
    cache = np.zeros((2, HV, 16, 16), np.float32)
    with pytest.raises(ValueError, match="state"):
        gated_delta_decode(q, k, v, cache.astype(np.float16), g, beta)
    with pytest.raises(ValueError, match="state"):
        gated_delta_decode(q, k, v, cache[:, :, :8], g, beta)
    with pytest.raises(ValueError, match="slots"):
        gated_delta_decode(q, k, v, cache[:1], g, beta)
    with pytest.raises(ValueError, match="state_indices"):
        gated_delta_decode(q, k, v, cache, g, beta, state_indices=np.array([0, 2]))
    with pytest.raises(ValueError, match="beta"):
        gated_delta_decode(q, k, v, cache, g, beta[:1])
    with pytest.raises(ValueError, match="rows"):
        gated_delta_decode(q, k, v[:1], cache, g, beta)
