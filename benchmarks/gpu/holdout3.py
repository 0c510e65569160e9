"""The third held-out set (split "holdout3"): kernels written for the last measurement of the session that refitted
the model on the December data, scored once with the model frozen.

Triton tutorial 04's seeded dropout (Philox in the kernel), tutorial 05's looped LayerNorm forward, a matmul + bias +
leaky ReLU in tl.swizzle2d order, an embedding gather, and looped column maxima. Kernels and cases live together
here, one module for the set.
"""

from __future__ import annotations

import math

import numpy as np
from sweep_cases import MATMUL_CONFIGS, Case, _f32, _grid_configs, _itemsize, _np_dtype, _rand
from sweep_kernels import jit, tl


@jit
def dropout_kernel(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    """Triton tutorial 04's seeded dropout: the keep mask is drawn in the kernel (Philox), never stored."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    keep = tl.rand(seed, offs) > p
    tl.store(out_ptr + offs, tl.where(keep, x / (1 - p), 0.0).to(out_ptr.dtype.element_ty), mask=mask)


@jit
def layernorm_looped_kernel(x_ptr, y_ptr, w_ptr, b_ptr, n_cols, eps, BLOCK: tl.constexpr):
    """Triton tutorial 05's forward: rows wider than a block, read three times (mean, variance, normalise)."""
    row = tl.program_id(0).to(tl.int64)
    x_ptr += row * n_cols
    y_ptr += row * n_cols
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / n_cols
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        x = tl.where(cols < n_cols, x - mean, 0.0)
        acc += x * x
    rstd = 1 / tl.sqrt(tl.sum(acc, axis=0) / n_cols + eps)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        x = tl.load(x_ptr + cols, mask=mask, other=0.0).to(tl.float32)
        tl.store(y_ptr + cols, ((x - mean) * rstd * w + b).to(y_ptr.dtype.element_ty), mask=mask)


@jit
def linear_act_kernel(a_ptr, w_ptr, bias_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """C = leaky_relu(A @ B + bias) with B [K, N] row-major; programs ordered by tl.swizzle2d."""
    pid_m, pid_n = tl.swizzle2d(tl.program_id(0) // tl.cdiv(N, BLOCK_N), tl.program_id(0) % tl.cdiv(N, BLOCK_N),
                                tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + offs_m[:, None] * K + (k + offs_k)[None, :],
                    mask=(offs_m[:, None] < M) & ((k + offs_k)[None, :] < K), other=0.0)
        b = tl.load(w_ptr + (k + offs_k)[:, None] * N + offs_n[None, :],
                    mask=((k + offs_k)[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    acc += tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0).to(tl.float32)[None, :]
    acc = tl.where(acc >= 0, acc, 0.01 * acc)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(c_ptr.dtype.element_ty), mask=mask)


@jit
def embedding_kernel(ids_ptr, table_ptr, out_ptr, n_tokens, dim, BLOCK_T: tl.constexpr, BLOCK_D: tl.constexpr):
    """out[t] = table[ids[t]]: rows gathered by token id (an embedding lookup)."""
    tokens = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    d = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    ids = tl.load(ids_ptr + tokens, mask=tokens < n_tokens, other=0).to(tl.int64)
    mask = (tokens[:, None] < n_tokens) & (d[None, :] < dim)
    rows = tl.load(table_ptr + ids[:, None] * dim + d[None, :], mask=mask, other=0.0)
    tl.store(out_ptr + tokens[:, None].to(tl.int64) * dim + d[None, :], rows, mask=mask)


@jit
def colmax_kernel(x_ptr, out_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Column maxima: each program owns BLOCK_N columns and walks all M rows, BLOCK_M at a time."""
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.full((BLOCK_M, BLOCK_N), float("-inf"), tl.float32)
    for start in range(0, M, BLOCK_M):
        rows = start + tl.arange(0, BLOCK_M)
        x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=(rows[:, None] < M) & (cols[None, :] < N),
                    other=float("-inf"))
        acc = tl.maximum(acc, x.to(tl.float32))
    tl.store(out_ptr + cols, tl.max(acc, axis=0), mask=cols < N)


# --- cases

_PHILOX = (0xD2511F53, 0xCD9E8D57, 0x9E3779B9, 0xBB67AE85)  # round multipliers A, B and key increments (Triton's)


def _philox_uniform(seed: int, offsets: np.ndarray) -> np.ndarray:
    """tl.rand(seed, offsets): the first word of Philox-4x32-10 on counter (offset, 0, 0, 0), as a float in [0, 1)."""
    round_a, round_b, key_a, key_b = (np.uint64(v) for v in _PHILOX)
    low = np.uint64(0xFFFFFFFF)
    c0, c1 = offsets.astype(np.uint64), np.zeros(offsets.shape, np.uint64)
    c2, c3 = np.zeros_like(c0), np.zeros_like(c0)
    k0, k1 = np.uint64(seed & 0xFFFFFFFF), np.uint64(seed >> 32)
    for _ in range(10):
        a0, a2 = c0, c2
        c0 = ((round_b * a2) >> np.uint64(32)) ^ c1 ^ k0
        c2 = ((round_a * a0) >> np.uint64(32)) ^ c3 ^ k1
        c1, c3 = (round_b * a2) & low, (round_a * a0) & low
        k0, k1 = (k0 + key_a) & low, (k1 + key_b) & low
    signed = c0.astype(np.uint32).view(np.int32).astype(np.int64)
    return np.where(signed < 0, -signed - 1, signed).astype(np.float32) * np.float32(4.6566127342e-10)


BLOCK_WARPS = {"BLOCK": [256, 512, 1024, 2048, 4096, 8192], "num_warps": [1, 2, 4, 8, 16]}


def _whole_warps(cfg: dict) -> bool:
    return cfg["BLOCK"] >= 32 * cfg["num_warps"]


ELEMENTWISE3_CONFIGS = _grid_configs(BLOCK_WARPS, limit=16, seed=21, keep=_whole_warps)


def dropout_case(name, n, dtype, p=0.3, seed=1234):
    def inputs(rng):
        return {"x": _rand(rng, (n,), dtype), "out": np.empty(n, _np_dtype(dtype))}

    def reference(x):
        keep = _philox_uniform(seed, np.arange(n)) > np.float32(p)
        return {"out": np.where(keep, _f32(x["x"]) / np.float32(1 - p), 0.0)}

    size = _itemsize(dtype)
    return Case("holdout3_dropout", name, "holdout3", dropout_kernel, {"n": n}, dtype, ELEMENTWISE3_CONFIGS, inputs,
                ("out",), lambda x, cfg: (x["x"], x["out"], n, p, seed), lambda cfg: (math.ceil(n / cfg["BLOCK"]),),
                reference, tolerance=1e-2, min_bytes=2.0 * size * n)


LOOPED_ROW_CONFIGS = _grid_configs(BLOCK_WARPS, limit=16, seed=22, keep=_whole_warps)


def layernorm_looped_case(name, rows, cols, dtype):
    def inputs(rng):
        return {"x": _rand(rng, (rows, cols), dtype), "w": _rand(rng, (cols,), dtype), "b": _rand(rng, (cols,), dtype),
                "y": np.empty((rows, cols), _np_dtype(dtype))}

    def reference(x):
        v = _f32(x["x"])
        mean = v.mean(axis=1, keepdims=True)
        rstd = 1 / np.sqrt(((v - mean) ** 2).mean(axis=1, keepdims=True) + 1e-5)
        return {"y": (v - mean) * rstd * _f32(x["w"]) + _f32(x["b"])}

    size = _itemsize(dtype)
    return Case("holdout3_layernorm_looped", name, "holdout3", layernorm_looped_kernel, {"rows": rows, "cols": cols},
                dtype, LOOPED_ROW_CONFIGS, inputs, ("y",),
                lambda x, cfg: (x["x"], x["y"], x["w"], x["b"], cols, 1e-5), lambda cfg: (rows,), reference,
                tolerance=3e-2, min_bytes=2.0 * size * rows * cols)


def linear_act_case(name, m, n, k, dtype):
    def inputs(rng):
        return {"a": _rand(rng, (m, k), dtype), "w": _rand(rng, (k, n), dtype, 0.05), "bias": _rand(rng, (n,), dtype),
                "c": np.empty((m, n), _np_dtype(dtype))}

    def reference(x):
        h = _f32(x["a"]) @ _f32(x["w"]) + _f32(x["bias"])
        return {"c": np.where(h >= 0, h, 0.01 * h)}

    size = _itemsize(dtype)
    return Case("holdout3_linear_act", name, "holdout3", linear_act_kernel, {"M": m, "N": n, "K": k}, dtype,
                MATMUL_CONFIGS, inputs, ("c",), lambda x, cfg: (x["a"], x["w"], x["bias"], x["c"], m, n, k),
                lambda cfg: (math.ceil(m / cfg["BLOCK_M"]) * math.ceil(n / cfg["BLOCK_N"]),), reference,
                tolerance=2e-2, flops=2.0 * m * n * k, min_bytes=size * (m * k + k * n + m * n))


EMBEDDING_CONFIGS = _grid_configs({"BLOCK_T": [1, 4, 16, 64], "BLOCK_D": [128, 512, 2048], "num_warps": [1, 2, 4, 8]},
                                  limit=16, seed=23, keep=lambda c: c["BLOCK_T"] * c["BLOCK_D"] <= 32768
                                  and c["BLOCK_T"] * c["BLOCK_D"] >= 32 * c["num_warps"])


def embedding_case(name, vocab, tokens, dim, dtype):
    def inputs(rng):
        return {"ids": rng.integers(0, vocab, tokens).astype(np.int32), "table": _rand(rng, (vocab, dim), dtype),
                "out": np.empty((tokens, dim), _np_dtype(dtype))}

    size = _itemsize(dtype)
    return Case("holdout3_embedding", name, "holdout3", embedding_kernel, {"vocab": vocab, "T": tokens, "D": dim},
                dtype, EMBEDDING_CONFIGS, inputs, ("out",),
                lambda x, cfg: (x["ids"], x["table"], x["out"], tokens, dim),
                lambda cfg: (math.ceil(tokens / cfg["BLOCK_T"]), math.ceil(dim / cfg["BLOCK_D"])),
                lambda x: {"out": _f32(x["table"])[x["ids"]]}, tolerance=1e-6, min_bytes=2.0 * size * tokens * dim)


COLMAX_CONFIGS = _grid_configs({"BLOCK_M": [8, 32, 128], "BLOCK_N": [32, 64, 128, 256, 512], "num_warps": [1, 4, 8]},
                               limit=16, seed=24, keep=lambda c: c["BLOCK_M"] * c["BLOCK_N"] <= 16384)


def colmax_case(name, m, n, dtype):
    def inputs(rng):
        return {"x": _rand(rng, (m, n), dtype), "out": np.empty(n, np.float32)}

    size = _itemsize(dtype)
    return Case("holdout3_colmax", name, "holdout3", colmax_kernel, {"M": m, "N": n}, dtype, COLMAX_CONFIGS, inputs,
                ("out",), lambda x, cfg: (x["x"], x["out"], m, n), lambda cfg: (math.ceil(n / cfg["BLOCK_N"]),),
                lambda x: {"out": _f32(x["x"]).max(axis=0)}, tolerance=1e-6, min_bytes=size * m * n)


def holdout3_cases() -> list[Case]:
    return [
        dropout_case("holdout3_dropout_fp32_16M", 16_000_001, "fp32"),
        dropout_case("holdout3_dropout_bf16_50M", 50_000_000, "bf16"),
        layernorm_looped_case("holdout3_layernorm_looped_fp16_4096x16384", 4096, 16384, "fp16"),
        layernorm_looped_case("holdout3_layernorm_looped_bf16_16384x3000", 16384, 3000, "bf16"),
        linear_act_case("holdout3_linear_act_fp16_2048x8192x512", 2048, 8192, 512, "fp16"),
        linear_act_case("holdout3_linear_act_bf16_6000x1000x2000", 6000, 1000, 2000, "bf16"),
        embedding_case("holdout3_embedding_bf16_v32000_t16384_d4096", 32000, 16384, 4096, "bf16"),
        embedding_case("holdout3_embedding_fp32_v50257_t8192_d1024", 50257, 8192, 1024, "fp32"),
        colmax_case("holdout3_colmax_fp32_8192x8192", 8192, 8192, "fp32"),
        colmax_case("holdout3_colmax_fp16_32768x1536", 32768, 1536, "fp16"),
    ]
