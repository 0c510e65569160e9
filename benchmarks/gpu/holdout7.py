"""The seventh held-out set (split "holdout7"): kernels written for a fresh measurement after the model took Triton's
instruction selection and vector widths, scored once with that model frozen.

Steps of Qwen3.5 inference the other sets lack: a W8A16 projection (int8 weights widened in the loop), a gated delta
rule's decode step, MoE top-2 routing, logit soft-capping, and the L2 norm of linear attention's q / k. Kernels and
cases live together here, one module for the set.
"""

from __future__ import annotations

import math

import numpy as np
from holdout3 import BLOCK_WARPS, _whole_warps
from holdout6 import EPS
from sweep_cases import Case, _f32, _grid_configs, _itemsize, _np_dtype, _rand
from sweep_kernels import jit, tl


@jit
def w8a16_matmul_kernel(x_ptr, w_ptr, scale_ptr, y_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                        BLOCK_K: tl.constexpr):
    """y = x (W * scale) for activations x [M, K], int8 weights W [K, N] and per-channel scales [N]: the weights are
    widened to the activations' type in the loop, the scale applied once to the accumulator."""
    offs_m = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(x_ptr + offs_m[:, None] * K + (k + offs_k)[None, :],
                    mask=(offs_m[:, None] < M) & ((k + offs_k)[None, :] < K), other=0.0)
        w = tl.load(w_ptr + (k + offs_k)[:, None] * N + offs_n[None, :],
                    mask=((k + offs_k)[:, None] < K) & (offs_n[None, :] < N), other=0)
        acc = tl.dot(a, w.to(a.dtype), acc)
    scale = tl.load(scale_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)
    y = (acc * scale[None, :]).to(y_ptr.dtype.element_ty)
    tl.store(y_ptr + offs_m[:, None] * N + offs_n[None, :], y, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


@jit
def delta_rule_decode_kernel(s_ptr, q_ptr, k_ptr, v_ptr, g_ptr, beta_ptr, s_out_ptr, o_ptr, DK: tl.constexpr,
                             DV: tl.constexpr, BLOCK_V: tl.constexpr):
    """One decode step of a gated delta rule per head (Qwen3.5's linear attention): the fp32 state S [DK, DV] decays
    by g, takes beta (v - S^T k) along k (written to s_out), and reads out S^T q; one program per (head, BLOCK_V
    state columns)."""
    head = tl.program_id(0)
    dk = tl.arange(0, DK)
    dv = tl.program_id(1) * BLOCK_V + tl.arange(0, BLOCK_V)
    offs = head.to(tl.int64) * DK * DV + dk[:, None] * DV + dv[None, :]
    s = tl.load(s_ptr + offs) * tl.load(g_ptr + head)
    k = tl.load(k_ptr + head * DK + dk).to(tl.float32)
    q = tl.load(q_ptr + head * DK + dk).to(tl.float32)
    v = tl.load(v_ptr + head * DV + dv).to(tl.float32)
    u = tl.load(beta_ptr + head) * (v - tl.sum(s * k[:, None], axis=0))
    s = s + k[:, None] * u[None, :]
    tl.store(s_out_ptr + offs, s)
    tl.store(o_ptr + head * DV + dv, tl.sum(s * q[:, None], axis=0).to(o_ptr.dtype.element_ty))


@jit
def router_top2_kernel(logits_ptr, probs_ptr, ids_ptr, n_tokens, n_experts, BLOCK_T: tl.constexpr,
                       BLOCK_E: tl.constexpr):
    """MoE routing: softmax over each token's expert logits [T, E], then the two largest probabilities (renormalised
    to sum to one) and their experts; one program per BLOCK_T tokens."""
    t = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    e = tl.arange(0, BLOCK_E)
    mask = (t[:, None] < n_tokens) & (e[None, :] < n_experts)
    x = tl.load(logits_ptr + t[:, None] * n_experts + e[None, :], mask=mask, other=-float("inf")).to(tl.float32)
    p = tl.exp(x - tl.max(x, axis=1)[:, None])
    p = p / tl.sum(p, axis=1)[:, None]
    first = tl.argmax(p, axis=1)
    p1 = tl.max(p, axis=1)
    rest = tl.where(e[None, :] == first[:, None], -1.0, p)
    second = tl.argmax(rest, axis=1)
    p2 = tl.max(rest, axis=1)
    valid = t < n_tokens
    tl.store(probs_ptr + t * 2, p1 / (p1 + p2), mask=valid)
    tl.store(probs_ptr + t * 2 + 1, p2 / (p1 + p2), mask=valid)
    tl.store(ids_ptr + t * 2, first, mask=valid)
    tl.store(ids_ptr + t * 2 + 1, second, mask=valid)


@jit
def softcap_kernel(x_ptr, out_ptr, n, cap, inv_temperature, BLOCK: tl.constexpr):
    """Logit soft-capping and temperature: out = cap * tanh(x / cap) * inv_temperature, elementwise over flat
    logits."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = cap * (1.0 - 2.0 / (1.0 + tl.exp(2.0 * x / cap))) * inv_temperature  # tanh from one exp
    tl.store(out_ptr + offs, y.to(out_ptr.dtype.element_ty), mask=mask)


@jit
def l2norm_kernel(x_ptr, out_ptr, n_rows, eps, D: tl.constexpr, BLOCK_R: tl.constexpr):
    """Each D-wide row of x [rows, D] divided by its L2 norm (linear attention's q and k per head); one program per
    BLOCK_R rows."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    d = tl.arange(0, D)
    mask = rows[:, None] < n_rows
    offs = rows[:, None].to(tl.int64) * D + d[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    norm = tl.sqrt(tl.sum(x * x, axis=1) + eps)
    tl.store(out_ptr + offs, (x / norm[:, None]).to(out_ptr.dtype.element_ty), mask=mask)


# --- cases

W8A16_CONFIGS = _grid_configs({"BLOCK_M": [16, 32, 64, 128], "BLOCK_N": [32, 64, 128, 256], "BLOCK_K": [32, 64, 128],
                               "num_warps": [4, 8], "num_stages": [2, 3, 4]},
                              limit=20, seed=71, keep=lambda c: c["BLOCK_M"] * c["BLOCK_N"] <= 128 * 128)


def w8a16_case(name, m, n, k, dtype):
    def inputs(rng):
        return {"x": _rand(rng, (m, k), dtype), "w": rng.integers(-127, 128, (k, n), dtype=np.int8),
                "scale": (rng.random(n, dtype=np.float32) * 0.01 + 0.001).astype(_np_dtype(dtype)),
                "y": np.empty((m, n), _np_dtype(dtype))}

    def reference(x):
        return {"y": (_f32(x["x"]) @ x["w"].astype(np.float32)) * _f32(x["scale"])}

    size = _itemsize(dtype)
    return Case("holdout7_w8a16", name, "holdout7", w8a16_matmul_kernel, {"M": m, "N": n, "K": k}, dtype,
                W8A16_CONFIGS, inputs, ("y",), lambda x, cfg: (x["x"], x["w"], x["scale"], x["y"], m, n, k),
                lambda cfg: (math.ceil(n / cfg["BLOCK_N"]), math.ceil(m / cfg["BLOCK_M"])), reference,
                tolerance=2e-2, flops=2.0 * m * n * k, min_bytes=size * (m * k + m * n) + k * n)


def delta_rule_case(name, heads, dk, dv, dtype):
    configs = _grid_configs({"BLOCK_V": [16, 32, 64, 128], "num_warps": [1, 2, 4, 8]},
                            keep=lambda c: c["BLOCK_V"] <= dv and dk * c["BLOCK_V"] >= 32 * c["num_warps"])

    def inputs(rng):
        k = rng.standard_normal((heads, dk)).astype(np.float32)
        return {"s": _rand(rng, (heads, dk, dv), "fp32", 0.1), "q": _rand(rng, (heads, dk), dtype, 0.1),
                "k": (k / np.linalg.norm(k, axis=1, keepdims=True)).astype(_np_dtype(dtype)),
                "v": _rand(rng, (heads, dv), dtype), "g": rng.uniform(0.8, 1.0, heads).astype(np.float32),
                "beta": rng.uniform(0.1, 0.9, heads).astype(np.float32),
                "s_out": np.empty((heads, dk, dv), np.float32), "o": np.empty((heads, dv), _np_dtype(dtype))}

    def reference(x):
        s = x["s"].astype(np.float64) * x["g"][:, None, None]
        k, q, v = _f32(x["k"]), _f32(x["q"]), _f32(x["v"])
        u = x["beta"][:, None] * (v - np.einsum("hkv,hk->hv", s, k))
        s = s + k[:, :, None] * u[:, None, :]
        return {"s_out": s, "o": np.einsum("hkv,hk->hv", s, q)}

    return Case("holdout7_delta_rule", name, "holdout7", delta_rule_decode_kernel, {"H": heads, "DK": dk, "DV": dv},
                dtype, [{"DK": dk, "DV": dv, **c} for c in configs], inputs, ("s_out", "o"),
                lambda x, cfg: (x["s"], x["q"], x["k"], x["v"], x["g"], x["beta"], x["s_out"], x["o"]),
                lambda cfg: (heads, dv // cfg["BLOCK_V"]), reference, tolerance=1e-2,
                min_bytes=8.0 * heads * dk * dv)


ROUTER_CONFIGS = _grid_configs({"BLOCK_T": [1, 2, 4, 8, 16, 32], "num_warps": [1, 2, 4, 8]}, limit=16, seed=72)


def router_case(name, tokens, experts, dtype):
    block = 1 << (experts - 1).bit_length()

    def inputs(rng):
        return {"logits": _rand(rng, (tokens, experts), dtype, 2.0), "probs": np.empty((tokens, 2), np.float32),
                "ids": np.empty((tokens, 2), np.int32)}

    def reference(x):
        z = _f32(x["logits"]).astype(np.float64)
        p = np.exp(z - z.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        ids = np.argsort(-p, axis=1, kind="stable")[:, :2]
        top = np.take_along_axis(p, ids, axis=1)
        return {"probs": top / top.sum(axis=1, keepdims=True), "ids": ids.astype(np.int32)}

    return Case("holdout7_router", name, "holdout7", router_top2_kernel, {"T": tokens, "E": experts}, dtype,
                [{"BLOCK_E": block, **c} for c in ROUTER_CONFIGS if c["BLOCK_T"] * block >= 32 * c["num_warps"]],
                inputs, ("probs", "ids"), lambda x, cfg: (x["logits"], x["probs"], x["ids"], tokens, experts),
                lambda cfg: (math.ceil(tokens / cfg["BLOCK_T"]),), reference, tolerance=1e-3,
                min_bytes=_itemsize(dtype) * tokens * experts + 16.0 * tokens)


SOFTCAP_CONFIGS = _grid_configs(BLOCK_WARPS, limit=16, seed=73, keep=_whole_warps)
SOFTCAP = {"cap": 30.0, "inv_temperature": 1 / 0.7}


def softcap_case(name, n, dtype):
    def inputs(rng):
        return {"x": _rand(rng, (n,), dtype, 20.0), "out": np.empty(n, _np_dtype(dtype))}

    def reference(x):
        return {"out": SOFTCAP["cap"] * np.tanh(_f32(x["x"]).astype(np.float64) / SOFTCAP["cap"])
                * SOFTCAP["inv_temperature"]}

    return Case("holdout7_softcap", name, "holdout7", softcap_kernel, {"n": n}, dtype, SOFTCAP_CONFIGS, inputs,
                ("out",), lambda x, cfg: (x["x"], x["out"], n, SOFTCAP["cap"], SOFTCAP["inv_temperature"]),
                lambda cfg: (math.ceil(n / cfg["BLOCK"]),), reference, tolerance=1e-2,
                min_bytes=2.0 * _itemsize(dtype) * n)


L2NORM_CONFIGS = _grid_configs({"BLOCK_R": [1, 2, 4, 8, 16, 32, 64], "num_warps": [1, 2, 4, 8]}, limit=16, seed=74,
                               keep=lambda c: c["BLOCK_R"] * 128 >= 32 * c["num_warps"])


def l2norm_case(name, rows, d, dtype):
    def inputs(rng):
        return {"x": _rand(rng, (rows, d), dtype), "out": np.empty((rows, d), _np_dtype(dtype))}

    def reference(x):
        v = _f32(x["x"]).astype(np.float64)
        return {"out": v / np.sqrt((v * v).sum(axis=1, keepdims=True) + EPS)}

    return Case("holdout7_l2norm", name, "holdout7", l2norm_kernel, {"rows": rows, "D": d}, dtype,
                [{"D": d, **c} for c in L2NORM_CONFIGS], inputs, ("out",), lambda x, cfg: (x["x"], x["out"], rows, EPS),
                lambda cfg: (math.ceil(rows / cfg["BLOCK_R"]),), reference, tolerance=1e-2,
                min_bytes=2.0 * _itemsize(dtype) * rows * d)


def holdout7_cases() -> list[Case]:
    return [
        w8a16_case("holdout7_w8a16_bf16_m16_n4096_k4096", 16, 4096, 4096, "bf16"),
        w8a16_case("holdout7_w8a16_fp16_512x11008x2048", 512, 11008, 2048, "fp16"),
        delta_rule_case("holdout7_delta_rule_bf16_h512_d128", 512, 128, 128, "bf16"),
        delta_rule_case("holdout7_delta_rule_fp16_h4096_d128", 4096, 128, 128, "fp16"),
        router_case("holdout7_router_bf16_t16384_e128", 16384, 128, "bf16"),
        router_case("holdout7_router_fp32_t4096_e60", 4096, 60, "fp32"),
        softcap_case("holdout7_softcap_bf16_64M", 64 * 1024 * 1024, "bf16"),
        softcap_case("holdout7_softcap_fp32_50M", 50_000_003, "fp32"),
        l2norm_case("holdout7_l2norm_bf16_t8192_h16_d128", 8192 * 16, 128, "bf16"),
        l2norm_case("holdout7_l2norm_fp32_t4096_h32_d128", 4096 * 32, 128, "fp32"),
    ]
