"""kernels.int4_softmax: softmax of INT4- and int32-coded logits (with per-row lengths), probabilities and INT4
probability codes."""

import numpy as np
import pytest

from kernels._common import BF16
from kernels.int4_softmax import (
    TOLERANCE,
    dequantize_logits,
    int4_softmax,
    int4_softmax_reference,
    pack_nibbles,
    quantize_logits_int4,
    unpack_nibbles,
)
from kernels.registry import check


def assert_probs(got, ref, lengths=None):
    rtol, atol = TOLERANCE[got.dtype]
    g64, r64 = got.astype(np.float64), ref.astype(np.float64)
    assert got.shape == ref.shape and np.all(np.abs(g64 - r64) <= rtol * np.abs(r64) + atol)
    assert np.allclose(g64.sum(axis=1), 1.0, rtol=rtol * 4, atol=0)
    if lengths is not None:  # exactly 0 past each row's length
        assert not np.any(np.where(np.arange(got.shape[1])[None, :] >= lengths[:, None], got, 0))


def assert_codes(codes, pscale, ref_probs, ref_pscale, n_cols):
    np.testing.assert_allclose(pscale, ref_pscale, rtol=1e-5)
    q = unpack_nibbles(codes, n_cols).astype(np.float64)
    err = np.abs(q * pscale[:, None] - ref_probs.astype(np.float64))
    assert np.all(err <= pscale[:, None] / 2 * (1 + 1e-4))
    assert np.all(q.max(axis=1) == 15)  # the row's largest probability gets the top code
    if n_cols % 2:
        assert np.all(codes[:, -1] >> 4 == 0)  # the padding nibble stays zero


def test_quantize_logits_round_trip(rng):
    x = (rng.standard_normal((4, 100)) * 50 + 1e4).astype(np.float32)  # groups far from 0: integer zeros cope
    codes, scales, zeros = quantize_logits_int4(x, 32)
    assert codes.shape == (4, 50) and scales.shape == zeros.shape == (4, 4)
    deq = dequantize_logits(codes, scales, zeros, 100, 32)
    step = np.repeat(scales, 32, axis=1)[:, :100]
    assert np.all(np.abs(deq - x) <= step * 1.01)
    assert np.array_equal(unpack_nibbles(pack_nibbles(unpack_nibbles(codes, 100)), 100), unpack_nibbles(codes, 100))


@pytest.mark.parametrize("scale", [1e4, 3.0])
def test_large_logits_long_rows_fp32_with_codes(rng, scale):
    # 1301 columns = 651 bytes: longer than the 512-byte block, odd (half-used last byte), 64-wide groups
    R, C, G = 6, 1301, 64
    x = (rng.uniform(-1, 1, (R, C)) * scale).astype(np.float32)
    x[1] = np.float32(-9876.5)  # a constant row
    x[2, 17] = scale  # one dominant logit
    codes, scales, zeros = quantize_logits_int4(x, G)
    probs, pcodes, pscale = int4_softmax(codes, scales, zeros, C, G, return_codes=True)
    ref, ref_codes, ref_pscale = int4_softmax_reference(codes, scales, zeros, C, G, return_codes=True)
    assert np.all(np.isfinite(probs))
    assert_probs(probs, ref)
    np.testing.assert_allclose(probs[1], 1.0 / C, rtol=1e-6)
    assert_codes(pcodes, pscale, ref, ref_pscale, C)
    assert np.abs(unpack_nibbles(pcodes, C).astype(int) - unpack_nibbles(ref_codes, C)).max() <= 1


def test_fp16_output_short_groups(rng):
    R, C, G = 9, 77, 32
    x = (rng.standard_normal((R, C)) * 4).astype(np.float32)
    codes, scales, zeros = quantize_logits_int4(x, G)
    probs = int4_softmax(codes, scales, zeros, C, G, out_dtype=np.float16)
    assert probs.dtype == np.float16
    assert_probs(probs, int4_softmax_reference(codes, scales, zeros, C, G, out_dtype=np.float16))


def test_rows_of_length_one(rng):
    x = (rng.standard_normal((5, 1)) * 1e4).astype(np.float32)
    codes, scales, zeros = quantize_logits_int4(x, 32)
    probs, pcodes, pscale = int4_softmax(codes, scales, zeros, 1, 32, return_codes=True)
    assert np.array_equal(probs, np.ones((5, 1), np.float32))
    assert np.array_equal(pcodes, np.full((5, 1), 15, np.uint8)) and np.allclose(pscale, 1 / 15)


def int32_scores(rng, R, C, G, logit_range):
    """int32 codes like Q·Kᵀ dots (never all zero) and per-group scales mapping them to about +-logit_range."""
    codes = rng.integers(-6000, 6000, size=(R, C), dtype=np.int32)
    scales = (rng.uniform(0.5, 1.0, size=(R, -(-C // G))) * logit_range / 6000).astype(np.float32)
    return codes, scales


@pytest.mark.parametrize("out_dtype", [np.float32, np.float16, BF16])
def test_int32_codes_with_row_lengths(rng, out_dtype):
    # 1301 columns: longer than the 1024-column block; lengths 1, in the first block, past it, and the full row
    R, C, G = 8, 1301, 16
    codes, scales = int32_scores(rng, R, C, G, 30.0)
    lengths = np.array([1, 2, 17, 1024, 1025, 1300, C, rng.integers(1, C)], np.int32)
    probs = int4_softmax(codes, scales, None, C, G, out_dtype=out_dtype, lengths=lengths)
    ref = int4_softmax_reference(codes, scales, None, C, G, out_dtype=np.float64, lengths=lengths)
    assert probs.dtype == np.dtype(out_dtype) and probs[0, 0] == 1
    assert_probs(probs, ref, lengths)


def test_int32_codes_large_logits_constant_rows_zero_points_and_codes(rng):
    R, C, G = 6, 301, 32
    codes, scales = int32_scores(rng, R, C, G, 1e4)  # logits +-1e4: exp of anything but the max underflows
    zeros = rng.integers(-100, 100, size=scales.shape, dtype=np.int32)
    codes[1:3], zeros[1:3], scales[1:3] = 123, -5, 0.75  # constant rows: full length, and cut at 200
    codes[3] //= 2  # one logit of 1e4 in the middle of a row, the rest below 5e3
    codes[3, 250], scales[3], zeros[3] = 6000, 1e4 / 6000, 0
    lengths = np.array([C, C, 200, C, 33, 1], np.int32)
    probs, pcodes, pscale = int4_softmax(codes, scales, zeros, C, G, return_codes=True, lengths=lengths)
    ref, _, ref_pscale = int4_softmax_reference(codes, scales, zeros, C, G, return_codes=True, lengths=lengths)
    assert np.all(np.isfinite(probs))
    assert_probs(probs, ref, lengths)
    np.testing.assert_allclose(probs[1], 1.0 / C, rtol=1e-6)
    np.testing.assert_allclose(probs[2, :200], 1.0 / 200, rtol=1e-6)
    assert probs[3, 250] == 1 and probs[5, 0] == 1
    assert_codes(pcodes, pscale, ref, ref_pscale, C)


def test_registered_case():
    from kernels import int4_softmax as module

    for case in list(module._cases()):  # collected first, as `python -m kernels.check` does
        assert check(case, case.run(), case.reference()), case.op


def test_rejects_bad_inputs(rng):
    codes, scales, zeros = quantize_logits_int4(rng.standard_normal((3, 40)).astype(np.float32), 32)
    with pytest.raises(ValueError, match="codes must be"):
        int4_softmax(codes, scales, zeros, 41, 32)
    with pytest.raises(ValueError, match="scales"):
        int4_softmax(codes, scales.astype(np.float16), zeros, 40, 32)
    with pytest.raises(ValueError, match="zeros"):
        int4_softmax(codes, scales, zeros[:, :1], 40, 32)
    with pytest.raises(ValueError, match="power of two"):
        int4_softmax(codes, scales, zeros, 40, 24)
    with pytest.raises(ValueError, match="out_dtype"):
        int4_softmax(codes, scales, zeros, 40, 32, out_dtype=np.int8)
    with pytest.raises(ValueError, match="uint8"):
        int4_softmax(codes.astype(np.int32), scales, zeros, 40, 32)
    with pytest.raises(ValueError, match="int32"):
        int4_softmax(unpack_nibbles(codes, 40).astype(np.int64), scales, zeros, 40, 32)
    for bad in ([1, 0, 2], [1, 41, 2], [1, 2]):
        with pytest.raises(ValueError, match="lengths"):
            int4_softmax(codes, scales, zeros, 40, 32, lengths=np.array(bad))
