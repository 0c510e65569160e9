"""The thirteenth held-out set (split "holdout13"): ordinary Triton kernels written after holdout12 was scored,
measured once on the H200 and scored once with the model frozen, never fitted on.

A W4A16 matmul (int4 weights packed two a byte along K, per-group fp16 scales, zero point 8, dequantized in the
loop ahead of the dot), causal attention over a sliding window of 256 keys (the key loop starts at the window),
a reversal of the last dim that casts as it copies, a selective-scan recurrence (Mamba's per-channel linear
state, a loop over time in each program) and im2col for a 3x3 convolution of NHWC images with a zero halo.
Kernels and cases live together here, one module for the set.
"""

from __future__ import annotations

import math

import numpy as np
from holdout4 import _next_pow2
from sweep_cases import Case, _f32, _grid_configs, _itemsize, _np_dtype, _rand
from sweep_kernels import jit, tl

GROUP = 128  # the W4A16 weights' quantization group along K
WINDOW = 256  # the sliding window: a query sees itself and the WINDOW - 1 keys before it


@jit
def w4a16_matmul_kernel(x_ptr, w_ptr, scale_ptr, y_ptr, M, N, K, GROUP: tl.constexpr, BLOCK_M: tl.constexpr,
                        BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """y = x dequant(W) for activations x [M, K] and int4 weights packed two a byte along K, w [K // 2, N] uint8
    (the low nibble is the even k), with scales [K // GROUP, N] and zero point 8: each BLOCK_K x BLOCK_N tile is
    unpacked, scaled (one group's row: BLOCK_K divides GROUP, GROUP and BLOCK_K divide K) and cast ahead of the dot."""
    offs_m = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    m_ok = offs_m < M
    n_ok = offs_n < N
    shift = (offs_k % 2) * 4
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(x_ptr + offs_m[:, None] * K + (k + offs_k)[None, :], mask=m_ok[:, None], other=0.0)
        packed = tl.load(w_ptr + ((k + offs_k) // 2)[:, None] * N + offs_n[None, :], mask=n_ok[None, :], other=0)
        scale = tl.load(scale_ptr + (k // GROUP) * N + offs_n, mask=n_ok, other=0.0).to(tl.float32)
        q = (packed.to(tl.int32) >> shift[:, None]) & 0xF
        w = ((q - 8).to(tl.float32) * scale[None, :]).to(a.dtype)
        acc = tl.dot(a, w, acc)
    tl.store(y_ptr + offs_m[:, None] * N + offs_n[None, :], acc.to(y_ptr.dtype.element_ty),
             mask=m_ok[:, None] & n_ok[None, :])


@jit
def sliding_window_attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq, sm_scale, WINDOW: tl.constexpr,
                                    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Causal attention over a sliding window for q, k, v, o [B, H, S, D]: query i sees keys i - WINDOW < j <= i.
    One program per (BLOCK_M queries, batch x head); the key loop starts at the block holding the window's first key
    of the first query, an online softmax in base 2 (a row that has seen no key yet adds nothing)."""
    start_m = tl.program_id(0)
    base = tl.program_id(1).to(tl.int64) * seq * HEAD_DIM
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], mask=offs_m[:, None] < seq, other=0.0)
    m_i = tl.full([BLOCK_M], -float("inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    scale = sm_scale * 1.4426950408889634
    lo = tl.maximum(start_m * BLOCK_M - WINDOW + 1, 0) // BLOCK_N * BLOCK_N
    hi = tl.minimum((start_m + 1) * BLOCK_M, seq)
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kv_ok = offs_n[:, None] < seq
        k = tl.load(k_ptr + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=kv_ok, other=0.0)
        scores = tl.dot(q, tl.trans(k)) * scale
        seen = (offs_m[:, None] >= offs_n[None, :]) & (offs_m[:, None] - offs_n[None, :] < WINDOW)
        scores = tl.where(seen & (offs_n[None, :] < seq), scores, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(scores, axis=1))
        m_safe = tl.where(m_new == -float("inf"), 0.0, m_new)
        p = tl.math.exp2(scores - m_safe[:, None])
        correction = tl.math.exp2(m_i - m_safe)
        l_i = l_i * correction + tl.sum(p, axis=1)
        v = tl.load(v_ptr + base + offs_n[:, None] * HEAD_DIM + offs_d[None, :], mask=kv_ok, other=0.0)
        acc = acc * correction[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    out = acc / l_i[:, None]
    tl.store(o_ptr + base + offs_m[:, None] * HEAD_DIM + offs_d[None, :], out.to(o_ptr.dtype.element_ty),
             mask=offs_m[:, None] < seq)


@jit
def flip_cast_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """out[r, c] = x[r, n_cols - 1 - c] converted to out's type, one program per BLOCK_R x BLOCK_C output tile."""
    rows = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    cols = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (rows < n_rows)[:, None] & (cols < n_cols)[None, :]
    row_start = rows[:, None].to(tl.int64) * n_cols
    x = tl.load(x_ptr + row_start + (n_cols - 1 - cols)[None, :], mask=mask)
    tl.store(out_ptr + row_start + cols[None, :], x.to(out_ptr.dtype.element_ty), mask=mask)


@jit
def selective_scan_kernel(x_ptr, dt_ptr, a_ptr, c_ptr, y_ptr, steps, channels, BLOCK_C: tl.constexpr):
    """A per-channel linear recurrence over x, dt, C, y [B, T, channels] (Mamba's selective scan, state size one):
    h_t = exp(A[c] dt_t) h_{t-1} + dt_t x_t, y_t = h_t C_t, the state in fp32; one program per (BLOCK_C channels,
    batch), stepping through time."""
    cols = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = cols < channels
    base = tl.program_id(1).to(tl.int64) * steps * channels
    a = tl.load(a_ptr + cols, mask=mask, other=0.0)
    h = tl.zeros([BLOCK_C], dtype=tl.float32)
    for t in range(0, steps):
        offs = base + t * channels + cols
        dt = tl.load(dt_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        c = tl.load(c_ptr + offs, mask=mask, other=0.0).to(tl.float32)
        h = tl.exp(a * dt) * h + dt * x
        tl.store(y_ptr + offs, (h * c).to(y_ptr.dtype.element_ty), mask=mask)


@jit
def im2col3x3_kernel(x_ptr, cols_ptr, n_pixels, height, width, channels, BLOCK_P: tl.constexpr,
                     BLOCK_C: tl.constexpr):
    """im2col of a 3x3 convolution, stride 1, padding 1, over NHWC images x [N, H, W, C]: cols [N H W, 9 C], column
    (kh 3 + kw) C + c; one program per (BLOCK_P output pixels, BLOCK_C channels), the halo stored as zeros."""
    p = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    c = tl.program_id(1) * BLOCK_C + tl.arange(0, BLOCK_C)
    p_ok = p < n_pixels
    c_ok = c < channels
    image = p // (height * width)
    oh = (p // width) % height
    ow = p % width
    out_row = p[:, None].to(tl.int64) * 9 * channels
    for tap in tl.static_range(9):
        ih = oh + (tap // 3 - 1)
        iw = ow + (tap % 3 - 1)
        inside = p_ok & (ih >= 0) & (ih < height) & (iw >= 0) & (iw < width)
        src = ((image * height + ih) * width + iw).to(tl.int64) * channels
        v = tl.load(x_ptr + src[:, None] + c[None, :], mask=inside[:, None] & c_ok[None, :], other=0.0)
        tl.store(cols_ptr + out_row + tap * channels + c[None, :], v, mask=p_ok[:, None] & c_ok[None, :])


# --- cases

def _dot_fits(c):
    """Tile and warps a dot config may pair, and operand stages that fit the H200's shared memory."""
    return (32 * 32 * c["num_warps"] <= c["BLOCK_M"] * c["BLOCK_N"] <= 128 * 32 * c["num_warps"]
            and c["num_stages"] * c["BLOCK_K"] * (c["BLOCK_M"] + c["BLOCK_N"]) * 2 <= 227 * 1024)


W4A16_CONFIGS = _grid_configs(
    {"BLOCK_M": [16, 32, 64, 128], "BLOCK_N": [32, 64, 128, 256], "BLOCK_K": [32, 64, 128],
     "num_warps": [1, 2, 4, 8], "num_stages": [2, 3, 4]}, limit=16, seed=131,
    keep=lambda c: _dot_fits(c) and c["BLOCK_K"] * c["BLOCK_N"] <= 128 * 32 * c["num_warps"])


def w4a16_case(name, m, n, k, dtype):
    def inputs(rng):
        return {"x": _rand(rng, (m, k), dtype), "w": rng.integers(0, 256, (k // 2, n), dtype=np.uint8),
                "scale": rng.uniform(0.005, 0.02, (k // GROUP, n)).astype(np.float16),
                "y": np.empty((m, n), _np_dtype(dtype))}

    def reference(x):
        q = np.empty((k, n), np.float64)
        q[0::2] = x["w"] & 0xF
        q[1::2] = x["w"] >> 4
        w = (q - 8) * np.repeat(x["scale"].astype(np.float64), GROUP, axis=0)
        return {"y": _f32(x["x"]).astype(np.float64) @ w}

    size = _itemsize(dtype)
    return Case("holdout13_w4a16", name, "holdout13", w4a16_matmul_kernel, {"M": m, "N": n, "K": k}, dtype,
                [{"GROUP": GROUP, **c} for c in W4A16_CONFIGS], inputs, ("y",),
                lambda x, cfg: (x["x"], x["w"], x["scale"], x["y"], m, n, k),
                lambda cfg: (math.ceil(n / cfg["BLOCK_N"]), math.ceil(m / cfg["BLOCK_M"])), reference,
                tolerance=2e-2, flops=2.0 * m * n * k,
                min_bytes=size * (m * k + m * n) + k * n / 2 + 2.0 * (k // GROUP) * n)


def sliding_window_case(name, batch, heads, seq, d, dtype):
    configs = _grid_configs({"BLOCK_M": [16, 32, 64, 128], "BLOCK_N": [16, 32, 64, 128], "num_warps": [1, 2, 4, 8],
                             "num_stages": [1, 2, 3]}, limit=16, seed=132,
                            keep=lambda c: 16 * c["num_warps"] <= c["BLOCK_M"]
                            and c["BLOCK_M"] * c["BLOCK_N"] <= 128 * 32 * c["num_warps"]
                            and (c["BLOCK_M"] + 2 * c["num_stages"] * c["BLOCK_N"]) * d * 2 <= 227 * 1024)

    def inputs(rng):
        return {"q": _rand(rng, (batch, heads, seq, d), dtype), "k": _rand(rng, (batch, heads, seq, d), dtype),
                "v": _rand(rng, (batch, heads, seq, d), dtype), "o": np.empty((batch, heads, seq, d), _np_dtype(dtype))}

    def reference(x):
        q, k, v = (_f32(x[name]).astype(np.float64) for name in "qkv")
        i = np.arange(seq)[:, None]
        j = np.arange(seq)[None, :]
        seen = (i >= j) & (i - j < WINDOW)
        out = np.empty((batch, heads, seq, d))
        for start in range(0, seq, 512):  # a strip of queries at a time: only their window's keys
            lo = max(0, start - WINDOW + 1)
            stop = min(seq, start + 512)
            s = q[:, :, start:stop] @ k[:, :, lo:stop].transpose(0, 1, 3, 2) / math.sqrt(d)
            s = np.where(seen[start:stop, lo:stop], s, -np.inf)
            p = np.exp(s - s.max(axis=-1, keepdims=True))
            out[:, :, start:stop] = (p / p.sum(axis=-1, keepdims=True)) @ v[:, :, lo:stop]
        return {"o": out}

    size = _itemsize(dtype)
    keys = sum(min(i + 1, WINDOW) for i in range(seq))
    return Case("holdout13_sliding_window_attention", name, "holdout13", sliding_window_attention_kernel,
                {"B": batch, "H": heads, "S": seq, "D": d, "W": WINDOW}, dtype,
                [{"WINDOW": WINDOW, "HEAD_DIM": d, **c} for c in configs], inputs, ("o",),
                lambda x, cfg: (x["q"], x["k"], x["v"], x["o"], seq, 1.0 / math.sqrt(d)),
                lambda cfg: (math.ceil(seq / cfg["BLOCK_M"]), batch * heads), reference, tolerance=2e-2,
                flops=4.0 * batch * heads * keys * d, min_bytes=4.0 * size * batch * heads * seq * d)


FLIP_CONFIGS = _grid_configs({"BLOCK_R": [1, 2, 4, 8, 16, 32, 64], "BLOCK_C": [32, 64, 128, 256, 512, 1024],
                              "num_warps": [1, 2, 4, 8, 16]}, limit=16, seed=133,
                             keep=lambda c: 32 * c["num_warps"] <= c["BLOCK_R"] * c["BLOCK_C"]
                             <= 128 * 32 * c["num_warps"])


def flip_cast_case(name, rows, cols, dtype, out_dtype):
    def inputs(rng):
        return {"x": _rand(rng, (rows, cols), dtype), "out": np.empty((rows, cols), _np_dtype(out_dtype))}

    def reference(x):
        return {"out": _f32(x["x"]).astype(np.float64)[:, ::-1]}

    return Case("holdout13_flip_cast", name, "holdout13", flip_cast_kernel, {"rows": rows, "cols": cols}, dtype,
                FLIP_CONFIGS, inputs, ("out",), lambda x, cfg: (x["x"], x["out"], rows, cols),
                lambda cfg: (math.ceil(rows / cfg["BLOCK_R"]), math.ceil(cols / cfg["BLOCK_C"])), reference,
                tolerance=1e-2 if out_dtype in ("bf16", "fp16") else 0.0,
                min_bytes=(_itemsize(dtype) + _itemsize(out_dtype)) * rows * cols)


SCAN_CONFIGS = _grid_configs({"BLOCK_C": [16, 32, 64, 128, 256, 512, 1024], "num_warps": [1, 2, 4, 8, 16]},
                             limit=16, seed=134, keep=lambda c: 16 * c["num_warps"] <= c["BLOCK_C"])


def selective_scan_case(name, batch, steps, channels, dtype):
    def inputs(rng):
        shape = (batch, steps, channels)
        return {"x": _rand(rng, shape, dtype), "dt": rng.uniform(0.001, 0.1, shape).astype(_np_dtype(dtype)),
                "a": -rng.uniform(0.5, 8.0, channels).astype(np.float32), "c": _rand(rng, shape, dtype),
                "y": np.empty(shape, _np_dtype(dtype))}

    def reference(x):
        xs, dt, c = (_f32(x[name]).astype(np.float64) for name in ("x", "dt", "c"))
        decay = np.exp(x["a"].astype(np.float64) * dt)
        h = np.zeros((batch, channels))
        y = np.empty((batch, steps, channels))
        for t in range(steps):
            h = decay[:, t] * h + dt[:, t] * xs[:, t]
            y[:, t] = h * c[:, t]
        return {"y": y}

    return Case("holdout13_selective_scan", name, "holdout13", selective_scan_kernel,
                {"B": batch, "T": steps, "C": channels}, dtype, SCAN_CONFIGS, inputs, ("y",),
                lambda x, cfg: (x["x"], x["dt"], x["a"], x["c"], x["y"], steps, channels),
                lambda cfg: (math.ceil(channels / cfg["BLOCK_C"]), batch), reference, tolerance=2e-2,
                min_bytes=4.0 * _itemsize(dtype) * batch * steps * channels + 4.0 * channels)


def im2col_case(name, images, height, width, channels, dtype):
    pixels = images * height * width
    configs = _grid_configs({"BLOCK_P": [8, 16, 32, 64, 128, 256], "BLOCK_C": [16, 32, 64, 128],
                             "num_warps": [1, 2, 4, 8, 16]}, limit=16, seed=135,
                            keep=lambda c: c["BLOCK_C"] <= _next_pow2(channels)
                            and 32 * c["num_warps"] <= c["BLOCK_P"] * c["BLOCK_C"] <= 128 * 32 * c["num_warps"])

    def inputs(rng):
        return {"x": _rand(rng, (images, height, width, channels), dtype),
                "cols": np.empty((pixels, 9 * channels), _np_dtype(dtype))}

    def reference(x):
        padded = np.pad(_f32(x["x"]).astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
        taps = [padded[:, kh:kh + height, kw:kw + width] for kh in range(3) for kw in range(3)]
        return {"cols": np.stack(taps, axis=3).reshape(pixels, 9 * channels)}

    return Case("holdout13_im2col", name, "holdout13", im2col3x3_kernel,
                {"N": images, "H": height, "W": width, "C": channels}, dtype, configs, inputs, ("cols",),
                lambda x, cfg: (x["x"], x["cols"], pixels, height, width, channels),
                lambda cfg: (math.ceil(pixels / cfg["BLOCK_P"]), math.ceil(channels / cfg["BLOCK_C"])), reference,
                tolerance=0.0, min_bytes=10.0 * _itemsize(dtype) * pixels * channels)


def holdout13_cases() -> list[Case]:
    return [
        w4a16_case("holdout13_w4a16_fp16_16x4096x4096", 16, 4096, 4096, "fp16"),
        w4a16_case("holdout13_w4a16_bf16_500x2000x4096", 500, 2000, 4096, "bf16"),
        sliding_window_case("holdout13_sliding_window_fp16_b2_h16_s4096_d64", 2, 16, 4096, 64, "fp16"),
        sliding_window_case("holdout13_sliding_window_bf16_b1_h16_s2000_d128", 1, 16, 2000, 128, "bf16"),
        flip_cast_case("holdout13_flip_cast_fp32_to_bf16_4096x5000", 4096, 5000, "fp32", "bf16"),
        flip_cast_case("holdout13_flip_cast_fp16_to_fp32_16384x3001", 16384, 3001, "fp16", "fp32"),
        selective_scan_case("holdout13_selective_scan_fp16_b4_t1024_c4096", 4, 1024, 4096, "fp16"),
        selective_scan_case("holdout13_selective_scan_bf16_b2_t2048_c1500", 2, 2048, 1500, "bf16"),
        im2col_case("holdout13_im2col_fp16_n8_56x56_c64", 8, 56, 56, 64, "fp16"),
        im2col_case("holdout13_im2col_bf16_n4_28x28_c96", 4, 28, 28, 96, "bf16"),
    ]
