"""kernels.quant_gemm (W4A16, both packing orders) against the exactly dequantised reference."""

import numpy as np
import pytest

import simulator
from kernels._common import BF16
from kernels.gemm import gemm
from kernels.quant import Int4Weight
from kernels.quant_gemm import w4a16_bound, w4a16_gemm, w4a16_reference, weight_bytes
from kernels.registry import check


@pytest.mark.parametrize("order, dtype, group_size, symmetric, rounding, gptq_v1, out_dtype", [
    ("awq", np.float16, 128, False, "rne", False, np.float32),
    ("awq", BF16, 32, True, "rtz", False, None),
    ("gptq", np.float16, 64, False, "rne", True, np.float32),  # v1 checkpoint: stored zeros are z - 1
    ("gptq", BF16, 128, True, "rne", False, np.float32),
])
def test_w4a16_matches_exact_dequant(rng, order, dtype, group_size, symmetric, rounding, gptq_v1, out_dtype):
    # M = 19 and N = 200 leave masked tails in 16 x 64 tiles; K spans several groups
    M, K, N = 19, 256, 200
    x = rng.standard_normal((M, K)).astype(dtype)
    w32 = rng.standard_normal((K, N)).astype(np.float32) * 0.05
    w = Int4Weight.from_float(w32, group_size, order, symmetric=symmetric, rounding=rounding, gptq_v1=gptq_v1)
    out = w4a16_gemm(x, w, out_dtype)
    want = np.dtype(dtype if out_dtype is None else out_dtype)
    assert out.dtype == want and out.shape == (M, N)
    err = np.abs(out.astype(np.float64) - w4a16_reference(x, w, want).astype(np.float64))
    assert np.all(err <= w4a16_bound(x, w, want))
    if want == np.float32:  # it is the quantised product, not the float one: that error is far above the bound
        exact = x.astype(np.float64) @ w32.astype(np.float64)
        assert np.abs(out - exact).max() > 10 * w4a16_bound(x, w, want).max()


def test_w4a16_packing_orders_agree(rng):
    """AWQ, GPTQ and GPTQ-v1 packings of one quantised weight: each GEMM meets the reference of the exactly
    dequantised weight, and since only the layout differs, all three give the same bits."""
    x = rng.standard_normal((19, 256)).astype(np.float16)
    w32 = rng.standard_normal((256, 200)).astype(np.float32)
    weights = [Int4Weight.from_float(w32, 64, order, gptq_v1=v1) for order, v1 in
               (("awq", False), ("gptq", False), ("gptq", True))]
    ref = w4a16_reference(x, weights[0], np.float32)
    bound = w4a16_bound(x, weights[0], np.float32)
    outs = []
    for w in weights:
        assert np.array_equal(w.dequantize(), weights[0].dequantize())
        outs.append(w4a16_gemm(x, w, np.float32))
        assert np.all(np.abs(outs[-1] - ref) <= bound), w.order
    assert np.array_equal(outs[0], outs[1]) and np.array_equal(outs[0], outs[2])
    awq128 = Int4Weight.from_float(w32, 128, "awq")  # another group size: other values, its own reference
    out128 = w4a16_gemm(x, awq128, np.float32)
    assert np.all(np.abs(out128 - w4a16_reference(x, awq128, np.float32)) <= w4a16_bound(x, awq128, np.float32))
    assert np.abs(out128 - outs[0]).max() > 0


def dram_bytes(case) -> int:
    """DRAM bytes of the case's launches on a cold device (the L2 would otherwise keep earlier tests' data)."""
    simulator.reset_device_l2()
    with simulator.profile() as prof:
        case.run()
    return sum(r.counters["dram_read_bytes"] for r in prof.launches)


def test_registered_w4a16_cases_qwen_shapes_and_weight_bytes():
    from kernels import gemm as gemm_module
    from kernels import quant_gemm

    fp16 = next(iter(gemm_module._cases()))
    assert check(fp16, fp16.run(), fp16.reference())
    cases = list(quant_gemm._cases())
    for case in cases:
        assert check(case, case.run(), case.reference()), case.op
        # INT4 codes + fp16 scales + 4-bit zeros: at most ~0.3x the fp16 weight's bytes
        assert case.notes["weight_bytes"] <= 0.3 * fp16.notes["weight_bytes"]
        assert case.shape.startswith(fp16.shape)
        assert float(case.notes["rel_err_vs_fp32"]) > 0
    # what the simulator sees read from DRAM, less the activations: the weight bytes (the small outputs stay in the L2)
    M = 16
    x = M * 2048 * 2
    w4 = dram_bytes(cases[0]) - x
    w16 = dram_bytes(fp16) - x
    assert w16 >= fp16.notes["weight_bytes"] and w4 <= 0.3 * w16


def test_w4a16_rejects_bad_inputs(rng):
    w = Int4Weight.from_float(rng.standard_normal((64, 16)).astype(np.float32), 32, "awq")
    x = rng.standard_normal((4, 64)).astype(np.float16)
    with pytest.raises(ValueError, match="float16 or bfloat16"):
        w4a16_gemm(x.astype(np.float32), w)
    with pytest.raises(ValueError, match="weight is"):
        w4a16_gemm(x[:, :32], w)
    with pytest.raises(ValueError, match="Int4Weight"):
        w4a16_gemm(x, w.dequantize())
    with pytest.raises(ValueError, match="qzeros"):
        w4a16_gemm(x, Int4Weight(w.qweight, w.qzeros.astype(np.int64), w.scales, 32, "awq"))
    with pytest.raises(ValueError, match="group_size"):
        w4a16_gemm(x, Int4Weight(w.qweight, w.qzeros, w.scales, 48, "awq"))
    with pytest.raises(ValueError, match="out_dtype"):
        w4a16_gemm(x, w, np.int8)
    assert weight_bytes(w) == w.qweight.nbytes + w.qzeros.nbytes + w.scales.nbytes
    with pytest.raises(ValueError, match="inner"):
        gemm(x, x)


def test_w4a16_autotuned_launch_keeps_tiles_inside_groups(rng):
    from kernels.quant_gemm import w4a16_kernel_tuned

    x = rng.standard_normal((19, 256)).astype(np.float16)
    w = Int4Weight.from_float(rng.standard_normal((256, 200)).astype(np.float32), 32, "gptq")
    out = w4a16_gemm(x, w, np.float32, tune=True)
    assert np.all(np.abs(out - w4a16_reference(x, w, np.float32)) <= w4a16_bound(x, w, np.float32))
    assert w4a16_kernel_tuned.best_config.kwargs["BLOCK_K"] <= 32
    assert {r.config.kwargs["BLOCK_K"] for r in w4a16_kernel_tuned.records} == {32}  # BLOCK_K 64 / 128 pruned
