"""The twenty-first held-out set (split "holdout21"): more of the library's own Qwen3.5 kernels at Qwen3.5-like
shapes, measured right after holdout20 with the same model — partial rotary embedding (kernels/rope.py: head_dim
256, the first 64 dims rotate, NeoX pairing, theta 1e7, cos/sin formed in the kernel in fp64 or gathered from a
vLLM-layout table, the other 192 dims copied), the Gated DeltaNet gates (kernels/deltanet_gates.py: g = -exp(A_log)
* softplus(a + dt_bias), beta = sigmoid(b), fp32 out), the MoE combine (kernels/moe.py: each token's top-k expert
rows gathered from the fp32 expert output, scaled by their routing weights, plus the gated shared expert's row, one
rounding) and the causal depthwise conv1d + SiLU of Gated DeltaNet prefill over packed sequences
(kernels/deltanet_conv.py, KW = 4, with the conv state each sequence leaves). The kernels run as the library wrote
them, through `triton_twin.library_kernel`. Measured once on the H200 and scored once with the model frozen, never
fitted on.
"""

from __future__ import annotations

import math

import numpy as np
from holdout4 import _next_pow2
from sweep_cases import Case, _f32, _grid_configs, _itemsize, _np_dtype, _rand
from triton_twin import library_kernel

SPLIT = "holdout21"

ROPE_THETA = 1e7  # Qwen3.5's published configs (kernels/qwen35/projection.py); exact in fp32, as the kernel needs
PARTIAL_ROTARY = 0.25  # head_dim 256 -> 64 rotary dims
CONV_KW = 4  # Qwen3.5's linear_conv_kernel_dim


# --- rotary embedding ------------------------------------------------------------------------------------------

def rope_case(name, tokens, heads, head_dim, dtype, from_table=False):
    """Qwen3.5's partial NeoX RoPE out of place (`rope(x, positions, head_dim // 4, theta=1e7)`): one program per
    (token, BLOCK_H heads); the 64 rotary dims are rotated in fp32 with cos/sin formed per program from theta in
    fp64 (or, `from_table`, gathered from a [positions, 64] fp32 cat(cos, sin) table), the other dims copied."""
    rot = int(head_dim * PARTIAL_ROTARY)
    half = rot // 2
    block_r, block_d = _next_pow2(rot), _next_pow2(head_dim)
    configs = _grid_configs({"BLOCK_H": [1, 2, 4, 8, 16, 32], "num_warps": [1, 2, 4, 8, 16]}, limit=16, seed=2001,
                            keep=lambda c: c["BLOCK_H"] <= heads and 32 * c["num_warps"] <= c["BLOCK_H"] * block_r)
    fixed = {"HEAD_DIM": head_dim, "ROT": rot, "NEOX": True, "FROM_TABLE": from_table, "MROPE": False, "S1": 0,
             "S2": 0, "COPY_REST": rot < head_dim, "BLOCK_R": block_r, "BLOCK_D": block_d}

    def angles(pos):
        inv_freq = ROPE_THETA ** (-np.arange(0, rot, 2, dtype=np.float64) / rot)
        return pos.astype(np.float64)[:, None] * inv_freq  # [tokens, half]

    def inputs(rng):
        # one prefill chunk: consecutive positions from a random start
        pos = (int(rng.integers(0, 8192)) + np.arange(tokens)).astype(np.int32)
        x = {"x": _rand(rng, (tokens, heads, head_dim), dtype), "pos": pos,
             "out": np.empty((tokens, heads, head_dim), _np_dtype(dtype))}
        if from_table:  # vLLM's layout, rows up to the chunk's end rounded to 64 (RopeTableCache's granularity)
            a = angles(np.arange(-(-(int(pos[-1]) + 1) // 64) * 64))
            x["table"] = np.concatenate([np.cos(a), np.sin(a)], axis=1).astype(np.float32)
        return x

    def reference(x):
        a = angles(x["pos"])
        cos, sin = np.cos(a)[:, None, :], np.sin(a)[:, None, :]
        v = _f32(x["x"]).astype(np.float64)
        out = v.copy()
        lo, hi = v[..., :half], v[..., half:rot]
        out[..., :half] = lo * cos - hi * sin
        out[..., half:rot] = hi * cos + lo * sin
        return {"out": out}

    def args(x, cfg):
        return (x["x"], x["out"], x["pos"], x["table"] if from_table else x["pos"], tokens, heads, ROPE_THETA)

    size = _itemsize(dtype)
    return Case("holdout21_rope", name, SPLIT, library_kernel("kernels/rope.py", "_rope_kernel"),
                {"T": tokens, "H": heads, "D": head_dim, "rot": rot, "table": from_table}, dtype,
                [{**fixed, **c} for c in configs], inputs, ("out",), args,
                lambda cfg: (tokens, math.ceil(heads / cfg["BLOCK_H"])), reference, tolerance=1e-2,
                min_bytes=2.0 * size * tokens * heads * head_dim + 4.0 * tokens + (4.0 * rot * tokens if from_table
                                                                                    else 0.0))


# --- Gated DeltaNet gates --------------------------------------------------------------------------------------

GATES_CONFIGS = _grid_configs({"BLOCK": [128, 256, 512, 1024, 2048, 4096, 8192], "num_warps": [1, 2, 4, 8, 16]},
                              limit=16, seed=2002,
                              keep=lambda c: 32 * c["num_warps"] <= c["BLOCK"] <= 256 * 32 * c["num_warps"])


def gdn_gates_case(name, tokens, heads, dtype):
    """`gdn_gates(a, b, A_log, dt_bias)`: over the flat [tokens * HV] projections, g = -exp(A_log[h]) *
    softplus(a + dt_bias[h]) and beta = sigmoid(b), both fp32; a and b in `dtype`, A_log and dt_bias fp32 [HV]."""
    n = tokens * heads

    def inputs(rng):
        return {"a": _rand(rng, (tokens, heads), dtype, 2.0), "b": _rand(rng, (tokens, heads), dtype, 2.0),
                "A_log": np.log(rng.uniform(1, 16, heads)).astype(np.float32),
                "dt_bias": rng.standard_normal(heads).astype(np.float32),
                "g": np.empty((tokens, heads), np.float32), "beta": np.empty((tokens, heads), np.float32)}

    def reference(x):
        a, b = _f32(x["a"]).astype(np.float64), _f32(x["b"]).astype(np.float64)
        u = a + x["dt_bias"].astype(np.float64)[None, :]
        softplus = np.maximum(u, 0.0) + np.log1p(np.exp(-np.abs(u)))
        return {"g": -np.exp(x["A_log"].astype(np.float64))[None, :] * softplus, "beta": 1.0 / (1.0 + np.exp(-b))}

    return Case("holdout21_gdn_gates", name, SPLIT, library_kernel("kernels/deltanet_gates.py", "gdn_gates_kernel"),
                {"T": tokens, "HV": heads}, dtype, GATES_CONFIGS, inputs, ("g", "beta"),
                lambda x, cfg: (x["a"], x["b"], x["A_log"], x["dt_bias"], x["g"], x["beta"], n, heads),
                lambda cfg: (math.ceil(n / cfg["BLOCK"]),), reference, tolerance=1e-5,
                min_bytes=(2.0 * _itemsize(dtype) + 8.0) * n)


# --- MoE combine -----------------------------------------------------------------------------------------------

# A fp32 accumulator tile carried across the top-k loop: whole warps, at most 128 elements a thread.
COMBINE_CONFIGS = _grid_configs({"BLOCK_M": [1, 2, 4, 8, 16, 32], "BLOCK_H": [64, 128, 256, 512, 1024, 2048],
                                 "num_warps": [1, 2, 4, 8, 16]}, limit=16, seed=2003,
                                keep=lambda c: 32 * c["num_warps"] <= c["BLOCK_M"] * c["BLOCK_H"]
                                <= 128 * 32 * c["num_warps"])


def moe_combine_case(name, tokens, hidden, topk, dtype, shared=False):
    """`moe_combine(y, positions, shared, dtype, row_weights)` (moe_quant's form: expert rows not yet scaled):
    out[m] = sum_j row_w[r] * y[r = pos[m, j]] (+ shared[m]), fp32 accumulation, one rounding to `dtype`. The
    expert output y is fp32 [tokens * topk, hidden]; each token's rows lie scattered over it (a random
    permutation, as moe_align's expert order leaves them)."""
    rows = tokens * topk

    def inputs(rng):
        x = {"y": rng.standard_normal((rows, hidden), dtype=np.float32),
             "pos": rng.permutation(rows).astype(np.int32).reshape(tokens, topk),
             "row_w": rng.uniform(0.01, 1.0, rows).astype(np.float32),
             "out": np.empty((tokens, hidden), _np_dtype(dtype))}
        # the shared expert's row, already scaled by its sigmoid gate; a 1-element stand-in when absent
        x["shared"] = (rng.standard_normal((tokens, hidden), dtype=np.float32) * 0.5 if shared
                       else rng.standard_normal(1, dtype=np.float32))
        return x

    def reference(x):
        pos, row_w = x["pos"].astype(np.int64), x["row_w"].astype(np.float64)
        out = np.zeros((tokens, hidden))
        for j in range(topk):  # one slot at a time: the gathered rows of all slots at once would be 0.5 GB
            out += x["y"][pos[:, j]].astype(np.float64) * row_w[pos[:, j]][:, None]
        if shared:
            out += x["shared"].astype(np.float64)
        return {"out": out}

    def args(x, cfg):
        return (x["y"], x["pos"], x["shared"], x["row_w"], x["out"], tokens, hidden, topk, int(shared), 1)

    return Case("holdout21_moe_combine", name, SPLIT, library_kernel("kernels/moe.py", "_combine_kernel"),
                {"T": tokens, "hidden": hidden, "topk": topk, "shared": shared}, dtype, COMBINE_CONFIGS, inputs,
                ("out",), args,
                lambda cfg: (math.ceil(tokens / cfg["BLOCK_M"]), math.ceil(hidden / cfg["BLOCK_H"])), reference,
                tolerance=1e-2,
                min_bytes=4.0 * rows * hidden + 8.0 * rows + (4.0 * tokens * hidden if shared else 0.0)
                + _itemsize(dtype) * tokens * hidden)


# --- causal conv1d ---------------------------------------------------------------------------------------------

# The fp32 accumulator tile beside each tap's loaded tile: whole warps, at most 128 elements a thread.
CONV_CONFIGS = _grid_configs({"BT": [8, 16, 32, 64, 128], "BD": [32, 64, 128, 256, 512, 1024],
                              "num_warps": [1, 2, 4, 8, 16]}, limit=16, seed=2004,
                             keep=lambda c: 32 * c["num_warps"] <= c["BT"] * c["BD"] <= 128 * 32 * c["num_warps"])


def conv1d_case(name, seqlens, dim, dtype, initial_state=False):
    """`causal_conv1d(x, w, cu_seqlens, initial_state)` of Gated DeltaNet prefill: y[t, c] = silu(sum_j w[c, j] *
    x[t - 3 + j, c]) over packed sequences (cu_seqlens), inputs before a sequence's start from its incoming conv
    state (`initial_state`) or zero; also writes the state each sequence leaves, its last KW - 1 inputs [N, D, 3].
    One program per (BD channels, sequence, BT tokens)."""
    seqlens = tuple(int(s) for s in seqlens)
    n_seq, total, longest = len(seqlens), sum(seqlens), max(seqlens)
    cu = np.concatenate([[0], np.cumsum(seqlens)]).astype(np.int32)
    kw = CONV_KW

    def inputs(rng):
        x = {"x": _rand(rng, (total, dim), dtype), "w": _rand(rng, (dim, kw), dtype, 0.5), "cu": cu.copy(),
             "y": np.empty((total, dim), _np_dtype(dtype)), "final": np.empty((n_seq, dim, kw - 1), _np_dtype(dtype))}
        if initial_state:
            x["s0"] = _rand(rng, (n_seq, dim, kw - 1), dtype)
        return x

    def reference(x):
        v, w = _f32(x["x"]).astype(np.float64), _f32(x["w"]).astype(np.float64)
        y = np.empty((total, dim))
        final = np.empty((n_seq, dim, kw - 1))
        for i in range(n_seq):
            start = (_f32(x["s0"][i]).astype(np.float64).T if initial_state else np.zeros((kw - 1, dim)))
            padded = np.concatenate([start, v[cu[i]:cu[i + 1]]])  # [kw - 1 + L, dim]
            n = seqlens[i]
            acc = sum(w[:, j][None, :] * padded[j:j + n] for j in range(kw))
            y[cu[i]:cu[i + 1]] = acc / (1.0 + np.exp(-acc))
            final[i] = padded[-(kw - 1):].T
        return {"y": y, "final": final}

    def args(x, cfg):
        return (x["x"], x["w"], x["s0"] if initial_state else x["final"], x["y"], x["final"], x["cu"], dim, dim, dim,
                initial_state)

    size = _itemsize(dtype)
    return Case("holdout21_conv1d", name, SPLIT, library_kernel("kernels/deltanet_conv.py", "conv1d_kernel"),
                {"seqlens": list(seqlens), "D": dim, "KW": kw, "initial_state": initial_state}, dtype,
                [{"KW": kw, **c} for c in CONV_CONFIGS], inputs, ("y", "final"), args,
                lambda cfg: (math.ceil(dim / cfg["BD"]), n_seq, max(1, math.ceil(longest / cfg["BT"]))), reference,
                tolerance=1e-2,
                min_bytes=size * (2.0 * total * dim + kw * dim + (kw - 1) * n_seq * dim * (2 if initial_state else 1))
                + 4.0 * (n_seq + 1))


def holdout21_cases() -> list[Case]:
    return [
        rope_case("holdout21_rope_bf16_4096x32x256", 4096, 32, 256, "bf16"),
        rope_case("holdout21_rope_table_fp16_2000x16x256", 2000, 16, 256, "fp16", from_table=True),
        gdn_gates_case("holdout21_gdn_gates_fp32_16384x32", 16384, 32, "fp32"),
        gdn_gates_case("holdout21_gdn_gates_bf16_16384x32", 16384, 32, "bf16"),
        moe_combine_case("holdout21_moe_combine_bf16_4096x2048_k8", 4096, 2048, 8, "bf16"),
        moe_combine_case("holdout21_moe_combine_shared_fp16_3000x4096_k4", 3000, 4096, 4, "fp16", shared=True),
        conv1d_case("holdout21_conv1d_bf16_4096x8192", (4096,), 8192, "bf16"),
        conv1d_case("holdout21_conv1d_state_fp16_1500_2500x6144", (1500, 2500), 6144, "fp16", initial_state=True),
    ]
