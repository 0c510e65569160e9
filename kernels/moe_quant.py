"""The MoE block with quantised routed experts, through part 1's kernels: INT4 weight-only experts run
`quant_gemm.w4a16_gemm` per expert segment, MXFP4 experts run `mxfp4_fp8.mxfp4_moe_gemm` (converted online into
its FP8 workspace, one grouped launch). Router, moe_align, scatter, shared expert and combine are `kernels.moe`'s.

Unlike the fp16/bf16 path, these read the segment offsets on the host between align and the expert GEMMs:
part 1's interfaces take a host list of experts (the MXFP4 workspace decides on the host which experts to
convert; the W4A16 GEMM is one launch per weight). Weights layout: `w1[e]` is the logical [hidden, 2I] matrix
(gate columns first) and `w2[e]` the logical [I, hidden] one, as `y = x @ W`.
"""

from __future__ import annotations

import numpy as np

import dsl as tl
from jit import cdiv, jit, next_power_of_2
from kernels._common import dtype_name, float_array
from kernels.moe import (
    AUTOTUNE_CONFIGS,
    _check_experts,
    make_moe_inputs,
    moe_align,
    moe_combine,
    moe_grouped_down,
    moe_grouped_swiglu,
    moe_reference,
    moe_router,
    moe_router_reference,
)
from kernels.mxfp4_fp8 import MXFP4Experts, mxfp4_moe_gemm
from kernels.quant import Int4Weight, quantize_fp8
from kernels.quant_gemm import w4a16_gemm
from kernels.registry import Case, register


@jit(do_not_specialize=("R", "N"))
def _silu_mul_kernel(c_ptr, h_ptr, R, N, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr):
    """h = silu(c[:, :N]) · c[:, N:] from an fp32 [R, 2N] GEMM output, rounded to h's dtype."""
    r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (r < R)[:, None] & (n < N)[None, :]
    g = tl.load(c_ptr + r[:, None] * (2 * N) + n[None, :], mask=mask, other=0.0)
    u = tl.load(c_ptr + r[:, None] * (2 * N) + (n + N)[None, :], mask=mask, other=0.0)
    tl.store(h_ptr + r[:, None] * N + n[None, :], (g * tl.sigmoid(g) * u).to(h_ptr.dtype.element_ty), mask=mask)


def _silu_mul(c: np.ndarray, dtype) -> np.ndarray:
    R, N = c.shape[0], c.shape[1] // 2
    h = np.empty((R, N), dtype)
    block_n = min(128, next_power_of_2(N))
    _silu_mul_kernel[(cdiv(R, 16), cdiv(N, block_n))](c, h, R, N, BLOCK_R=16, BLOCK_N=block_n)
    return h


def _expert_gemm(a: np.ndarray, weights, used: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """fp32 [R, N] rows of each used expert's segment times that expert's quantised weight."""
    if isinstance(weights, MXFP4Experts):
        bounds = np.append(offsets[used], offsets[used[-1] + 1]) if used.size else np.zeros(1, np.int32)
        return mxfp4_moe_gemm(a, weights, used, bounds, out_dtype=np.float32)
    y = np.zeros((a.shape[0], weights[0].shape[1]), np.float32)
    for e in used:
        lo, hi = int(offsets[e]), int(offsets[e + 1])
        y[lo:hi] = w4a16_gemm(a[lo:hi], weights[e], out_dtype=np.float32)
    return y


def _check_quantised(w, hidden: int, name: str):
    if isinstance(w, MXFP4Experts):
        return w.num_experts, w.K, w.N
    if isinstance(w, (list, tuple)) and w and all(isinstance(x, Int4Weight) for x in w):
        shapes = {x.shape for x in w}
        if len(shapes) != 1:
            raise ValueError(f"{name}: every expert's Int4Weight must have the same shape, got {shapes}")
        K, N = shapes.pop()
        return len(w), K, N
    raise ValueError(f"{name} must be an MXFP4Experts or a list of Int4Weight (one per expert)")


def moe_forward_quantized(x: np.ndarray, w_router: np.ndarray, w1, w2, k: int, *,
                          shared_w1: np.ndarray | None = None, shared_w2: np.ndarray | None = None,
                          w_shared_gate: np.ndarray | None = None) -> np.ndarray:
    """The MoE block with w1 / w2 as MXFP4Experts ([E, 2I, hidden] and [E, hidden, I], y = x·W[e]ᵀ) or as lists of
    Int4Weight (logical [hidden, 2I] and [I, hidden]); the shared expert stays in x's dtype."""
    x = float_array(x, "x", ndim=2)
    M, hidden = x.shape
    E, K1, N1 = _check_quantised(w1, hidden, "w1")
    E2, K2, N2 = _check_quantised(w2, hidden, "w2")
    if not isinstance(w1, MXFP4Experts) and x.dtype == np.float32:
        raise ValueError("INT4 experts take float16 or bfloat16 activations (W4A16)")
    if type(w1) is not type(w2) or K1 != hidden or N1 % 2 or E2 != E or K2 != N1 // 2 or N2 != hidden:
        raise ValueError(f"w1 must be [E, hidden={hidden} -> 2I] and w2 [E, I -> hidden] of the same kind; got "
                         f"E={E}/{E2}, w1 {K1}->{N1}, w2 {K2}->{N2}")
    has_shared = shared_w1 is not None
    if has_shared:
        shared_w1, shared_w2 = _check_experts(shared_w1, shared_w2, hidden, x.dtype, shared=True)
    cfg = AUTOTUNE_CONFIGS[0]
    weights, ids, gate = moe_router(x, w_router, k, w_shared_gate if has_shared else None)
    plan = moe_align(ids, weights, x, E, cfg["BLOCK_M"])
    offsets = plan["offsets"]
    used = np.nonzero(np.diff(offsets))[0].astype(np.int32)  # the host step part 1's interfaces need
    x_perm = plan["x_perm"]
    x_perm[plan["sorted_ids"] >= ids.size] = 0  # padding rows: zeros, so the FP8 row quantiser sees finite data
    h = _silu_mul(_expert_gemm(x_perm, w1, used, offsets), x.dtype)
    y = _expert_gemm(h, w2, used, offsets)
    shared = None
    if has_shared:
        hs = moe_grouped_swiglu(x, shared_w1, None, None, M)  # DIRECT launches: the config table's pick
        shared = moe_grouped_down(hs, shared_w2, None, None, gate, M)
    return moe_combine(y, plan["positions"], shared, x.dtype, row_weights=plan["sorted_weights"])


def fp8_rows(x: np.ndarray) -> np.ndarray:
    """float64 value of x's rows after the per-row E4M3 quantisation the MXFP4 GEMM applies to its input."""
    q, s = quantize_fp8(np.asarray(x, np.float32), "e4m3", axis=-1)
    return q.astype(np.float64) * s.astype(np.float64)


def dequantised_experts(w1, w2) -> tuple[np.ndarray, np.ndarray]:
    """fp32 [E, 2I, hidden] and [E, hidden, I] weights equal to what the quantised experts hold."""
    if isinstance(w1, MXFP4Experts):
        return (np.stack([w1.dequantize(e) for e in range(w1.num_experts)]),
                np.stack([w2.dequantize(e) for e in range(w2.num_experts)]))
    return np.stack([w.dequantize().T for w in w1]), np.stack([w.dequantize().T for w in w2])


@register
def _cases():
    rng = np.random.default_rng(8)
    M, hidden, E, k, inter = 16, 256, 16, 8, 128
    a = make_moe_inputs(rng, M, hidden, E, inter, inter, np.float16)
    shared = {n: a[n] for n in ("shared_w1", "shared_w2", "w_shared_gate")}
    formats = {
        "int4": ([Int4Weight.from_float(w.T.astype(np.float32), 64) for w in a["w1"]],
                 [Int4Weight.from_float(w.T.astype(np.float32), 64) for w in a["w2"]]),
        "mxfp4": (MXFP4Experts.from_float(a["w1"].astype(np.float32), capacity=E),
                  MXFP4Experts.from_float(a["w2"].astype(np.float32), capacity=E)),
    }
    for name, (w1, w2) in formats.items():
        notes: dict = {}
        # Only the MXFP4 GEMM rounds its input rows to FP8. Bound per format as a default argument: the closures
        # run after this generator has finished, when a free `name` would read "mxfp4" for every case.
        act_quant = fp8_rows if name == "mxfp4" else None

        def run(w1=w1, w2=w2):
            return moe_forward_quantized(a["x"], a["w_router"], w1, w2, k, **shared)

        def ref(w1=w1, w2=w2, notes=notes, act_quant=act_quant):
            d1, d2 = dequantised_experts(w1, w2)
            w, i, g = moe_router_reference(a["x"], a["w_router"], k, a["w_shared_gate"])
            out = moe_reference(a["x"], d1, d2, w, i, shared_w1=a["shared_w1"], shared_w2=a["shared_w2"],
                                shared_gate=g, act_quant=act_quant)
            exact = moe_reference(a["x"], a["w1"], a["w2"], w, i, shared_w1=a["shared_w1"],
                                  shared_w2=a["shared_w2"], shared_gate=g)
            notes["rel_err_vs_fp16_weights"] = f"{np.abs(out - exact).max() / np.abs(exact).max():.2e}"
            return out

        # Exact dequantised weights (and, for MXFP4, the same FP8 activation rows): fp16 roundings only.
        tol = 1e-3  # two half-ulps of fp16 (measured 3.1e-4)
        yield Case(f"moe.forward_{name}", f"M={M} hidden={hidden} E={E} k={k} I={inter} +shared",
                   dtype_name(np.float16), run, ref, rtol=tol, atol=tol, notes=notes)
