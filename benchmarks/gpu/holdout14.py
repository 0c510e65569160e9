"""The fourteenth held-out set (split "holdout14"): ordinary Triton kernels written after holdout13 was scored,
measured once on the H200 and scored once with the model frozen, never fitted on.

2x2 average pooling of NHWC images (four taps a program tile, averaged in fp32), a grouped GEMM over a MoE layer's
experts (tokens sorted by expert, each expert's rows padded to the row block, a block's expert read from a table
ahead of the K loop), a direct depthwise 3x3 convolution of NHWC images (nine shifted, masked taps), the intra-chunk
part of causal linear attention ((Q K^T masked causally within a chunk) V, two dots, no softmax) and a scaled
softmax over materialized attention scores with a causal mask (the masked half never loaded). Kernels and cases
live together here, one module for the set.
"""

from __future__ import annotations

import math

import numpy as np
from holdout4 import _next_pow2
from holdout13 import _dot_fits
from sweep_cases import Case, _f32, _grid_configs, _itemsize, _np_dtype, _rand
from sweep_kernels import jit, tl

CHUNK = 128  # linear attention's chunk: a query sees the keys of its own chunk up to itself
MOE_BLOCK_M = (16, 32, 64, 128)  # the row blocks the MoE configs draw from (one padded layout each)


@jit
def avgpool2x2_kernel(x_ptr, out_ptr, n_out, height, width, channels, BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr):
    """2x2 average pooling, stride 2, of NHWC images x [N, H, W, C] into out [N, H // 2, W // 2, C]: one program per
    (BLOCK_P output pixels, BLOCK_C channels) loads the four taps and averages them in fp32."""
    p = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    out_h = height // 2
    out_w = width // 2
    mask = (p < n_out)[:, None] & (c < channels)[None, :]
    image = p // (out_h * out_w)
    oh = (p // out_w) % out_h
    ow = p % out_w
    src = ((image * height + 2 * oh) * width + 2 * ow).to(tl.int64) * channels
    top = x_ptr + src[:, None] + c[None, :]
    bottom = top + width * channels
    acc = tl.load(top, mask=mask, other=0.0).to(tl.float32)
    acc += tl.load(top + channels, mask=mask, other=0.0).to(tl.float32)
    acc += tl.load(bottom, mask=mask, other=0.0).to(tl.float32)
    acc += tl.load(bottom + channels, mask=mask, other=0.0).to(tl.float32)
    out = out_ptr + p[:, None].to(tl.int64) * channels + c[None, :]
    tl.store(out, (acc * 0.25).to(out_ptr.dtype.element_ty), mask=mask)


@jit
def moe_grouped_gemm_kernel(x_ptr, w_ptr, token_ids_ptr, block_expert_ptr, y_ptr, n_tokens, N, K,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """A MoE layer's expert GEMM: y[t] = x[t] W[e(t)] for tokens x [T, K] sorted by expert and weights W [E, K, N].
    Each expert's rows are padded to BLOCK_M in token_ids (n_tokens marks padding) and block_expert gives each row
    block's expert; one program per (BLOCK_N columns, row block), a K loop of dots with an fp32 accumulator
    (BLOCK_K divides K)."""
    pid_m = tl.program_id(1)
    expert = tl.load(block_expert_ptr + pid_m).to(tl.int64)
    rows = tl.load(token_ids_ptr + pid_m * BLOCK_M + tl.arange(0, BLOCK_M))
    offs_n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    row_ok = rows < n_tokens
    n_ok = offs_n < N
    x_rows = x_ptr + rows[:, None].to(tl.int64) * K
    w_base = w_ptr + expert * K * N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(x_rows + (k + offs_k)[None, :], mask=row_ok[:, None], other=0.0)
        b = tl.load(w_base + (k + offs_k)[:, None] * N + offs_n[None, :], mask=n_ok[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
    tl.store(y_ptr + rows[:, None].to(tl.int64) * N + offs_n[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=row_ok[:, None] & n_ok[None, :])


@jit
def depthwise_conv3x3_kernel(x_ptr, w_ptr, out_ptr, n_pixels, height, width, channels, BLOCK_P: tl.constexpr,
                             BLOCK_C: tl.constexpr):
    """Depthwise 3x3 convolution, stride 1, zero padding 1, of NHWC images x [N, H, W, C] with weights [3, 3, C]:
    out [N, H, W, C]; one program per (BLOCK_P pixels, BLOCK_C channels) sums the nine shifted taps in fp32."""
    p = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    p_ok = p < n_pixels
    c_ok = c < channels
    image = p // (height * width)
    oh = (p // width) % height
    ow = p % width
    acc = tl.zeros((BLOCK_P, BLOCK_C), dtype=tl.float32)
    for tap in tl.static_range(9):
        ih = oh + (tap // 3 - 1)
        iw = ow + (tap % 3 - 1)
        inside = p_ok & (ih >= 0) & (ih < height) & (iw >= 0) & (iw < width)
        src = ((image * height + ih) * width + iw).to(tl.int64) * channels
        v = tl.load(x_ptr + src[:, None] + c[None, :], mask=inside[:, None] & c_ok[None, :], other=0.0)
        w = tl.load(w_ptr + tap * channels + c, mask=c_ok, other=0.0)
        acc += v.to(tl.float32) * w.to(tl.float32)[None, :]
    tl.store(out_ptr + p[:, None].to(tl.int64) * channels + c[None, :], acc.to(out_ptr.dtype.element_ty),
             mask=p_ok[:, None] & c_ok[None, :])


@jit
def chunk_linear_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq, scale, CHUNK: tl.constexpr, HEAD_DIM: tl.constexpr,
                                  BLOCK_M: tl.constexpr):
    """The intra-chunk part of causal linear attention for q, k, v, o [BH, S, D]: o_i = sum over keys j <= i of
    query i's chunk of (scale q_i . k_j) v_j, no softmax. One program per (BLOCK_M queries, head) takes its chunk's
    CHUNK keys (BLOCK_M divides CHUNK): two dots, fp32 accumulation, the causal mask applied to the scores."""
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = (tl.program_id(0) * BLOCK_M) // CHUNK * CHUNK + tl.arange(0, CHUNK)
    offs_d = tl.arange(0, HEAD_DIM)
    base = tl.program_id(1).to(tl.int64) * seq * HEAD_DIM
    q = tl.load(q_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], mask=offs_m[:, None] < seq, other=0.0)
    kv_ok = offs_n[:, None] < seq
    k = tl.load(k_ptr + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=kv_ok, other=0.0)
    v = tl.load(v_ptr + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=kv_ok, other=0.0)
    scores = tl.dot(q, tl.trans(k)) * scale
    scores = tl.where(offs_m[:, None] >= offs_n[None, :], scores, 0.0)
    out = tl.dot(scores.to(v.dtype), v)
    tl.store(o_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], out.to(o_ptr.dtype.element_ty),
             mask=offs_m[:, None] < seq)


@jit
def causal_masked_softmax_kernel(x_ptr, out_ptr, n_rows, seq, scale, BLOCK_R: tl.constexpr, BLOCK_S: tl.constexpr):
    """Softmax of scale * x over the last dim of attention scores x [BH, S, S] with a causal mask: row i keeps
    columns j <= i, the rest are -inf (never loaded, stored as zeros). One program per BLOCK_R rows, each row one
    BLOCK_S-wide tile, fp32 inside, out in out's type."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.arange(0, BLOCK_S)
    row_ok = rows < n_rows
    query = rows % seq
    inside = row_ok[:, None] & (cols[None, :] < seq)
    offs = rows[:, None].to(tl.int64) * seq + cols[None, :]
    keep = inside & (cols[None, :] <= query[:, None])
    x = tl.load(x_ptr + offs, mask=keep, other=-float("inf")).to(tl.float32) * scale
    e = tl.exp(x - tl.max(x, axis=1)[:, None])
    out = e / tl.sum(e, axis=1)[:, None]
    tl.store(out_ptr + offs, out.to(out_ptr.dtype.element_ty), mask=inside)


# --- cases

def _tile2d_configs(channels, seed):
    """(pixels x channels) tiles of the NHWC kernels: a channel block no wider than the channels' power of two."""
    return _grid_configs({"BLOCK_P": [8, 16, 32, 64, 128, 256], "BLOCK_C": [16, 32, 64, 128],
                          "num_warps": [1, 2, 4, 8, 16]}, limit=16, seed=seed,
                         keep=lambda c: c["BLOCK_C"] <= _next_pow2(channels)
                         and 32 * c["num_warps"] <= c["BLOCK_P"] * c["BLOCK_C"] <= 128 * 32 * c["num_warps"])


def avgpool_case(name, images, height, width, channels, dtype):
    out_h, out_w = height // 2, width // 2
    n_out = images * out_h * out_w

    def inputs(rng):
        return {"x": _rand(rng, (images, height, width, channels), dtype),
                "out": np.empty((images, out_h, out_w, channels), _np_dtype(dtype))}

    def reference(x):
        v = _f32(x["x"]).astype(np.float64)[:, :2 * out_h, :2 * out_w]
        return {"out": v.reshape(images, out_h, 2, out_w, 2, channels).mean(axis=(2, 4))}

    size = _itemsize(dtype)
    return Case("holdout14_avgpool2x2", name, "holdout14", avgpool2x2_kernel,
                {"N": images, "H": height, "W": width, "C": channels}, dtype, _tile2d_configs(channels, 141), inputs,
                ("out",), lambda x, cfg: (x["x"], x["out"], n_out, height, width, channels),
                lambda cfg: (math.ceil(n_out / cfg["BLOCK_P"]), math.ceil(channels / cfg["BLOCK_C"])), reference,
                tolerance=1e-2 if dtype != "fp32" else 1e-5,
                min_bytes=size * (images * 4 * out_h * out_w * channels + n_out * channels))


MOE_CONFIGS = _grid_configs(
    {"BLOCK_M": list(MOE_BLOCK_M), "BLOCK_N": [32, 64, 128, 256], "BLOCK_K": [32, 64, 128], "num_warps": [4, 8],
     "num_stages": [2, 3, 4]}, limit=16, seed=142, keep=_dot_fits)


def _moe_layout(counts, block_m, n_tokens):
    """token_ids (each expert's sorted tokens padded to block_m with n_tokens) and each row block's expert."""
    ids, experts = [], []
    start = 0
    for e, count in enumerate(counts):
        blocks = math.ceil(count / block_m)
        padded = np.full(blocks * block_m, n_tokens, np.int32)
        padded[:count] = np.arange(start, start + count, dtype=np.int32)
        ids.append(padded)
        experts.append(np.full(blocks, e, np.int32))
        start += count
    return np.concatenate(ids), np.concatenate(experts)


def moe_grouped_gemm_case(name, experts, tokens, k, n, dtype):
    load = np.random.default_rng(tokens + experts).dirichlet(np.full(experts, 2.0))  # uneven, fixed per case
    counts = np.random.default_rng(experts).multinomial(tokens, load)
    blocks = {bm: int(sum(math.ceil(c / bm) for c in counts)) for bm in MOE_BLOCK_M}

    def inputs(rng):
        arrays = {"x": _rand(rng, (tokens, k), dtype), "w": _rand(rng, (experts, k, n), dtype, 0.05),
                  "y": np.empty((tokens, n), _np_dtype(dtype))}
        for bm in MOE_BLOCK_M:
            arrays[f"token_ids_{bm}"], arrays[f"block_expert_{bm}"] = _moe_layout(counts, bm, tokens)
        return arrays

    def reference(x):
        xs = _f32(x["x"])
        y = np.empty((tokens, n), np.float32)
        start = 0
        for e, count in enumerate(counts):
            y[start:start + count] = xs[start:start + count] @ _f32(x["w"][e])
            start += count
        return {"y": y}

    def args(x, cfg):
        bm = cfg["BLOCK_M"]
        return (x["x"], x["w"], x[f"token_ids_{bm}"], x[f"block_expert_{bm}"], x["y"], tokens, n, k)

    size = _itemsize(dtype)
    return Case("holdout14_moe_grouped_gemm", name, "holdout14", moe_grouped_gemm_kernel,
                {"E": experts, "T": tokens, "K": k, "N": n}, dtype, MOE_CONFIGS, inputs, ("y",), args,
                lambda cfg: (math.ceil(n / cfg["BLOCK_N"]), blocks[cfg["BLOCK_M"]]), reference, tolerance=2e-2,
                flops=2.0 * tokens * k * n, min_bytes=size * (tokens * k + experts * k * n + tokens * n))


def depthwise_conv_case(name, images, height, width, channels, dtype):
    pixels = images * height * width

    def inputs(rng):
        return {"x": _rand(rng, (images, height, width, channels), dtype), "w": _rand(rng, (3, 3, channels), dtype),
                "out": np.empty((images, height, width, channels), _np_dtype(dtype))}

    def reference(x):
        padded = np.pad(_f32(x["x"]).astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
        w = _f32(x["w"]).astype(np.float64)
        out = np.zeros((images, height, width, channels))
        for kh in range(3):
            for kw in range(3):
                out += padded[:, kh:kh + height, kw:kw + width] * w[kh, kw]
        return {"out": out}

    size = _itemsize(dtype)
    return Case("holdout14_depthwise_conv3x3", name, "holdout14", depthwise_conv3x3_kernel,
                {"N": images, "H": height, "W": width, "C": channels}, dtype, _tile2d_configs(channels, 143), inputs,
                ("out",), lambda x, cfg: (x["x"], x["w"], x["out"], pixels, height, width, channels),
                lambda cfg: (math.ceil(pixels / cfg["BLOCK_P"]), math.ceil(channels / cfg["BLOCK_C"])), reference,
                tolerance=1e-2 if dtype != "fp32" else 1e-5, flops=18.0 * pixels * channels,
                min_bytes=size * (2.0 * pixels * channels + 9 * channels))


LINEAR_ATTENTION_CONFIGS = _grid_configs({"BLOCK_M": [16, 32, 64, 128], "num_warps": [2, 4, 8],
                                          "num_stages": [1, 2]}, limit=16, seed=144,
                                         keep=lambda c: c["BLOCK_M"] <= CHUNK
                                         and c["BLOCK_M"] * CHUNK <= 128 * 32 * c["num_warps"])


def chunk_linear_attention_case(name, bh, seq, d, dtype):
    def inputs(rng):
        return {"q": _rand(rng, (bh, seq, d), dtype), "k": _rand(rng, (bh, seq, d), dtype),
                "v": _rand(rng, (bh, seq, d), dtype), "o": np.empty((bh, seq, d), _np_dtype(dtype))}

    def reference(x):
        q, k, v = (_f32(x[name]) for name in "qkv")
        out = np.empty((bh, seq, d), np.float32)
        causal = np.tril(np.ones((CHUNK, CHUNK), bool))
        for start in range(0, seq, CHUNK):
            stop = min(seq, start + CHUNK)
            s = q[:, start:stop] @ k[:, start:stop].transpose(0, 2, 1) / math.sqrt(d)
            out[:, start:stop] = np.where(causal[:stop - start, :stop - start], s, 0.0) @ v[:, start:stop]
        return {"o": out}

    size = _itemsize(dtype)
    return Case("holdout14_chunk_linear_attention", name, "holdout14", chunk_linear_attention_kernel,
                {"BH": bh, "S": seq, "D": d, "CHUNK": CHUNK}, dtype,
                [{"CHUNK": CHUNK, "HEAD_DIM": d, **c} for c in LINEAR_ATTENTION_CONFIGS], inputs, ("o",),
                lambda x, cfg: (x["q"], x["k"], x["v"], x["o"], seq, 1.0 / math.sqrt(d)),
                lambda cfg: (math.ceil(seq / cfg["BLOCK_M"]), bh), reference, tolerance=2e-2,
                flops=2.0 * bh * seq * (CHUNK + 1) * d, min_bytes=4.0 * size * bh * seq * d)


def causal_softmax_case(name, bh, seq, dtype):
    block = _next_pow2(seq)
    rows = bh * seq
    configs = _grid_configs({"BLOCK_R": [1, 2, 4, 8], "num_warps": [1, 2, 4, 8, 16]}, limit=16, seed=145,
                            keep=lambda c: 32 * c["num_warps"] <= c["BLOCK_R"] * block <= 128 * 32 * c["num_warps"])
    scale = 0.125

    def inputs(rng):
        return {"x": _rand(rng, (bh, seq, seq), dtype, 8.0), "out": np.empty((bh, seq, seq), _np_dtype(dtype))}

    def reference(x):
        causal = np.tril(np.ones((seq, seq), bool))
        out = np.empty((bh, seq, seq))
        for h in range(bh):
            s = np.where(causal, _f32(x["x"][h]).astype(np.float64) * scale, -np.inf)
            e = np.exp(s - s.max(axis=-1, keepdims=True))
            out[h] = e / e.sum(axis=-1, keepdims=True)
        return {"out": out}

    size = _itemsize(dtype)
    return Case("holdout14_causal_masked_softmax", name, "holdout14", causal_masked_softmax_kernel,
                {"BH": bh, "S": seq}, dtype, [{"BLOCK_S": block, **c} for c in configs], inputs, ("out",),
                lambda x, cfg: (x["x"], x["out"], rows, seq, scale), lambda cfg: (math.ceil(rows / cfg["BLOCK_R"]),),
                reference, tolerance=1e-2 if dtype != "fp32" else 1e-5,
                min_bytes=size * (bh * seq * (seq + 1) / 2 + rows * seq))


def holdout14_cases() -> list[Case]:
    return [
        avgpool_case("holdout14_avgpool2x2_fp16_n32_112x112_c64", 32, 112, 112, 64, "fp16"),
        avgpool_case("holdout14_avgpool2x2_bf16_n48_74x74_c96", 48, 74, 74, 96, "bf16"),
        moe_grouped_gemm_case("holdout14_moe_grouped_gemm_bf16_e8_t4096_k2048_n1408", 8, 4096, 2048, 1408, "bf16"),
        moe_grouped_gemm_case("holdout14_moe_grouped_gemm_fp16_e16_t3000_k1024_n2816", 16, 3000, 1024, 2816, "fp16"),
        depthwise_conv_case("holdout14_depthwise_conv3x3_fp16_n32_56x56_c128", 32, 56, 56, 128, "fp16"),
        depthwise_conv_case("holdout14_depthwise_conv3x3_fp32_n32_38x38_c200", 32, 38, 38, 200, "fp32"),
        chunk_linear_attention_case("holdout14_chunk_linear_attention_bf16_bh64_s4096_d64", 64, 4096, 64, "bf16"),
        chunk_linear_attention_case("holdout14_chunk_linear_attention_fp16_bh32_s2000_d128", 32, 2000, 128, "fp16"),
        causal_softmax_case("holdout14_causal_masked_softmax_fp16_bh32_s1024", 32, 1024, "fp16"),
        causal_softmax_case("holdout14_causal_masked_softmax_bf16_bh16_s1500", 16, 1500, "bf16"),
    ]
