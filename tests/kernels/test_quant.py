"""kernels.quant: the numpy INT4 / MXFP4 / FP8 formats, checked against the definitions in research/qwen35.md §5."""

import ml_dtypes
import numpy as np
import pytest

from kernels.quant import (
    E2M1_VALUES,
    Int4Weight,
    dequantize_fp8,
    dequantize_mxfp4,
    e2m1_round,
    fp8_decode_table,
    mxfp4_codes,
    pack_int4,
    pack_zeros,
    quantize_fp8,
    quantize_int4,
    quantize_mxfp4,
    to_fp8,
    unpack_int4,
    unpack_zeros,
)


def test_awq_and_gptq_bit_positions():
    q = np.zeros((8, 8), np.uint8)
    q[0, :] = np.arange(1, 9)  # columns 0..7 of row 0
    q[:, 0] = np.arange(1, 9)  # rows 0..7 of column 0
    # AWQ: nibble p holds column [0, 2, 4, 6, 1, 3, 5, 7][p] -> nibbles (high..low) 8 6 4 2 7 5 3 1
    assert pack_int4(q, "awq")[0, 0].view(np.uint32) == 0x86427531
    # GPTQ: row 8r + j sits at bits 4j
    assert pack_int4(q, "gptq")[0, 0].view(np.uint32) == 0x87654321
    assert pack_zeros(q[:1], "gptq")[0, 0].view(np.uint32) == 0x87654321
    assert pack_zeros(q[:1], "awq")[0, 0].view(np.uint32) == 0x86427531


@pytest.mark.parametrize("order", ["awq", "gptq"])
def test_pack_unpack_round_trip(rng, order):
    q = rng.integers(0, 16, size=(64, 48), dtype=np.uint8)
    packed = pack_int4(q, order)
    assert packed.dtype == np.int32 and packed.shape == ((64, 6) if order == "awq" else (8, 48))
    assert np.array_equal(unpack_int4(packed, order), q)
    z = rng.integers(0, 16, size=(2, 48), dtype=np.uint8)
    assert np.array_equal(unpack_zeros(pack_zeros(z, order), order), z)


@pytest.mark.parametrize("group_size", [32, 64, 128])
def test_quantize_int4_asymmetric_follows_awq_formula(rng, group_size):
    w = rng.standard_normal((256, 24)).astype(np.float32) + 0.3
    q, z, s = quantize_int4(w, group_size)
    g = w.reshape(-1, group_size, 24)
    s_ref = (np.maximum(g.max(1) - g.min(1), 1e-5) / 15).astype(np.float16)
    assert np.array_equal(s, s_ref)
    s32 = s_ref.astype(np.float32)
    assert np.array_equal(z, np.clip(-np.rint(g.min(1) / s32), 0, 15).astype(np.uint8))
    assert np.array_equal(q.reshape(g.shape), np.clip(np.rint(g / s32[:, None]) + z[:, None], 0, 15))
    deq = (q.reshape(g.shape).astype(np.float32) - z[:, None]) * s32[:, None]
    assert np.all(np.abs(deq - g) <= 1.0 * s32[:, None] + 1e-6)  # half a step, plus z's own rounding


def test_quantize_int4_symmetric_and_round_toward_zero(rng):
    w = rng.standard_normal((64, 16)).astype(np.float32)
    q, z, s = quantize_int4(w, 32, symmetric=True)
    assert np.all(z == 8)
    assert np.array_equal(s, (np.abs(w.reshape(2, 32, 16)).max(1) / 7).astype(np.float16))
    deq = (q.reshape(2, 32, 16).astype(np.float32) - 8) * s.astype(np.float32)[:, None]
    assert np.all(np.abs(deq - w.reshape(2, 32, 16)) <= s.astype(np.float32)[:, None] * 0.5 + 1e-3)
    qz, _, sz = quantize_int4(w, 32, symmetric=True, rounding="rtz")
    ratio = w.reshape(2, 32, 16) / sz.astype(np.float32)[:, None]
    assert np.array_equal(qz.reshape(2, 32, 16), np.clip(np.trunc(ratio) + 8, 0, 15))
    assert not np.array_equal(qz, q)  # the two rounding modes do differ on random data
    with pytest.raises(ValueError, match="rounding"):
        quantize_int4(w, 32, rounding="up")


def test_int4_weight_gptq_v1_stores_zero_minus_one(rng):
    w = rng.standard_normal((128, 32)).astype(np.float32)
    v1 = Int4Weight.from_float(w, 64, "gptq", gptq_v1=True)
    v2 = Int4Weight.from_float(w, 64, "gptq")
    assert v1.zero_offset == 1
    assert np.array_equal((unpack_zeros(v1.qzeros, "gptq").astype(int) + 1) & 0xF, unpack_zeros(v2.qzeros, "gptq"))
    assert np.array_equal(v1.dequantize(), v2.dequantize())
    awq = Int4Weight.from_float(w, 64, "awq")
    assert np.array_equal(awq.dequantize(), v2.dequantize())  # same codes, other packing
    awq.validate()
    with pytest.raises(ValueError, match="gptq_v1"):
        Int4Weight.from_float(w, 64, "awq", gptq_v1=True)
    with pytest.raises(ValueError, match="multiple of group_size"):
        quantize_int4(w[:100], 64)
    bad = Int4Weight(awq.qweight[:, :2], awq.qzeros, awq.scales, 64, "awq")
    with pytest.raises(ValueError, match="qweight"):
        bad.validate()


def test_e2m1_table_and_rounding():
    # spec table: codes 0..7 = 0, .5, 1, 1.5, 2, 3, 4, 6; bit 3 is the sign
    assert E2M1_VALUES[:8].tolist() == [0, 0.5, 1, 1.5, 2, 3, 4, 6]
    assert np.array_equal(E2M1_VALUES[8:], -E2M1_VALUES[:8]) and np.all(np.signbit(E2M1_VALUES[8:]))
    # ties go to the even mantissa (even code), beyond 6 saturates
    x = np.array([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 7.9, -5.0, 0.3, 2.9])
    assert E2M1_VALUES[e2m1_round(x)].tolist() == [0, 1, 1, 2, 2, 4, 4, 6, -4, 0.5, 3]


def test_mxfp4_quantize_layout_and_error(rng):
    w = rng.standard_normal((3, 5, 96)).astype(np.float32) * np.exp2(rng.integers(-20, 20, size=(3, 5, 1)))
    blocks, scales = quantize_mxfp4(w)
    assert blocks.shape == (3, 5, 3, 16) and scales.shape == (3, 5, 3) and blocks.dtype == scales.dtype == np.uint8
    amax = np.abs(w.reshape(3, 5, 3, 32)).max(-1)
    assert np.array_equal(scales.astype(int) - 127, np.floor(np.log2(amax)).astype(int) - 2)
    codes = mxfp4_codes(blocks)
    assert np.array_equal(codes[..., 0::2], blocks & 0xF) and np.array_equal(codes[..., 1::2], blocks >> 4)
    deq = dequantize_mxfp4(blocks, scales)
    step = np.exp2(scales.astype(np.float64) - 127)[..., None]  # spacing <= 2 * X near the top of the block
    err = np.abs(deq.reshape(3, 5, 3, 32) - w.reshape(3, 5, 3, 32))
    assert np.all(err <= step * 2 + 1e-30)
    with pytest.raises(ValueError, match="multiple of 32"):
        quantize_mxfp4(w[..., :40])


@pytest.mark.parametrize("fmt", ["e4m3", "e5m2"])
def test_fp8_tables_match_definition_and_ml_dtypes(rng, fmt):
    table = fp8_decode_table(fmt)
    via_ml = np.arange(256, dtype=np.uint8).view({"e4m3": ml_dtypes.float8_e4m3fn,
                                                  "e5m2": ml_dtypes.float8_e5m2}[fmt]).astype(np.float32)
    assert np.array_equal(table, via_ml, equal_nan=True)
    assert np.nanmax(table[np.isfinite(table)]) == (448.0 if fmt == "e4m3" else 57344.0)
    assert to_fp8(np.array([1e6, -1e6]), fmt).astype(np.float32).tolist() == ([448.0, -448.0] if fmt == "e4m3"
                                                                               else [57344.0, -57344.0])
    x = rng.standard_normal((6, 40)).astype(np.float32) * 100
    q, s = quantize_fp8(x, fmt, axis=-1)
    assert s.shape == (6, 1) and np.allclose(np.abs(q.astype(np.float32)).max(1), 448.0 if fmt == "e4m3" else 57344.0)
    rel = 2.0 ** -4 if fmt == "e4m3" else 2.0 ** -3  # half an ulp of a 3 / 2 bit mantissa
    assert np.all(np.abs(dequantize_fp8(q, s) - x) <= rel * np.abs(x) + s * 2.0 ** -9)
