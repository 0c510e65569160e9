"""The tenth held-out set (split "holdout10"): ordinary Triton kernels of kinds no other set has, at shapes no other
case uses, written for a fresh measurement and scored once with the model frozen.

A batched 3-D permute, an atomic histogram, an int8 tensor-core matmul with a scaled epilogue, a fused bias + GELU +
residual over 2-D tiles, and an embedding backward's atomic scatter-add. Kernels and cases live together here, one
module for the set.
"""

from __future__ import annotations

import math

import numpy as np
from sweep_cases import Case, _f32, _grid_configs, _itemsize, _np_dtype, _rand
from sweep_kernels import jit, tl


@jit
def permute_bsh_kernel(x_ptr, out_ptr, S, H, BLOCK_S: tl.constexpr, BLOCK_H: tl.constexpr):
    """out[b, h, s] = x[b, s, h] for contiguous x [B, S, H] and out [B, H, S]: one program per BLOCK_S x BLOCK_H
    tile of one batch on a 3-D grid (S tiles, H tiles, batch)."""
    offs_s = tl.program_id(0) * BLOCK_S + tl.arange(0, BLOCK_S)
    offs_h = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    batch = tl.program_id(2).to(tl.int64) * S * H
    mask = (offs_s[:, None] < S) & (offs_h[None, :] < H)
    x = tl.load(x_ptr + batch + offs_s[:, None] * H + offs_h[None, :], mask=mask)
    tl.store(out_ptr + batch + offs_h[None, :] * S + offs_s[:, None], x, mask=mask)


@jit
def histogram_atomic_kernel(x_ptr, hist_ptr, n, BLOCK: tl.constexpr):
    """bincount of int32 values in [0, n_bins) into fp32 counts: each program reads BLOCK values and adds one to
    each's bin with an atomic (no per-program privatisation, the way it is first written)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.atomic_add(hist_ptr + v, tl.full([BLOCK], 1.0, tl.float32), mask=mask)


@jit
def int8_matmul_kernel(a_ptr, b_ptr, scale_a_ptr, scale_b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr,
                       BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """W8A8 linear layer: C = (A @ B) * scale_a[m] * scale_b[n] for int8 A [M, K] and B [K, N], the dot accumulated
    exactly in int32 and dequantised in fp32 before C's store in its 16-bit type; grouped program order."""
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * K + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * N + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.int32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k), other=0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k) & (offs_n[None, :] < N), other=0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K
        b_ptrs += BLOCK_K * N
    scale_a = tl.load(scale_a_ptr + offs_m, mask=offs_m < M, other=0.0)
    scale_b = tl.load(scale_b_ptr + offs_n, mask=offs_n < N, other=0.0)
    c = acc.to(tl.float32) * scale_a[:, None] * scale_b[None, :]
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], c.to(c_ptr.dtype.element_ty), mask=mask)


@jit
def bias_gelu_residual_kernel(x_ptr, bias_ptr, res_ptr, out_ptr, M, N, BLOCK_M: tl.constexpr,
                              BLOCK_N: tl.constexpr):
    """out = gelu_tanh(x + bias) + residual for x, residual, out [M, N] and a bias per column, one program per
    BLOCK_M x BLOCK_N tile on a 2-D grid, the math in fp32."""
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    offs = offs_m[:, None].to(tl.int64) * N + offs_n[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    bias = tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)
    r = tl.load(res_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    h = x + bias[None, :]
    u = 0.7978845608028654 * (h + 0.044715 * h * h * h)
    t = 1.0 - 2.0 / (tl.exp(2.0 * u) + 1.0)  # tanh(u), exact at both ends
    tl.store(out_ptr + offs, (0.5 * h * (1.0 + t) + r).to(out_ptr.dtype.element_ty), mask=mask)


@jit
def embedding_bwd_kernel(ids_ptr, grad_ptr, wgrad_ptr, n_tokens, dim, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    """Embedding backward: wgrad[ids[t], :] += grad[t, :] for grad [tokens, dim] into an fp32 table [vocab, dim]
    with atomics (repeated ids collide), one program per BLOCK_T tokens x BLOCK_D columns."""
    tokens = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    t_mask = tokens < n_tokens
    mask = t_mask[:, None] & (cols[None, :] < dim)
    ids = tl.load(ids_ptr + tokens, mask=t_mask, other=0).to(tl.int64)
    g = tl.load(grad_ptr + tokens[:, None].to(tl.int64) * dim + cols[None, :], mask=mask, other=0.0)
    tl.atomic_add(wgrad_ptr + ids[:, None] * dim + cols[None, :], g.to(tl.float32), mask=mask)


# --- cases

PERMUTE_BSH_CONFIGS = _grid_configs({"BLOCK_S": [16, 32, 64, 128], "BLOCK_H": [16, 32, 64, 128],
                                     "num_warps": [1, 2, 4, 8]}, limit=16, seed=101,
                                    keep=lambda c: 32 * c["num_warps"] <= c["BLOCK_S"] * c["BLOCK_H"]
                                    <= 128 * 32 * c["num_warps"])


def permute_bsh_case(name, batch, seq, hidden, dtype):
    def inputs(rng):
        return {"x": _rand(rng, (batch, seq, hidden), dtype), "out": np.empty((batch, hidden, seq), _np_dtype(dtype))}

    def reference(x):
        return {"out": _f32(x["x"]).transpose(0, 2, 1)}

    size = _itemsize(dtype)
    return Case("holdout10_permute_bsh", name, "holdout10", permute_bsh_kernel, {"B": batch, "S": seq, "H": hidden},
                dtype, PERMUTE_BSH_CONFIGS, inputs, ("out",), lambda x, cfg: (x["x"], x["out"], seq, hidden),
                lambda cfg: (math.ceil(seq / cfg["BLOCK_S"]), math.ceil(hidden / cfg["BLOCK_H"]), batch), reference,
                tolerance=1e-6, min_bytes=2.0 * size * batch * seq * hidden)


HISTOGRAM_CONFIGS = _grid_configs({"BLOCK": [128, 256, 512, 1024, 2048, 4096, 8192],
                                   "num_warps": [1, 2, 4, 8]}, limit=16, seed=102,
                                  keep=lambda c: 32 * c["num_warps"] <= c["BLOCK"] <= 256 * 32 * c["num_warps"])


def histogram_case(name, n, bins):
    """Counts in fp32 (exact below 2^24 a bin), so the check's zeroing (`zero_outputs`) applies to them."""
    def inputs(rng):
        return {"x": rng.integers(0, bins, n).astype(np.int32), "hist": np.zeros(bins, np.float32)}

    def reference(x):
        return {"hist": np.bincount(x["x"], minlength=bins).astype(np.float64)}

    return Case("holdout10_histogram", name, "holdout10", histogram_atomic_kernel, {"n": n, "bins": bins}, "int32",
                HISTOGRAM_CONFIGS, inputs, ("hist",), lambda x, cfg: (x["x"], x["hist"], n),
                lambda cfg: (math.ceil(n / cfg["BLOCK"]),), reference, tolerance=1e-6,
                min_bytes=4.0 * n + 8.0 * bins, extra={"zero_outputs": True})


INT8_MATMUL_CONFIGS = _grid_configs(
    {"BLOCK_M": [32, 64, 128, 256], "BLOCK_N": [32, 64, 128, 256], "BLOCK_K": [32, 64, 128, 256], "GROUP_M": [1, 8],
     "num_warps": [4, 8], "num_stages": [2, 3, 4, 5]}, limit=24, seed=103,
    keep=lambda c: (c["BLOCK_M"] * c["BLOCK_N"] <= 128 * 32 * c["num_warps"]  # at most 128 int32 accumulators a thread
                    and c["num_stages"] * c["BLOCK_K"] * (c["BLOCK_M"] + c["BLOCK_N"]) <= 227 * 1024))


def int8_matmul_case(name, m, n, k, out_dtype):
    """int8 A and B, fp32 scales per row of A and per column of B, C in out_dtype; the case's dtype is "int8"."""
    def inputs(rng):
        return {"a": rng.integers(-127, 128, (m, k), dtype=np.int8),
                "b": rng.integers(-127, 128, (k, n), dtype=np.int8),
                "scale_a": rng.random(m, dtype=np.float32) * 0.01 + 0.001,
                "scale_b": rng.random(n, dtype=np.float32) * 0.01 + 0.001, "c": np.empty((m, n), _np_dtype(out_dtype))}

    def reference(x):
        acc = x["a"].astype(np.float64) @ x["b"].astype(np.float64)  # exact: |sums| < 2^53
        return {"c": acc * x["scale_a"].astype(np.float64)[:, None] * x["scale_b"].astype(np.float64)[None, :]}

    return Case("holdout10_int8_matmul", name, "holdout10", int8_matmul_kernel, {"M": m, "N": n, "K": k}, "int8",
                INT8_MATMUL_CONFIGS, inputs, ("c",),
                lambda x, cfg: (x["a"], x["b"], x["scale_a"], x["scale_b"], x["c"], m, n, k),
                lambda cfg: (math.ceil(m / cfg["BLOCK_M"]) * math.ceil(n / cfg["BLOCK_N"]),), reference,
                tolerance=1e-2, flops=2.0 * m * n * k,
                min_bytes=1.0 * (m * k + k * n) + 4.0 * (m + n) + _itemsize(out_dtype) * m * n)


BIAS_GELU_RESIDUAL_CONFIGS = _grid_configs({"BLOCK_M": [1, 4, 8, 16, 32, 64], "BLOCK_N": [32, 64, 128, 256, 512],
                                            "num_warps": [1, 2, 4, 8]}, limit=16, seed=104,
                                           keep=lambda c: 32 * c["num_warps"] <= c["BLOCK_M"] * c["BLOCK_N"]
                                           <= 128 * 32 * c["num_warps"])


def bias_gelu_residual_case(name, m, n, dtype):
    def inputs(rng):
        return {"x": _rand(rng, (m, n), dtype, 2.0), "bias": _rand(rng, (n,), dtype), "res": _rand(rng, (m, n), dtype),
                "out": np.empty((m, n), _np_dtype(dtype))}

    def reference(x):
        h = _f32(x["x"]).astype(np.float64) + _f32(x["bias"])
        return {"out": 0.5 * h * (1 + np.tanh(math.sqrt(2 / math.pi) * (h + 0.044715 * h ** 3))) + _f32(x["res"])}

    size = _itemsize(dtype)
    return Case("holdout10_bias_gelu_residual", name, "holdout10", bias_gelu_residual_kernel, {"M": m, "N": n}, dtype,
                BIAS_GELU_RESIDUAL_CONFIGS, inputs, ("out",),
                lambda x, cfg: (x["x"], x["bias"], x["res"], x["out"], m, n),
                lambda cfg: (math.ceil(m / cfg["BLOCK_M"]), math.ceil(n / cfg["BLOCK_N"])), reference,
                tolerance=1e-5 if dtype == "fp32" else 1e-2, min_bytes=size * (3.0 * m * n + n))


EMBEDDING_BWD_CONFIGS = _grid_configs({"BLOCK_T": [1, 4, 16, 32, 64], "BLOCK_D": [64, 128, 256, 512, 1024],
                                       "num_warps": [1, 2, 4, 8]}, limit=16, seed=105,
                                      keep=lambda c: 32 * c["num_warps"] <= c["BLOCK_T"] * c["BLOCK_D"]
                                      <= 128 * 32 * c["num_warps"])


def embedding_bwd_case(name, tokens, dim, vocab, dtype):
    """The fp32 table is accumulated into: the check zeroes it before the launch (`zero_outputs`)."""
    def inputs(rng):
        return {"ids": rng.integers(0, vocab, tokens).astype(np.int32), "grad": _rand(rng, (tokens, dim), dtype),
                "wgrad": np.zeros((vocab, dim), np.float32)}

    def reference(x):
        wgrad = np.zeros((vocab, dim))
        np.add.at(wgrad, x["ids"], _f32(x["grad"]))
        return {"wgrad": wgrad}

    rows_hit = vocab * (1 - (1 - 1 / vocab) ** tokens)  # expected distinct ids: each row read and written once
    size = _itemsize(dtype)
    return Case("holdout10_embedding_bwd", name, "holdout10", embedding_bwd_kernel,
                {"T": tokens, "D": dim, "V": vocab}, dtype, EMBEDDING_BWD_CONFIGS, inputs, ("wgrad",),
                lambda x, cfg: (x["ids"], x["grad"], x["wgrad"], tokens, dim),
                lambda cfg: (math.ceil(tokens / cfg["BLOCK_T"]), math.ceil(dim / cfg["BLOCK_D"])), reference,
                tolerance=1e-5, min_bytes=size * tokens * dim + 4.0 * tokens + 8.0 * rows_hit * dim,
                extra={"zero_outputs": True})


def holdout10_cases() -> list[Case]:
    return [
        permute_bsh_case("holdout10_permute_bsh_fp16_b8_s4096_h1000", 8, 4096, 1000, "fp16"),
        permute_bsh_case("holdout10_permute_bsh_fp32_b12_s2047_h1536", 12, 2047, 1536, "fp32"),
        histogram_case("holdout10_histogram_16777216_b4096", 1 << 24, 4096),
        histogram_case("holdout10_histogram_10000003_b1000", 10_000_003, 1000),
        int8_matmul_case("holdout10_int8_matmul_bf16out_4096x4096x4096", 4096, 4096, 4096, "bf16"),
        int8_matmul_case("holdout10_int8_matmul_fp16out_3000x5000x2000", 3000, 5000, 2000, "fp16"),
        bias_gelu_residual_case("holdout10_bias_gelu_residual_bf16_16384x4096", 16384, 4096, "bf16"),
        bias_gelu_residual_case("holdout10_bias_gelu_residual_fp32_10000x3000", 10000, 3000, "fp32"),
        embedding_bwd_case("holdout10_embedding_bwd_fp32_t16384_d1024_v50000", 16384, 1024, 50000, "fp32"),
        embedding_bwd_case("holdout10_embedding_bwd_bf16_t10000_d3000_v8000", 10000, 3000, 8000, "bf16"),
    ]
