"""INT4 Q·Kᵀ attention: the quantiser against numpy (codes, scales, smoothing mean); both paths (scores ->
int4_softmax -> P·V, and the fused flash kernel) against a float64 reference that dequantises the same codes, causal
and not, GQA 16/2, odd lengths, T < S, head dims 64/128/256, fp16 and bf16; the default path really goes through
int4_softmax; and the error against fp32 attention stays bounded, with K smoothing paying off on channel outliers."""

import numpy as np
import pytest

import simulator
from kernels import int4_attention as ia
from kernels._common import BF16

T, S, H, HKV, D = 70, 90, 4, 2, 32


def codes_reference(q, k, v, causal, block):
    """The float64 attention of the codes and scales the module's quantiser makes."""
    qc, qs, _ = ia.quantize_int4_blocks(q, block, pre_scale=q.shape[2] ** -0.5)
    kc, ks, _ = ia.quantize_int4_blocks(k, block, smooth=True)
    return ia.int4_scores_attention_reference(qc, qs, kc, ks, v, causal=causal, block_m=block, block_n=block)


def test_quantiser_matches_numpy(rng):
    q, k, _ = ia.make_inputs(rng, T, S, H, HKV, D, np.float16, outliers=True)
    codes, scales, mean = ia.quantize_int4_blocks(q, 64, pre_scale=0.3)
    ref_codes, ref_scales = ia.quantize_int4_blocks_reference(q, 64, pre_scale=0.3)
    assert not mean.any()
    assert np.array_equal(ia.unpack_codes(codes), ref_codes) and np.array_equal(scales, ref_scales)
    assert np.abs(ref_codes).max() == 7  # the block maximum maps to ±7
    codes, scales, mean = ia.quantize_int4_blocks(k, 64, smooth=True)
    np.testing.assert_allclose(mean, np.asarray(k, np.float64).mean(axis=0), rtol=1e-5, atol=1e-5)
    ref_codes, ref_scales = ia.quantize_int4_blocks_reference(k, 64, mean=mean)
    assert np.array_equal(ia.unpack_codes(codes), ref_codes) and np.array_equal(scales, ref_scales)


@pytest.mark.parametrize("fused, t, s, h, hkv, d, dtype, causal, outliers, block", [
    (False, 77, 77, 16, 2, 64, np.float16, True, False, 64),
    (False, 33, 100, 16, 2, 128, np.float16, False, True, 16),
    (False, 50, 130, 4, 2, 256, BF16, True, True, 32),
    (True, 77, 77, 16, 2, 64, np.float16, True, True, 64),
    (True, 33, 100, 4, 2, 128, BF16, False, False, 16),
])
def test_attention_equals_dequantised_reference(rng, fused, t, s, h, hkv, d, dtype, causal, outliers, block):
    q, k, v = ia.make_inputs(rng, t, s, h, hkv, d, dtype, outliers)
    out = ia.int4_attention(q, k, v, causal=causal, q_block=block, k_block=block, fused=fused)
    assert out.dtype == np.dtype(dtype) and out.shape == q.shape
    tol = ia.TOLERANCE[np.dtype(dtype)]
    np.testing.assert_allclose(out.astype(np.float64), codes_reference(q, k, v, causal, block), rtol=tol, atol=tol)


@pytest.mark.parametrize("causal", [True, False])
def test_chunks_of_query_rows_change_nothing(rng, causal):
    q, k, v = ia.make_inputs(rng, T, S, H, HKV, D, np.float16)
    whole = ia.int4_attention(q, k, v, causal=causal)
    for chunk in (16, 5, 1):  # a tile fraction, not dividing T, one row
        assert np.array_equal(ia.int4_attention(q, k, v, causal=causal, chunk_rows=chunk), whole)


def test_default_path_launches_int4_softmax(rng):
    q, k, v = ia.make_inputs(rng, T, S, H, HKV, D, np.float16)
    with simulator.profile() as prof:
        ia.int4_attention(q, k, v, chunk_rows=32)
    names = [r.kernel for r in prof.launches if r.kernel not in ("_mean_kernel", "_quantize_kernel")]
    assert names == ["_qk_kernel", "int4_softmax_kernel", "_pv_kernel"] * 3  # per chunk of 32, 32 and 6 rows


@pytest.mark.parametrize("fused", [False, True])
def test_error_against_fp32_attention_and_smoothing(rng, fused):
    errors = {}
    for outliers in (False, True):
        q, k, v = ia.make_inputs(rng, T, S, H, HKV, D, np.float16, outliers=outliers)
        exact = ia.attention_fp32_reference(q, k, v)
        errors[outliers] = np.linalg.norm(ia.int4_attention(q, k, v, fused=fused) - exact) / np.linalg.norm(exact)
    # Without smoothing the K channel offsets take the whole INT4 range: same codes path, zero mean.
    kc, ks, _ = ia.quantize_int4_blocks(k, 64)
    qc, qs, _ = ia.quantize_int4_blocks(q, 64, pre_scale=D ** -0.5)
    unsmoothed = ia.int4_scores_attention_reference(qc, qs, kc, ks, v, causal=True, block_m=64, block_n=64)
    err_unsmoothed = np.linalg.norm(unsmoothed - exact) / np.linalg.norm(exact)
    assert errors[False] < 0.3 and errors[True] < 0.8 and errors[True] < err_unsmoothed


def test_rejects_bad_inputs(rng):
    q, k, v = ia.make_inputs(rng, 8, 8, 4, 2, 32, np.float16)
    with pytest.raises(ValueError, match="float16"):
        ia.int4_attention(q.astype(np.float32), k, v)
    with pytest.raises(ValueError, match="Hkv"):
        ia.int4_attention(q[:, :3], k, v)
    with pytest.raises(ValueError, match="more queries"):
        ia.int4_attention(q, k[:4], v[:4])
    with pytest.raises(ValueError, match="power of two"):
        ia.quantize_int4_blocks(q[..., :24], 64)
    with pytest.raises(ValueError, match="q_block"):
        ia.int4_attention(q, k, v, q_block=48)
    with pytest.raises(ValueError, match="chunk_rows"):
        ia.int4_attention(q, k, v, chunk_rows=0)
