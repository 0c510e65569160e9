"""The fifth held-out set (split "holdout5"): kernels written for a fresh measurement with the model frozen, steps of
LLM serving the other sets lack, measured once and scored once.

A GeGLU gate, a looped greedy-decode argmax over 32k-152k vocabularies, masked mean pooling, a KV-cache scatter
(vLLM's reshape_and_cache for keys), and the short causal convolution of gated-delta-net layers. Kernels and cases
live together here, one module for the set.
"""

from __future__ import annotations

import math

import numpy as np
from holdout3 import BLOCK_WARPS, _whole_warps
from holdout4 import WIDE_BLOCK_WARPS
from sweep_cases import Case, _f32, _grid_configs, _itemsize, _np_dtype, _rand
from sweep_kernels import jit, tl


@jit
def geglu_kernel(x_ptr, y_ptr, n, hidden, BLOCK: tl.constexpr):
    """y[t, j] = gelu_tanh(x[t, j]) * x[t, hidden + j] for x [T, 2 * hidden]: a gated MLP's GeGLU, one flat BLOCK
    over the T * hidden outputs, the gate and up halves found by index math."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    gate_offs = (offs // hidden) * (2 * hidden) + offs % hidden
    g = tl.load(x_ptr + gate_offs, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(x_ptr + gate_offs + hidden, mask=mask, other=0.0).to(tl.float32)
    inner = 0.7978845608 * (g + 0.044715 * g * g * g)
    gelu = 0.5 * g * (2.0 - 2.0 / (1.0 + tl.exp(2.0 * inner)))  # 1 + tanh(inner), from one exp
    tl.store(y_ptr + offs, (gelu * u).to(y_ptr.dtype.element_ty), mask=mask)


@jit
def argmax_kernel(logits_ptr, out_ptr, vocab, BLOCK: tl.constexpr):
    """Greedy decoding: the index of each row's largest logit, one row per program walking the vocabulary in
    BLOCK-wide chunks with a running best value and index (ties go to the smallest index, as numpy's argmax)."""
    row = tl.program_id(0).to(tl.int64)
    row_ptr = logits_ptr + row * vocab
    best_val = -float("inf")
    best_idx = 0
    for start in range(0, vocab, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(row_ptr + cols, mask=cols < vocab, other=-float("inf")).to(tl.float32)
        chunk_max = tl.max(x, axis=0)
        chunk_idx = start + tl.argmax(x, axis=0)
        better = chunk_max > best_val  # strict: an equal value in a later chunk keeps the earlier index
        best_idx = tl.where(better, chunk_idx, best_idx)
        best_val = tl.where(better, chunk_max, best_val)
    tl.store(out_ptr + row, best_idx.to(tl.int32))


@jit
def mean_pool_kernel(x_ptr, lens_ptr, out_ptr, seq, dim, BLOCK_S: tl.constexpr, BLOCK_D: tl.constexpr):
    """out[b, :] = mean of x[b, :lens[b], :] for x [B, seq, dim]: one program per (sequence, BLOCK_D columns) sums
    BLOCK_S x BLOCK_D tiles up to the sequence's length, the rows past it masked off."""
    b = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    length = tl.load(lens_ptr + b)
    base = x_ptr + b.to(tl.int64) * seq * dim
    acc = tl.zeros((BLOCK_S, BLOCK_D), dtype=tl.float32)
    for start in range(0, length, BLOCK_S):
        rows = start + tl.arange(0, BLOCK_S)
        mask = (rows[:, None] < length) & (cols[None, :] < dim)
        acc += tl.load(base + rows[:, None] * dim + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    mean = tl.sum(acc, axis=0) / length.to(tl.float32)
    tl.store(out_ptr + b * dim + cols, mean, mask=cols < dim)


@jit
def kv_scatter_kernel(key_ptr, slots_ptr, cache_ptr, n_tokens, n_heads, HEAD_DIM: tl.constexpr,
                      BLOCK_T: tl.constexpr):
    """vLLM's reshape_and_cache for keys: the new rows key [T, H, HEAD_DIM] are written into the cache
    [slots, H, HEAD_DIM] at each token's slot; one program per (BLOCK_T tokens, head)."""
    tokens = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    head = tl.program_id(1)
    d = tl.arange(0, HEAD_DIM)
    valid = tokens < n_tokens
    slot = tl.load(slots_ptr + tokens, mask=valid, other=0).to(tl.int64)
    src = (tokens[:, None].to(tl.int64) * n_heads + head) * HEAD_DIM + d[None, :]
    rows = tl.load(key_ptr + src, mask=valid[:, None], other=0.0)
    dst = (slot[:, None] * n_heads + head) * HEAD_DIM + d[None, :]
    tl.store(cache_ptr + dst, rows, mask=valid[:, None])


@jit
def causal_conv1d_kernel(x_ptr, w_ptr, bias_ptr, out_ptr, seq, channels, WIDTH: tl.constexpr, BLOCK_T: tl.constexpr,
                         BLOCK_C: tl.constexpr):
    """The short causal depthwise convolution of gated-delta-net layers on x [B, seq, channels], weight
    [channels, WIDTH], bias [channels]: out[b, t, c] = silu(bias[c] + sum_k w[c, k] * x[b, t - WIDTH + 1 + k, c]),
    zero before the sequence's start; one program per (BLOCK_T steps, BLOCK_C channels, sequence)."""
    t = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    base = tl.program_id(2).to(tl.int64) * seq * channels
    c_mask = c < channels
    bias = tl.load(bias_ptr + c, mask=c_mask, other=0.0).to(tl.float32)
    acc = tl.zeros((BLOCK_T, BLOCK_C), dtype=tl.float32) + bias[None, :]
    for k in tl.static_range(WIDTH):
        src = t - (WIDTH - 1) + k
        mask = (src[:, None] >= 0) & (src[:, None] < seq) & c_mask[None, :]
        x = tl.load(x_ptr + base + src[:, None] * channels + c[None, :], mask=mask, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + c * WIDTH + k, mask=c_mask, other=0.0).to(tl.float32)
        acc += x * w[None, :]
    y = acc / (1.0 + tl.exp(-acc))
    mask = (t[:, None] < seq) & c_mask[None, :]
    tl.store(out_ptr + base + t[:, None] * channels + c[None, :], y.to(out_ptr.dtype.element_ty), mask=mask)


# --- cases

GEGLU_CONFIGS = _grid_configs(BLOCK_WARPS, limit=16, seed=41, keep=_whole_warps)


def geglu_case(name, tokens, hidden, dtype):
    def inputs(rng):
        return {"x": _rand(rng, (tokens, 2 * hidden), dtype), "y": np.empty((tokens, hidden), _np_dtype(dtype))}

    def reference(x):
        v = _f32(x["x"]).astype(np.float64)
        g, u = v[:, :hidden], v[:, hidden:]
        return {"y": 0.5 * g * (1 + np.tanh(0.7978845608 * (g + 0.044715 * g ** 3))) * u}

    size = _itemsize(dtype)
    n = tokens * hidden
    return Case("holdout5_geglu", name, "holdout5", geglu_kernel, {"T": tokens, "H": hidden}, dtype, GEGLU_CONFIGS,
                inputs, ("y",), lambda x, cfg: (x["x"], x["y"], n, hidden), lambda cfg: (math.ceil(n / cfg["BLOCK"]),),
                reference, tolerance=1e-2, min_bytes=3.0 * size * n)


ARGMAX_CONFIGS = _grid_configs(WIDE_BLOCK_WARPS, limit=16, seed=42, keep=_whole_warps)


def unique_max_logits(rng, rows: int, vocab: int, dtype: str) -> np.ndarray:
    """Random logits in `dtype` whose every row has one largest value (its rounding would make ties otherwise), so
    the index of the maximum is unambiguous."""
    logits = _f32(_rand(rng, (rows, vocab), dtype, 2.0))
    logits[np.arange(rows), logits.argmax(axis=1)] += 0.25
    return logits.astype(_np_dtype(dtype))


def argmax_case(name, rows, vocab, dtype):
    def inputs(rng):
        return {"logits": unique_max_logits(rng, rows, vocab, dtype), "out": np.empty(rows, np.int32)}

    def reference(x):
        return {"out": _f32(x["logits"]).argmax(axis=1).astype(np.float64)}  # numpy: the first index of the max

    size = _itemsize(dtype)
    # tolerance 0: any wrong index is at least 1 / vocab off after the check's division by the largest index
    return Case("holdout5_argmax", name, "holdout5", argmax_kernel, {"R": rows, "V": vocab}, dtype, ARGMAX_CONFIGS,
                inputs, ("out",), lambda x, cfg: (x["logits"], x["out"], vocab), lambda cfg: (rows,), reference,
                tolerance=0.0, min_bytes=size * rows * vocab + 4.0 * rows)


MEAN_POOL_CONFIGS = _grid_configs({"BLOCK_S": [8, 16, 32, 64], "BLOCK_D": [64, 128, 256, 512],
                                   "num_warps": [1, 2, 4, 8]}, limit=16, seed=43,
                                  keep=lambda c: 32 * c["num_warps"] <= c["BLOCK_S"] * c["BLOCK_D"] <= 16384)


def mean_pool_case(name, batch, seq, dim, dtype):
    def inputs(rng):
        return {"x": _rand(rng, (batch, seq, dim), dtype),
                "lens": rng.integers(seq // 2, seq + 1, batch).astype(np.int32),
                "out": np.empty((batch, dim), np.float32)}

    def reference(x):
        v = _f32(x["x"])
        return {"out": np.stack([v[b, :n].astype(np.float64).mean(axis=0) for b, n in enumerate(x["lens"])])}

    size = _itemsize(dtype)
    return Case("holdout5_mean_pool", name, "holdout5", mean_pool_kernel, {"B": batch, "S": seq, "D": dim}, dtype,
                MEAN_POOL_CONFIGS, inputs, ("out",), lambda x, cfg: (x["x"], x["lens"], x["out"], seq, dim),
                lambda cfg: (batch, math.ceil(dim / cfg["BLOCK_D"])), reference, tolerance=1e-4,
                min_bytes=0.75 * size * batch * seq * dim + 4.0 * batch * dim)  # lengths average 3/4 of seq


def kv_scatter_case(name, tokens, heads, d, slots, dtype):
    """The cache is written in place: the check zeroes it before the launch (`zero_outputs`), so the reference is a
    zero cache holding the new rows at their slots, and a row written anywhere else shows."""
    def inputs(rng):
        return {"key": _rand(rng, (tokens, heads, d), dtype),
                "slots": rng.permutation(slots)[:tokens].astype(np.int32),
                "cache": np.zeros((slots, heads, d), _np_dtype(dtype))}

    def reference(x):
        cache = np.zeros((slots, heads, d), np.float32)
        cache[x["slots"]] = _f32(x["key"])
        return {"cache": cache}

    configs = _grid_configs({"BLOCK_T": [1, 2, 4, 8, 16, 32], "num_warps": [1, 2, 4, 8]}, limit=16, seed=44,
                            keep=lambda c: c["BLOCK_T"] * d >= 32 * c["num_warps"])
    size = _itemsize(dtype)
    return Case("holdout5_kv_scatter", name, "holdout5", kv_scatter_kernel,
                {"T": tokens, "H": heads, "D": d, "slots": slots}, dtype, [{"HEAD_DIM": d, **c} for c in configs],
                inputs, ("cache",), lambda x, cfg: (x["key"], x["slots"], x["cache"], tokens, heads),
                lambda cfg: (math.ceil(tokens / cfg["BLOCK_T"]), heads), reference, tolerance=1e-6,
                min_bytes=2.0 * size * tokens * heads * d + 4.0 * tokens, extra={"zero_outputs": True})


CONV_WIDTH = 4
CAUSAL_CONV_CONFIGS = _grid_configs({"BLOCK_T": [16, 32, 64, 128], "BLOCK_C": [32, 64, 128, 256],
                                     "num_warps": [1, 2, 4, 8]}, limit=16, seed=45,
                                    keep=lambda c: 32 * c["num_warps"] <= c["BLOCK_T"] * c["BLOCK_C"] <= 16384)


def causal_conv1d_case(name, batch, seq, channels, dtype):
    def inputs(rng):
        return {"x": _rand(rng, (batch, seq, channels), dtype), "w": _rand(rng, (channels, CONV_WIDTH), dtype, 0.5),
                "bias": _rand(rng, (channels,), dtype, 0.1), "out": np.empty((batch, seq, channels), _np_dtype(dtype))}

    def reference(x):
        v, w = _f32(x["x"]), _f32(x["w"])
        padded = np.concatenate([np.zeros((batch, CONV_WIDTH - 1, channels), np.float32), v], axis=1)
        h = np.broadcast_to(_f32(x["bias"]), v.shape).copy()
        for k in range(CONV_WIDTH):
            h += padded[:, k:k + seq] * w[:, k]
        return {"out": h / (1 + np.exp(-h))}

    size = _itemsize(dtype)
    return Case("holdout5_causal_conv1d", name, "holdout5", causal_conv1d_kernel,
                {"B": batch, "T": seq, "C": channels, "W": CONV_WIDTH}, dtype,
                [{"WIDTH": CONV_WIDTH, **c} for c in CAUSAL_CONV_CONFIGS], inputs, ("out",),
                lambda x, cfg: (x["x"], x["w"], x["bias"], x["out"], seq, channels),
                lambda cfg: (math.ceil(seq / cfg["BLOCK_T"]), math.ceil(channels / cfg["BLOCK_C"]), batch), reference,
                tolerance=1e-2, flops=2.0 * CONV_WIDTH * batch * seq * channels,
                min_bytes=2.0 * size * batch * seq * channels)


def holdout5_cases() -> list[Case]:
    return [
        geglu_case("holdout5_geglu_bf16_4096x8192", 4096, 8192, "bf16"),
        geglu_case("holdout5_geglu_fp16_2000x5000", 2000, 5000, "fp16"),
        argmax_case("holdout5_argmax_bf16_512x151936", 512, 151936, "bf16"),
        argmax_case("holdout5_argmax_fp32_2048x32000", 2048, 32000, "fp32"),
        mean_pool_case("holdout5_mean_pool_bf16_b32_s2048_d4096", 32, 2048, 4096, "bf16"),
        mean_pool_case("holdout5_mean_pool_fp32_b128_s512_d1024", 128, 512, 1024, "fp32"),
        kv_scatter_case("holdout5_kv_scatter_bf16_t8192_h8_d128_s65536", 8192, 8, 128, 65536, "bf16"),
        kv_scatter_case("holdout5_kv_scatter_fp16_t4096_h32_d64_s16384", 4096, 32, 64, 16384, "fp16"),
        causal_conv1d_case("holdout5_causal_conv1d_bf16_b8_t4096_c4096", 8, 4096, 4096, "bf16"),
        causal_conv1d_case("holdout5_causal_conv1d_fp16_b1_t32768_c2048", 1, 32768, 2048, "fp16"),
    ]
