"""The MoE block with INT4 (W4A16) and MXFP4 (FP8 workspace) routed experts equals the per-token loop over the
dequantised experts (for MXFP4, with the FP8 rounding of each expert GEMM's input rows)."""

import numpy as np
import pytest

from kernels import moe, moe_quant
from kernels.mxfp4_fp8 import MXFP4Experts
from kernels.quant import Int4Weight
from kernels.registry import all_cases, check

M, HIDDEN, E, K, INTER = 21, 64, 6, 2, 32


@pytest.mark.parametrize("fmt", ["int4", "mxfp4"])
def test_quantised_experts_equal_per_token_loop(rng, fmt):
    a = moe.make_moe_inputs(rng, M, HIDDEN, E, INTER, INTER, np.float16)
    if fmt == "int4":
        w1 = [Int4Weight.from_float(w.T.astype(np.float32), 32) for w in a["w1"]]
        w2 = [Int4Weight.from_float(w.T.astype(np.float32), 32) for w in a["w2"]]
    else:
        w1 = MXFP4Experts.from_float(a["w1"].astype(np.float32), capacity=E)
        w2 = MXFP4Experts.from_float(a["w2"].astype(np.float32), capacity=E)
    shared = {n: a[n] for n in ("shared_w1", "shared_w2", "w_shared_gate")}
    out = moe_quant.moe_forward_quantized(a["x"], a["w_router"], w1, w2, K, **shared)
    w, ids, gate = moe.moe_router(a["x"], a["w_router"], K, a["w_shared_gate"])
    d1, d2 = moe_quant.dequantised_experts(w1, w2)
    ref = moe.moe_reference(a["x"], d1, d2, w, ids, shared_w1=a["shared_w1"], shared_w2=a["shared_w2"],
                            shared_gate=gate, act_quant=moe_quant.fp8_rows if fmt == "mxfp4" else None)
    np.testing.assert_allclose(out.astype(np.float64), ref, rtol=3e-3, atol=3e-3)


def test_rejects_mixed_or_wrong_experts(rng):
    a = moe.make_moe_inputs(rng, 4, HIDDEN, E, INTER, INTER, np.float16)
    mx = MXFP4Experts.from_float(a["w1"].astype(np.float32), capacity=E)
    with pytest.raises(ValueError, match="same kind|w2"):
        moe_quant.moe_forward_quantized(a["x"], a["w_router"], mx, a["w2"], K)
    with pytest.raises(ValueError, match="w1"):
        moe_quant.moe_forward_quantized(a["x"], a["w_router"], [a["w1"][0]], mx, K)


def test_registered_cases_pass_with_their_own_references():
    """The cases' references are closures built in a loop over the formats and called after it: each must keep its
    own format (an INT4 reference that rounded the activations to FP8 like MXFP4's was off by ~6e-2)."""
    cases = [c for c in all_cases() if c.op in ("moe.forward_int4", "moe.forward_mxfp4")]
    assert sorted(c.op for c in cases) == ["moe.forward_int4", "moe.forward_mxfp4"]
    for case in cases:
        assert check(case, case.run(), case.reference()), case.op
