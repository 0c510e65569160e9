"""The eleventh held-out set (split "holdout11"): ordinary Triton kernels written after the atomics were modeled from
their own microbenchmark, measured once on the H200 and scored once with the model frozen, never fitted on.

An index_add_ of rows by atomics (fp32 sources 16-byte aligned, bf16 sources of 1,000 columns), a bincount into
int32 counters (Zipf-distributed token ids into 65,536 bins, uniform values into 300), a row log-softmax of 2-D
tiles, a linear layer's C = A @ B^T with B stored [N, K], and causal grouped-query attention over [B, S, H, D]
tensors. Kernels and cases live together here, one module for the set.
"""

from __future__ import annotations

import math

import numpy as np
from holdout4 import _next_pow2
from sweep_cases import Case, _f32, _grid_configs, _itemsize, _np_dtype, _rand
from sweep_kernels import jit, tl


@jit
def index_add_kernel(index_ptr, src_ptr, out_ptr, n_rows, dim, alpha, BLOCK_R: tl.constexpr,
                     BLOCK_D: tl.constexpr):
    """out[index[r], :] += alpha * src[r, :] into an fp32 out, one program per BLOCK_R rows x BLOCK_D columns."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    row_ok = rows < n_rows
    mask = row_ok[:, None] & (cols[None, :] < dim)
    target = tl.load(index_ptr + rows, mask=row_ok, other=0).to(tl.int64)
    values = tl.load(src_ptr + rows[:, None].to(tl.int64) * dim + cols[None, :], mask=mask, other=0.0)
    tl.atomic_add(out_ptr + target[:, None] * dim + cols[None, :], values.to(tl.float32) * alpha, mask=mask)


@jit
def bincount_kernel(x_ptr, counts_ptr, n, BLOCK: tl.constexpr):
    """counts[x[i]] += 1 in int32, BLOCK values a program."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    value = tl.load(x_ptr + offs, mask=mask, other=0)
    tl.atomic_add(counts_ptr + value, 1, mask=mask)


@jit
def log_softmax_kernel(x_ptr, y_ptr, n_rows, n_cols, ROWS: tl.constexpr, BLOCK: tl.constexpr):
    """y = x - logsumexp(x) along rows, ROWS rows a program, each row one BLOCK-wide tile."""
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)
    cols = tl.arange(0, BLOCK)
    mask = (rows < n_rows)[:, None] & (cols < n_cols)[None, :]
    offs = rows[:, None].to(tl.int64) * n_cols + cols[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=-float("inf")).to(tl.float32)
    shifted = x - tl.max(x, axis=1)[:, None]
    total = tl.sum(tl.where(mask, tl.exp(shifted), 0.0), axis=1)
    tl.store(y_ptr + offs, (shifted - tl.log(total)[:, None]).to(y_ptr.dtype.element_ty), mask=mask)


@jit
def matmul_abt_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    """C = A @ B^T for A [M, K] and a weight B [N, K], both row-major, in grouped program order; masked edges."""
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    in_group = GROUP_M * tiles_n
    first_m = (pid // in_group) * GROUP_M
    rows_in_group = tl.minimum(tiles_m - first_m, GROUP_M)
    pid_m = first_m + (pid % in_group) % rows_in_group
    pid_n = (pid % in_group) // rows_in_group
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_tile = a_ptr + offs_m[:, None] * K + offs_k[None, :]
    b_tile = b_ptr + offs_n[None, :] * K + offs_k[:, None]  # B^T's [BLOCK_K, BLOCK_N] tile
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_ok = offs_k < K - k * BLOCK_K
        a = tl.load(a_tile, mask=(offs_m[:, None] < M) & k_ok[None, :], other=0.0)
        b = tl.load(b_tile, mask=k_ok[:, None] & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        a_tile += BLOCK_K
        b_tile += BLOCK_K
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(c_ptr.dtype.element_ty), mask=mask)


@jit
def gqa_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq, q_heads, kv_heads, sm_scale, HEAD_DIM: tl.constexpr,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Causal attention forward with grouped KV heads over q, o [B, S, q_heads, D] and k, v [B, S, kv_heads, D]:
    one program per (BLOCK_M queries, batch x query head); an online softmax in base 2."""
    start_m = tl.program_id(0)
    batch = tl.program_id(1) // q_heads
    head = tl.program_id(1) % q_heads
    kv_head = head // (q_heads // kv_heads)
    q_row = q_heads * HEAD_DIM
    kv_row = kv_heads * HEAD_DIM
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q_base = batch.to(tl.int64) * seq * q_row + head * HEAD_DIM
    kv_base = batch.to(tl.int64) * seq * kv_row + kv_head * HEAD_DIM
    q = tl.load(q_ptr + q_base + offs_m[:, None] * q_row + offs_d[None, :], mask=offs_m[:, None] < seq, other=0.0)
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    scale = sm_scale * 1.4426950408889634
    for start_n in range(0, tl.minimum((start_m + 1) * BLOCK_M, seq), BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kv_ok = offs_n[:, None] < seq
        k = tl.load(k_ptr + kv_base + offs_n[:, None] * kv_row + offs_d[None, :], mask=kv_ok, other=0.0)
        scores = tl.dot(q, tl.trans(k)) * scale
        scores = tl.where((offs_m[:, None] >= offs_n[None, :]) & (offs_n[None, :] < seq), scores, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(scores, axis=1))
        p = tl.math.exp2(scores - m_new[:, None])
        correction = tl.math.exp2(m_i - m_new)
        l_i = l_i * correction + tl.sum(p, axis=1)
        v = tl.load(v_ptr + kv_base + offs_n[:, None] * kv_row + offs_d[None, :], mask=kv_ok, other=0.0)
        acc = acc * correction[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + q_base + offs_m[:, None] * q_row + offs_d[None, :], out.to(o_ptr.dtype.element_ty),
             mask=offs_m[:, None] < seq)


# --- cases

def index_add_case(name, rows, dim, targets, dtype):
    """out starts at zero (the check zeroes it, `zero_outputs`); the indices repeat, so rows collide."""
    alpha = 0.5
    widths = [w for w in (16, 32, 64, 128, 256, 512, 1024) if w <= _next_pow2(dim)]
    configs = _grid_configs({"BLOCK_R": [1, 2, 8, 32, 64, 128], "BLOCK_D": widths, "num_warps": [1, 2, 4, 8]},
                            limit=16, seed=111, keep=lambda c: 32 * c["num_warps"] <= c["BLOCK_R"] * c["BLOCK_D"]
                            <= 128 * 32 * c["num_warps"])

    def inputs(rng):
        return {"index": rng.integers(0, targets, rows).astype(np.int32), "src": _rand(rng, (rows, dim), dtype),
                "out": np.zeros((targets, dim), np.float32)}

    def reference(x):
        out = np.zeros((targets, dim))
        np.add.at(out, x["index"], alpha * _f32(x["src"]).astype(np.float64))
        return {"out": out}

    hit = targets * (1 - (1 - 1 / targets) ** rows)  # expected distinct targets: each read and written once
    return Case("holdout11_index_add", name, "holdout11", index_add_kernel, {"rows": rows, "dim": dim, "T": targets},
                dtype, configs, inputs, ("out",),
                lambda x, cfg: (x["index"], x["src"], x["out"], rows, dim, alpha),
                lambda cfg: (math.ceil(rows / cfg["BLOCK_R"]), math.ceil(dim / cfg["BLOCK_D"])), reference,
                tolerance=1e-4, min_bytes=_itemsize(dtype) * rows * dim + 4.0 * rows + 8.0 * hit * dim,
                extra={"zero_outputs": True})


BINCOUNT_CONFIGS = _grid_configs({"BLOCK": [256, 512, 1024, 2048, 4096, 8192], "num_warps": [1, 2, 4, 8, 16]},
                                 limit=16, seed=112,
                                 keep=lambda c: 32 * c["num_warps"] <= c["BLOCK"] <= 128 * 32 * c["num_warps"])


def bincount_case(name, n, bins, zipf):
    """Zipf-distributed values (token ids: a few are very common) or uniform ones; int32 counts, zeroed first."""
    def inputs(rng):
        values = (rng.zipf(1.1, n) - 1) % bins if zipf else rng.integers(0, bins, n)
        return {"x": values.astype(np.int32), "counts": np.zeros(bins, np.int32)}

    def reference(x):
        return {"counts": np.bincount(x["x"], minlength=bins).astype(np.float64)}

    return Case("holdout11_bincount", name, "holdout11", bincount_kernel, {"n": n, "bins": bins}, "int32",
                BINCOUNT_CONFIGS, inputs, ("counts",), lambda x, cfg: (x["x"], x["counts"], n),
                lambda cfg: (math.ceil(n / cfg["BLOCK"]),), reference, tolerance=0.0, min_bytes=4.0 * n + 8.0 * bins,
                extra={"zero_outputs": True})


def log_softmax_case(name, rows, cols, dtype):
    block = _next_pow2(cols)
    configs = _grid_configs({"ROWS": [1, 2, 4, 8, 16], "num_warps": [1, 2, 4, 8, 16, 32]}, limit=16, seed=113,
                            keep=lambda c: 32 * c["num_warps"] <= c["ROWS"] * block
                            <= min(65536, 256 * 32 * c["num_warps"]))

    def inputs(rng):
        return {"x": _rand(rng, (rows, cols), dtype, 3.0), "y": np.empty((rows, cols), _np_dtype(dtype))}

    def reference(x):
        v = _f32(x["x"]).astype(np.float64)
        shifted = v - v.max(axis=1, keepdims=True)
        return {"y": shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))}

    size = _itemsize(dtype)
    return Case("holdout11_log_softmax", name, "holdout11", log_softmax_kernel, {"rows": rows, "cols": cols}, dtype,
                [{"BLOCK": block, **c} for c in configs], inputs, ("y",),
                lambda x, cfg: (x["x"], x["y"], rows, cols), lambda cfg: (math.ceil(rows / cfg["ROWS"]),), reference,
                tolerance=2e-2 if dtype != "fp32" else 1e-5, min_bytes=2.0 * size * rows * cols)


MATMUL_ABT_CONFIGS = _grid_configs(
    {"BLOCK_M": [32, 64, 128, 256], "BLOCK_N": [32, 64, 128, 256], "BLOCK_K": [32, 64, 128], "GROUP_M": [1, 8],
     "num_warps": [2, 4, 8], "num_stages": [2, 3, 4, 5]}, limit=24, seed=114,
    keep=lambda c: (32 * 32 * c["num_warps"] <= c["BLOCK_M"] * c["BLOCK_N"] <= 128 * 32 * c["num_warps"]
                    and c["num_stages"] * c["BLOCK_K"] * (c["BLOCK_M"] + c["BLOCK_N"]) * 2 <= 227 * 1024))


def matmul_abt_case(name, m, n, k, dtype):
    def inputs(rng):
        return {"a": _rand(rng, (m, k), dtype), "b": _rand(rng, (n, k), dtype),
                "c": np.empty((m, n), _np_dtype(dtype))}

    def reference(x):
        return {"c": _f32(x["a"]).astype(np.float64) @ _f32(x["b"]).astype(np.float64).T}

    size = _itemsize(dtype)
    return Case("holdout11_matmul_abt", name, "holdout11", matmul_abt_kernel, {"M": m, "N": n, "K": k}, dtype,
                MATMUL_ABT_CONFIGS, inputs, ("c",), lambda x, cfg: (x["a"], x["b"], x["c"], m, n, k),
                lambda cfg: (math.ceil(m / cfg["BLOCK_M"]) * math.ceil(n / cfg["BLOCK_N"]),), reference,
                tolerance=2e-2, flops=2.0 * m * n * k, min_bytes=size * (m * k + n * k + m * n))


GQA_CONFIGS = _grid_configs({"BLOCK_M": [32, 64, 128], "BLOCK_N": [32, 64, 128], "num_warps": [4, 8],
                             "num_stages": [1, 2, 3]}, limit=20, seed=115)


def gqa_attention_case(name, batch, seq, q_heads, kv_heads, d, dtype):
    def inputs(rng):
        return {"q": _rand(rng, (batch, seq, q_heads, d), dtype), "k": _rand(rng, (batch, seq, kv_heads, d), dtype),
                "v": _rand(rng, (batch, seq, kv_heads, d), dtype),
                "o": np.empty((batch, seq, q_heads, d), _np_dtype(dtype))}

    def reference(x):
        group = q_heads // kv_heads
        q = _f32(x["q"]).transpose(0, 2, 1, 3)
        k = np.repeat(_f32(x["k"]).transpose(0, 2, 1, 3), group, axis=1)
        v = np.repeat(_f32(x["v"]).transpose(0, 2, 1, 3), group, axis=1)
        s = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d)
        s = np.where(np.tril(np.ones((seq, seq), bool)), s, -np.inf)
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        return {"o": ((p / p.sum(axis=-1, keepdims=True)) @ v).transpose(0, 2, 1, 3)}

    size = _itemsize(dtype)
    return Case("holdout11_gqa_attention", name, "holdout11", gqa_attention_kernel,
                {"B": batch, "S": seq, "HQ": q_heads, "HKV": kv_heads, "D": d}, dtype,
                [{"HEAD_DIM": d, **c} for c in GQA_CONFIGS], inputs, ("o",),
                lambda x, cfg: (x["q"], x["k"], x["v"], x["o"], seq, q_heads, kv_heads, 1.0 / math.sqrt(d)),
                lambda cfg: (math.ceil(seq / cfg["BLOCK_M"]), batch * q_heads), reference, tolerance=2e-2,
                flops=2.0 * batch * q_heads * seq * seq * d,
                min_bytes=size * batch * seq * d * (2 * q_heads + 2 * kv_heads))


def holdout11_cases() -> list[Case]:
    return [
        index_add_case("holdout11_index_add_fp32_r262144_d64_t4096", 262144, 64, 4096, "fp32"),
        index_add_case("holdout11_index_add_bf16_r20000_d1000_t30000", 20000, 1000, 30000, "bf16"),
        bincount_case("holdout11_bincount_zipf_16777216_b65536", 1 << 24, 65536, True),
        bincount_case("holdout11_bincount_3000017_b300", 3_000_017, 300, False),
        log_softmax_case("holdout11_log_softmax_fp16_16384x1536", 16384, 1536, "fp16"),
        log_softmax_case("holdout11_log_softmax_bf16_4096x12000", 4096, 12000, "bf16"),
        matmul_abt_case("holdout11_matmul_abt_fp16_2048x5120x1536", 2048, 5120, 1536, "fp16"),
        matmul_abt_case("holdout11_matmul_abt_bf16_256x8192x8192", 256, 8192, 8192, "bf16"),
        gqa_attention_case("holdout11_gqa_attention_fp16_b1_s2048_hq32_hkv8_d128", 1, 2048, 32, 8, 128, "fp16"),
        gqa_attention_case("holdout11_gqa_attention_bf16_b2_s1500_hq16_hkv4_d64", 2, 1500, 16, 4, 64, "bf16"),
    ]
