"""The cost-model sweep's cases: shapes, config spaces, inputs and references of sweep_kernels' kernels.

Shapes are split into a calibration set (parameters may be fitted on it) and a validation set (never
fitted on): `Case.split`. Every case builds its inputs with numpy from a seed; `reference` gives the
expected outputs, so each config's GPU output is checked before it is timed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from sweep_kernels import (
    add_kernel,
    add_rmsnorm_kernel,
    attention_kernel,
    bmm_kernel,
    colmax_kernel,
    colsum_atomic_kernel,
    colsum_kernel,
    cumsum_kernel,
    dropout_kernel,
    embedding_kernel,
    gelu_tanh_kernel,
    gemv_kernel,
    layernorm_kernel,
    layernorm_looped_kernel,
    linear_act_kernel,
    logsumexp_kernel,
    matmul_kernel,
    paged_decode_kernel,
    rmsnorm_kernel,
    rope_inline_kernel,
    rope_kernel,
    rowsum_kernel,
    softmax_kernel,
    softmax_persistent_kernel,
    swiglu_kernel,
    transpose_kernel,
)
from triton_twin import library_kernel

# --- cases -----------------------------------------------------------------------------------------

NP_DTYPES = {"fp16": np.float16, "fp32": np.float32}


def _np_dtype(name: str):
    if name == "bf16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return NP_DTYPES[name]


@dataclass
class Case:
    """One (kernel, shape, dtype) group: its inputs, launch, reference and configs."""

    family: str
    name: str
    split: str  # "calibration" or "validation"
    kernel: object
    shape: dict
    dtype: str
    configs: list[dict]
    inputs: Callable[[np.random.Generator], dict[str, np.ndarray]]
    outputs: tuple[str, ...]  # names in inputs() that the kernel writes
    args: Callable[[dict, dict], tuple]
    grid: Callable[[dict], tuple]
    reference: Callable[[dict], dict[str, np.ndarray]]
    tolerance: float = 2e-2
    flops: float = 0.0
    min_bytes: float = 0.0
    extra: dict = field(default_factory=dict)

    @property
    def key(self) -> str:
        return self.name


def _itemsize(name: str) -> int:
    return np.dtype(_np_dtype(name)).itemsize


def _rand(rng, shape, dtype, scale=1.0):
    return (rng.standard_normal(shape, dtype=np.float32) * scale).astype(_np_dtype(dtype))


def _f32(a):
    return np.asarray(a, dtype=np.float32)


def _launch_options(cfg: dict) -> dict:
    return {k: v for k, v in cfg.items() if k in ("num_warps", "num_stages")}


def _constexprs(cfg: dict, launch_only: tuple[str, ...] = ()) -> dict:
    return {k: v for k, v in cfg.items() if k not in ("num_warps", "num_stages") + launch_only}


def _grid_configs(space: dict[str, list], limit: int | None = None, seed: int = 0, keep=None) -> list[dict]:
    """Every combination of `space` that `keep` accepts; at most `limit` of them, chosen by seed."""
    names = list(space)
    combos = [dict(zip(names, values)) for values in np.array(np.meshgrid(*[space[n] for n in names],
                                                                           indexing="ij")).reshape(len(names), -1).T]
    combos = [{k: int(v) for k, v in c.items()} for c in combos]
    if keep is not None:
        combos = [c for c in combos if keep(c)]
    if limit is not None and len(combos) > limit:
        pick = np.random.default_rng(seed).choice(len(combos), size=limit, replace=False)
        combos = [combos[i] for i in sorted(pick)]
    return combos


MATMUL_CONFIGS = [
    # Triton tutorial 03's CUDA list and neighbours: tile shapes x warps x stages
    *_grid_configs({"BLOCK_M": [64, 128, 256], "BLOCK_N": [64, 128, 256], "BLOCK_K": [32, 64],
                    "GROUP_M": [8], "num_warps": [4, 8], "num_stages": [3, 4]}, limit=18, seed=1,
                   keep=lambda c: c["BLOCK_M"] * c["BLOCK_N"] <= 256 * 128),
    *_grid_configs({"BLOCK_M": [16, 32, 64], "BLOCK_N": [32, 64, 128], "BLOCK_K": [32, 64, 128],
                    "GROUP_M": [1, 8], "num_warps": [2, 4], "num_stages": [2, 3, 5]}, limit=8, seed=2),
]
SKINNY_CONFIGS = _grid_configs({"BLOCK_M": [16, 32, 64], "BLOCK_N": [32, 64, 128, 256], "BLOCK_K": [64, 128, 256],
                                "GROUP_M": [1], "num_warps": [2, 4, 8], "num_stages": [2, 3, 4]}, limit=24, seed=3,
                               keep=lambda c: c["BLOCK_N"] * c["BLOCK_K"] <= 128 * 256)


def matmul_case(name, split, m, n, k, dtype, configs, b_kmajor=False):
    """C = A @ B; b_kmajor stores B as [N, K] (a linear layer's weight: C = A @ W.T)."""
    def inputs(rng):
        return {"a": _rand(rng, (m, k), dtype), "b": _rand(rng, (n, k) if b_kmajor else (k, n), dtype),
                "c": np.empty((m, n), dtype=_np_dtype(dtype))}

    def args(x, cfg):
        b_strides = (1, k) if b_kmajor else (n, 1)
        return (x["a"], x["b"], x["c"], m, n, k, k, 1, *b_strides, n, 1)

    def grid(cfg):
        return (math.ceil(m / cfg["BLOCK_M"]) * math.ceil(n / cfg["BLOCK_N"]),)

    def reference(x):
        return {"c": _f32(x["a"]) @ (_f32(x["b"]).T if b_kmajor else _f32(x["b"]))}

    size = _itemsize(dtype)
    return Case("matmul", name, split, matmul_kernel, {"M": m, "N": n, "K": k}, dtype, configs, inputs, ("c",),
                args, grid, reference, tolerance=2e-2, flops=2.0 * m * n * k, min_bytes=size * (m * k + k * n + m * n))


ROW_WARPS = [1, 2, 4, 8, 16, 32]


def _row_case(family, kernel, name, split, rows, cols, dtype, extra_inputs, args, reference, configs=None):
    block = 1 << (cols - 1).bit_length()

    def inputs(rng):
        base = {"x": _rand(rng, (rows, cols), dtype), "out": np.empty((rows, cols), dtype=_np_dtype(dtype))}
        base.update(extra_inputs(rng))
        return base

    configs = configs or [{"BLOCK": block, "num_warps": w} for w in ROW_WARPS]
    size = _itemsize(dtype)
    return Case(family, name, split, kernel, {"rows": rows, "cols": cols}, dtype, configs, inputs, ("out",),
                args, lambda cfg: (rows,), reference, tolerance=1e-2, min_bytes=2.0 * size * rows * cols)


def softmax_case(name, split, rows, cols, dtype):
    def reference(x):
        v = _f32(x["x"])
        e = np.exp(v - v.max(axis=1, keepdims=True))
        return {"out": e / e.sum(axis=1, keepdims=True)}

    return _row_case("softmax", softmax_kernel, name, split, rows, cols, dtype, lambda rng: {},
                     lambda x, cfg: (x["out"], x["x"], cols), reference)


def rmsnorm_case(name, split, rows, cols, dtype):
    def reference(x):
        v = _f32(x["x"])
        return {"out": v / np.sqrt((v * v).mean(axis=1, keepdims=True) + 1e-6) * _f32(x["w"])}

    return _row_case("rmsnorm", rmsnorm_kernel, name, split, rows, cols, dtype,
                     lambda rng: {"w": _rand(rng, (cols,), dtype)},
                     lambda x, cfg: (x["out"], x["x"], x["w"], cols, 1e-6), reference)


def layernorm_case(name, split, rows, cols, dtype):
    def reference(x):
        v = _f32(x["x"])
        mu = v.mean(axis=1, keepdims=True)
        var = ((v - mu) ** 2).mean(axis=1, keepdims=True)
        return {"out": (v - mu) / np.sqrt(var + 1e-5) * _f32(x["w"]) + _f32(x["b"])}

    configs = _grid_configs({"BLOCK": [256, 512, 1024, 2048, 4096, 8192], "num_warps": [1, 2, 4, 8, 16]},
                            keep=lambda c: c["BLOCK"] <= max(256, 1 << (cols - 1).bit_length()))
    return _row_case("layernorm", layernorm_kernel, name, split, rows, cols, dtype,
                     lambda rng: {"w": _rand(rng, (cols,), dtype), "b": _rand(rng, (cols,), dtype)},
                     lambda x, cfg: (x["out"], x["x"], x["w"], x["b"], cols, 1e-5), reference, configs)


ELEMENTWISE_CONFIGS = _grid_configs({"BLOCK": [256, 1024, 4096, 16384], "num_warps": [1, 2, 4, 8, 16]},
                                    keep=lambda c: c["BLOCK"] >= 32 * c["num_warps"])


def add_case(name, split, n, dtype):
    def inputs(rng):
        return {"x": _rand(rng, (n,), dtype), "y": _rand(rng, (n,), dtype), "out": np.empty(n, _np_dtype(dtype))}

    size = _itemsize(dtype)
    return Case("elementwise", name, split, add_kernel, {"n": n}, dtype, ELEMENTWISE_CONFIGS, inputs, ("out",),
                lambda x, cfg: (x["x"], x["y"], x["out"], n), lambda cfg: (math.ceil(n / cfg["BLOCK"]),),
                lambda x: {"out": _f32(x["x"]) + _f32(x["y"])}, tolerance=1e-2, min_bytes=3.0 * size * n)


def swiglu_case(name, split, n, dtype):
    def inputs(rng):
        return {"g": _rand(rng, (n,), dtype), "u": _rand(rng, (n,), dtype), "out": np.empty(n, _np_dtype(dtype))}

    def reference(x):
        g = _f32(x["g"])
        return {"out": g / (1 + np.exp(-g)) * _f32(x["u"])}

    size = _itemsize(dtype)
    return Case("elementwise", name, split, swiglu_kernel, {"n": n}, dtype, ELEMENTWISE_CONFIGS, inputs, ("out",),
                lambda x, cfg: (x["g"], x["u"], x["out"], n), lambda cfg: (math.ceil(n / cfg["BLOCK"]),),
                reference, tolerance=1e-2, min_bytes=3.0 * size * n)


TILE2D_CONFIGS = _grid_configs({"BLOCK_M": [16, 32, 64, 128], "BLOCK_N": [16, 32, 64, 128], "num_warps": [2, 4, 8]},
                               limit=16, seed=4)


def transpose_case(name, split, m, n, dtype):
    def inputs(rng):
        return {"x": _rand(rng, (m, n), dtype), "out": np.empty((n, m), _np_dtype(dtype))}

    size = _itemsize(dtype)
    return Case("transpose", name, split, transpose_kernel, {"M": m, "N": n}, dtype, TILE2D_CONFIGS, inputs, ("out",),
                lambda x, cfg: (x["x"], x["out"], m, n),
                lambda cfg: (math.ceil(m / cfg["BLOCK_M"]), math.ceil(n / cfg["BLOCK_N"])),
                lambda x: {"out": _f32(x["x"]).T}, tolerance=1e-6, min_bytes=2.0 * size * m * n)


REDUCE_CONFIGS = _grid_configs({"BLOCK_M": [1, 4, 16, 64], "BLOCK_N": [64, 256, 1024], "num_warps": [1, 4, 8]},
                               limit=16, seed=5, keep=lambda c: c["BLOCK_M"] * c["BLOCK_N"] <= 16384)


def rowsum_case(name, split, m, n, dtype):
    def inputs(rng):
        return {"x": _rand(rng, (m, n), dtype), "out": np.empty(m, np.float32)}

    size = _itemsize(dtype)
    return Case("reduction", name, split, rowsum_kernel, {"M": m, "N": n}, dtype, REDUCE_CONFIGS, inputs, ("out",),
                lambda x, cfg: (x["x"], x["out"], m, n), lambda cfg: (math.ceil(m / cfg["BLOCK_M"]),),
                lambda x: {"out": _f32(x["x"]).sum(axis=1)}, tolerance=1e-3, min_bytes=size * m * n)


COLSUM_CONFIGS = _grid_configs({"BLOCK_M": [4, 16, 64], "BLOCK_N": [32, 128, 512], "num_warps": [1, 4, 8]},
                               limit=14, seed=6, keep=lambda c: c["BLOCK_M"] * c["BLOCK_N"] <= 16384)


def colsum_case(name, split, m, n, dtype):
    def inputs(rng):
        return {"x": _rand(rng, (m, n), dtype), "out": np.empty(n, np.float32)}

    size = _itemsize(dtype)
    return Case("reduction", name, split, colsum_kernel, {"M": m, "N": n}, dtype, COLSUM_CONFIGS, inputs, ("out",),
                lambda x, cfg: (x["x"], x["out"], m, n), lambda cfg: (math.ceil(n / cfg["BLOCK_N"]),),
                lambda x: {"out": _f32(x["x"]).sum(axis=0)}, tolerance=1e-3, min_bytes=size * m * n)


ATTENTION_CONFIGS = _grid_configs({"BLOCK_M": [32, 64, 128], "BLOCK_N": [32, 64, 128], "num_warps": [4, 8],
                                   "num_stages": [1, 2, 3]}, limit=16, seed=7)


def attention_case(name, split, bh, seq, d, dtype):
    def inputs(rng):
        return {"q": _rand(rng, (bh, seq, d), dtype), "k": _rand(rng, (bh, seq, d), dtype),
                "v": _rand(rng, (bh, seq, d), dtype), "o": np.empty((bh, seq, d), _np_dtype(dtype))}

    def reference(x):
        q, k, v = _f32(x["q"]), _f32(x["k"]), _f32(x["v"])
        s = q @ k.transpose(0, 2, 1) / math.sqrt(d)
        s = np.where(np.tril(np.ones((seq, seq), bool)), s, -np.inf)
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        return {"o": (p / p.sum(axis=-1, keepdims=True)) @ v}

    return Case("attention", name, split, attention_kernel, {"BH": bh, "S": seq, "D": d}, dtype,
                [{"HEAD_DIM": d, **c} for c in ATTENTION_CONFIGS], inputs, ("o",),
                lambda x, cfg: (x["q"], x["k"], x["v"], x["o"], seq, 1.0 / math.sqrt(d)),
                lambda cfg: (math.ceil(seq / cfg["BLOCK_M"]), bh), reference, tolerance=2e-2,
                flops=2.0 * bh * seq * seq * d, min_bytes=4.0 * 2 * bh * seq * d)


DECODE_CONFIGS = _grid_configs({"BLOCK_N": [16, 32, 64, 128, 256], "num_warps": [1, 2, 4, 8]}, limit=14, seed=8)
PAGE = 16


def paged_decode_case(name, split, batch, heads, kv_heads, d, mean_len, dtype):
    def inputs(rng):
        lens = rng.integers(mean_len // 2, mean_len * 3 // 2, size=batch).astype(np.int32)
        pages = -(-lens // PAGE)
        max_pages = int(pages.max())
        table = np.zeros((batch, max_pages), np.int32)
        order = rng.permutation(int(pages.sum())).astype(np.int32)
        at = 0
        for b in range(batch):
            table[b, :pages[b]] = order[at:at + pages[b]]
            at += pages[b]
        total = int(pages.sum())
        return {"q": _rand(rng, (batch, heads, d), dtype), "k": _rand(rng, (total, PAGE, kv_heads, d), dtype),
                "v": _rand(rng, (total, PAGE, kv_heads, d), dtype), "table": table, "lens": lens,
                "o": np.empty((batch, heads, d), _np_dtype(dtype))}

    def args(x, cfg):
        return (x["q"], x["k"], x["v"], x["table"], x["lens"], x["o"], 1.0 / math.sqrt(d), x["table"].shape[1],
                heads, kv_heads)

    def reference(x):
        out = np.zeros((batch, heads, d), np.float32)
        group = heads // kv_heads
        for b in range(batch):
            n = int(x["lens"][b])
            rows = (x["table"][b, np.arange(n) // PAGE] * PAGE + np.arange(n) % PAGE)
            for h in range(heads):
                k = _f32(x["k"].reshape(-1, kv_heads, d)[rows, h // group])
                v = _f32(x["v"].reshape(-1, kv_heads, d)[rows, h // group])
                s = k @ _f32(x["q"][b, h]) / math.sqrt(d)
                p = np.exp(s - s.max())
                out[b, h] = p @ v / p.sum()
        return {"o": out}

    size = _itemsize(dtype)
    return Case("paged_decode", name, split, paged_decode_kernel,
                {"B": batch, "H": heads, "HKV": kv_heads, "D": d, "len": mean_len}, dtype,
                [{"HEAD_DIM": d, "PAGE": PAGE, **c} for c in DECODE_CONFIGS], inputs, ("o",), args,
                lambda cfg: (batch, heads), reference, tolerance=2e-2,
                min_bytes=2.0 * size * batch * mean_len * kv_heads * d)


LIB_ROW_CONFIGS = _grid_configs({"ROWS": [1, 2, 4, 8], "num_warps": [1, 2, 4, 8, 16]},
                                keep=lambda c: c["ROWS"] <= 2 * c["num_warps"])


def lib_rmsnorm_case(name, split, rows, cols, dtype):
    """The library's RMSNorm (kernels/norm.py), 1 + w form, several rows per program."""
    block = 1 << (cols - 1).bit_length()

    def inputs(rng):
        return {"x": _rand(rng, (rows, cols), dtype), "w": _rand(rng, (cols,), dtype, 0.1),
                "out": np.empty((rows, cols), _np_dtype(dtype))}

    def reference(x):
        v = _f32(x["x"])
        return {"out": v / np.sqrt((v * v).mean(axis=1, keepdims=True) + 1e-6) * (1 + _f32(x["w"]))}

    size = _itemsize(dtype)
    return Case("lib_rmsnorm", name, split, library_kernel("kernels/norm.py", "_rmsnorm_kernel"),
                {"rows": rows, "cols": cols}, dtype,
                [{"HAS_RESIDUAL": False, "ZERO_CENTERED": True, "BLOCK_N": block, **c} for c in LIB_ROW_CONFIGS],
                inputs, ("out",), lambda x, cfg: (x["x"], x["x"], x["w"], x["out"], x["out"], rows, cols, 1e-6),
                lambda cfg: (math.ceil(rows / cfg["ROWS"]),), reference, tolerance=1e-2,
                min_bytes=2.0 * size * rows * cols)


GATED_CONFIGS = _grid_configs({"ROWS": [1, 4, 16, 64], "num_warps": [1, 2, 4, 8]})


def lib_gated_rmsnorm_case(name, split, rows, cols, dtype):
    """The library's gated RMSNorm of the Gated DeltaNet output: 128-wide heads, silu(z) gate."""
    block = 1 << (cols - 1).bit_length()

    def inputs(rng):
        return {"x": _rand(rng, (rows, cols), dtype), "z": _rand(rng, (rows, cols), dtype),
                "w": _rand(rng, (cols,), dtype), "out": np.empty((rows, cols), _np_dtype(dtype))}

    def reference(x):
        v, z = _f32(x["x"]), _f32(x["z"])
        return {"out": v / np.sqrt((v * v).mean(axis=1, keepdims=True) + 1e-6) * _f32(x["w"]) * z / (1 + np.exp(-z))}

    size = _itemsize(dtype)
    return Case("lib_gated_rmsnorm", name, split, library_kernel("kernels/norm.py", "_gated_rmsnorm_kernel"),
                {"rows": rows, "cols": cols}, dtype, [{"BLOCK_N": block, **c} for c in GATED_CONFIGS], inputs,
                ("out",), lambda x, cfg: (x["x"], x["z"], x["w"], x["out"], rows, cols, 1e-6),
                lambda cfg: (math.ceil(rows / cfg["ROWS"]),), reference, tolerance=1e-2,
                min_bytes=3.0 * size * rows * cols)


SWIGLU_GEMM_CONFIGS = _grid_configs({"BLOCK_M": [16, 32, 64, 128], "BLOCK_N": [32, 64, 128], "BLOCK_K": [32, 64],
                                     "GROUP_M": [8], "num_warps": [4, 8], "num_stages": [2, 3, 4]}, limit=22, seed=9)


def lib_swiglu_case(name, split, m, n, k, dtype):
    """The library's fused SwiGLU up-projection (kernels/ffn.py): two accumulators share the x tile."""
    def inputs(rng):
        return {"x": _rand(rng, (m, k), dtype), "wg": _rand(rng, (k, n), dtype, 0.05),
                "wu": _rand(rng, (k, n), dtype, 0.05), "h": np.empty((m, n), _np_dtype(dtype))}

    def reference(x):
        g = _f32(x["x"]) @ _f32(x["wg"])
        return {"h": g / (1 + np.exp(-g)) * (_f32(x["x"]) @ _f32(x["wu"]))}

    def args(x, cfg):
        return (x["x"], x["wg"], x["wu"], x["h"], m, n, k, k, 1, n, 1, n, 1, n, 1)

    return Case("lib_swiglu", name, split, library_kernel("kernels/ffn.py", "swiglu_kernel"),
                {"M": m, "N": n, "K": k}, dtype, [{"PRECISION": "tf32", **c} for c in SWIGLU_GEMM_CONFIGS],
                inputs, ("h",), args, lambda cfg: (math.ceil(m / cfg["BLOCK_M"]) * math.ceil(n / cfg["BLOCK_N"]),),
                reference, tolerance=3e-2, flops=4.0 * m * n * k, min_bytes=2.0 * (m * k + 2 * k * n + m * n))


def cases() -> list[Case]:
    """Every case of the sweep: calibration and validation shapes of each family, then the held-out kernels."""
    c, v = "calibration", "validation"
    return [
        matmul_case("matmul_fp16_2048", c, 2048, 2048, 2048, "fp16", MATMUL_CONFIGS),
        matmul_case("matmul_bf16_4096x4096x1024", c, 4096, 4096, 1024, "bf16", MATMUL_CONFIGS),
        matmul_case("matmul_fp32_2048", c, 2048, 2048, 2048, "fp32", MATMUL_CONFIGS),
        matmul_case("matmul_fp16_skinny_m16", c, 16, 4096, 4096, "fp16", SKINNY_CONFIGS),
        matmul_case("matmul_bf16_kheavy", c, 512, 512, 16384, "bf16", MATMUL_CONFIGS),
        matmul_case("matmul_fp16_4096", v, 4096, 4096, 4096, "fp16", MATMUL_CONFIGS),
        matmul_case("matmul_bf16_3072x2048x4096", v, 3072, 2048, 4096, "bf16", MATMUL_CONFIGS),
        matmul_case("matmul_fp32_1024x4096x2048", v, 1024, 4096, 2048, "fp32", MATMUL_CONFIGS),
        matmul_case("matmul_bf16_skinny_m64", v, 64, 8192, 4096, "bf16", SKINNY_CONFIGS),
        matmul_case("matmul_fp16_skinny_m1", v, 1, 4096, 4096, "fp16", SKINNY_CONFIGS),
        softmax_case("softmax_fp32_4096x1024", c, 4096, 1024, "fp32"),
        softmax_case("softmax_fp16_8192x4096", c, 8192, 4096, "fp16"),
        softmax_case("softmax_fp32_2048x16384", c, 2048, 16384, "fp32"),
        softmax_case("softmax_fp16_4096x2000", v, 4096, 2000, "fp16"),
        softmax_case("softmax_fp32_1024x32768", v, 1024, 32768, "fp32"),
        softmax_case("softmax_fp32_16384x512", v, 16384, 512, "fp32"),
        rmsnorm_case("rmsnorm_fp16_8192x4096", c, 8192, 4096, "fp16"),
        rmsnorm_case("rmsnorm_bf16_4096x8192", c, 4096, 8192, "bf16"),
        rmsnorm_case("rmsnorm_fp32_16384x1024", v, 16384, 1024, "fp32"),
        rmsnorm_case("rmsnorm_bf16_2048x12288", v, 2048, 12288, "bf16"),
        layernorm_case("layernorm_fp16_4096x4096", c, 4096, 4096, "fp16"),
        layernorm_case("layernorm_fp32_2048x10000", v, 2048, 10000, "fp32"),
        add_case("add_fp32_16M", c, 1 << 24, "fp32"),
        swiglu_case("swiglu_bf16_16M", c, 1 << 24, "bf16"),
        add_case("add_fp16_5M", v, 5_000_000, "fp16"),
        swiglu_case("swiglu_fp16_64M", v, 1 << 26, "fp16"),
        transpose_case("transpose_fp32_4096", c, 4096, 4096, "fp32"),
        transpose_case("transpose_fp16_8192x2048", v, 8192, 2048, "fp16"),
        rowsum_case("rowsum_fp32_8192x4096", c, 8192, 4096, "fp32"),
        colsum_case("colsum_fp32_4096x8192", c, 4096, 8192, "fp32"),
        rowsum_case("rowsum_fp16_32768x1000", v, 32768, 1000, "fp16"),
        colsum_case("colsum_bf16_16384x2048", v, 16384, 2048, "bf16"),
        attention_case("attention_fp16_d64_s2048", c, 32, 2048, 64, "fp16"),
        attention_case("attention_fp16_d128_s1024", c, 32, 1024, 128, "fp16"),
        attention_case("attention_bf16_d128_s2048", v, 16, 2048, 128, "bf16"),
        attention_case("attention_fp16_d64_s4096", v, 16, 4096, 64, "fp16"),
        paged_decode_case("decode_fp16_b32_h32_d128", c, 32, 32, 8, 128, 2048, "fp16"),
        paged_decode_case("decode_bf16_b8_h16_d128", v, 8, 16, 2, 128, 4096, "bf16"),
        paged_decode_case("decode_fp16_b64_h32_d64", v, 64, 32, 4, 64, 1024, "fp16"),
        matmul_case("matmul_fp16_1536x6144x1536", v, 1536, 6144, 1536, "fp16", MATMUL_CONFIGS),
        matmul_case("matmul_fp32_wt_2048", c, 2048, 2048, 2048, "fp32", MATMUL_CONFIGS, b_kmajor=True),
        matmul_case("matmul_bf16_wt_2048x6144x2048", v, 2048, 6144, 2048, "bf16", MATMUL_CONFIGS, b_kmajor=True),
        matmul_case("matmul_fp32_wt_1024x3072x4096", v, 1024, 3072, 4096, "fp32", MATMUL_CONFIGS, b_kmajor=True),
        attention_case("attention_fp16_d128_s4096", v, 8, 4096, 128, "fp16"),
        lib_rmsnorm_case("lib_rmsnorm_bf16_16384x2048", c, 16384, 2048, "bf16"),
        lib_rmsnorm_case("lib_rmsnorm_bf16_4096x5120", v, 4096, 5120, "bf16"),
        lib_rmsnorm_case("lib_rmsnorm_fp16_32768x1024", v, 32768, 1024, "fp16"),
        lib_gated_rmsnorm_case("lib_gated_rmsnorm_bf16_65536x128", c, 65536, 128, "bf16"),
        lib_gated_rmsnorm_case("lib_gated_rmsnorm_fp16_131072x128", v, 131072, 128, "fp16"),
        lib_swiglu_case("lib_swiglu_bf16_2048x6144x2048", c, 2048, 6144, 2048, "bf16"),
        lib_swiglu_case("lib_swiglu_bf16_m32_n6144_k2048", v, 32, 6144, 2048, "bf16"),
        lib_swiglu_case("lib_swiglu_fp16_1024x4096x4096", v, 1024, 4096, 4096, "fp16"),
        # measured in December 2026: the shapes issue 12 names, rows that outgrow the L2, more attention
        layernorm_case("layernorm_fp16_8192x8192", v, 8192, 8192, "fp16"),
        layernorm_case("layernorm_bf16_4096x12288", v, 4096, 12288, "bf16"),
        softmax_case("softmax_fp16_4096x16384", v, 4096, 16384, "fp16"),
        softmax_case("softmax_fp32_2048x12288", v, 2048, 12288, "fp32"),
        rmsnorm_case("rmsnorm_fp16_8192x8192", v, 8192, 8192, "fp16"),
        matmul_case("matmul_fp16_8192x8192x1024", v, 8192, 8192, 1024, "fp16", MATMUL_CONFIGS),
        matmul_case("matmul_fp16_16384x1024x4096", v, 16384, 1024, 4096, "fp16", MATMUL_CONFIGS),
        matmul_case("matmul_fp32_4096", v, 4096, 4096, 4096, "fp32", MATMUL_CONFIGS),
        matmul_case("matmul_bf16_skinny_m32", v, 32, 8192, 8192, "bf16", SKINNY_CONFIGS),
        attention_case("attention_fp16_d128_bh32_s4096", v, 32, 4096, 128, "fp16"),
        attention_case("attention_bf16_d64_bh64_s4096", v, 64, 4096, 64, "bf16"),
        add_case("add_fp32_64M", v, 1 << 26, "fp32"),
    ] + holdout_cases() + holdout2_cases() + holdout3_cases()


# --- held-out kernels (split "holdout"): scored only at the end, never fitted on or looked at while modeling

def gelu_case(name, n, dtype):
    def inputs(rng):
        return {"x": _rand(rng, (n,), dtype), "out": np.empty(n, _np_dtype(dtype))}

    def reference(x):
        v = _f32(x["x"])
        return {"out": 0.5 * v * (1 + np.tanh(0.7978845608 * (v + 0.044715 * v ** 3)))}

    size = _itemsize(dtype)
    return Case("holdout_gelu", name, "holdout", gelu_tanh_kernel, {"n": n}, dtype, ELEMENTWISE_CONFIGS, inputs,
                ("out",), lambda x, cfg: (x["x"], x["out"], n), lambda cfg: (math.ceil(n / cfg["BLOCK"]),),
                reference, tolerance=1e-2, min_bytes=2.0 * size * n)


LSE_CONFIGS = _grid_configs({"BLOCK": [256, 1024, 4096, 16384], "num_warps": [1, 2, 4, 8, 16]},
                            keep=lambda c: c["BLOCK"] >= 32 * c["num_warps"])


def logsumexp_case(name, rows, cols, dtype):
    def inputs(rng):
        return {"x": _rand(rng, (rows, cols), dtype, 4.0), "out": np.empty(rows, np.float32)}

    def reference(x):
        v = _f32(x["x"]).astype(np.float64)
        top = v.max(axis=1)
        return {"out": top + np.log(np.exp(v - top[:, None]).sum(axis=1))}

    size = _itemsize(dtype)
    return Case("holdout_logsumexp", name, "holdout", logsumexp_kernel, {"rows": rows, "cols": cols}, dtype,
                LSE_CONFIGS, inputs, ("out",), lambda x, cfg: (x["x"], x["out"], cols), lambda cfg: (rows,),
                reference, tolerance=1e-4, min_bytes=size * rows * cols)


ROPE_CONFIGS = _grid_configs({"BLOCK_T": [1, 4, 16, 64], "num_warps": [1, 2, 4, 8]})


def rope_case(name, tokens, heads, d, dtype):
    half = d // 2

    def inputs(rng):
        angles = rng.uniform(0, 2 * np.pi, (tokens, half)).astype(np.float32)
        return {"x": _rand(rng, (tokens, heads, d), dtype), "cos": np.cos(angles), "sin": np.sin(angles),
                "out": np.empty((tokens, heads, d), _np_dtype(dtype))}

    def reference(x):
        v = _f32(x["x"])
        c, s = x["cos"][:, None, :], x["sin"][:, None, :]
        x1, x2 = v[..., :half], v[..., half:]
        return {"out": np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)}

    size = _itemsize(dtype)
    return Case("holdout_rope", name, "holdout", rope_kernel, {"T": tokens, "H": heads, "D": d}, dtype,
                [{"HALF": half, **c} for c in ROPE_CONFIGS], inputs, ("out",),
                lambda x, cfg: (x["x"], x["cos"], x["sin"], x["out"], tokens, heads),
                lambda cfg: (math.ceil(tokens / cfg["BLOCK_T"]), heads), reference, tolerance=1e-2,
                min_bytes=2.0 * size * tokens * heads * d + 8.0 * tokens * half)


CUMSUM_CONFIGS = _grid_configs({"ROWS": [1, 2, 4, 8], "num_warps": [1, 2, 4, 8]})


def cumsum_case(name, rows, cols, dtype):
    block = 1 << (cols - 1).bit_length()

    def inputs(rng):
        return {"x": _rand(rng, (rows, cols), dtype), "out": np.empty((rows, cols), np.float32)}

    size = _itemsize(dtype)
    return Case("holdout_cumsum", name, "holdout", cumsum_kernel, {"rows": rows, "cols": cols}, dtype,
                [{"BLOCK": block, **c} for c in CUMSUM_CONFIGS], inputs, ("out",),
                lambda x, cfg: (x["x"], x["out"], rows, cols), lambda cfg: (math.ceil(rows / cfg["ROWS"]),),
                lambda x: {"out": np.cumsum(_f32(x["x"]).astype(np.float64), axis=1)}, tolerance=1e-4,
                min_bytes=(size + 4.0) * rows * cols)


def holdout_cases() -> list[Case]:
    return [
        gelu_case("holdout_gelu_fp16_12M", 12_000_000, "fp16"),
        gelu_case("holdout_gelu_bf16_30M", 30_000_000, "bf16"),
        logsumexp_case("holdout_lse_fp32_4096x32000", 4096, 32000, "fp32"),
        logsumexp_case("holdout_lse_bf16_1024x151936", 1024, 151936, "bf16"),
        rope_case("holdout_rope_fp16_t8192_h32_d128", 8192, 32, 128, "fp16"),
        rope_case("holdout_rope_bf16_t4096_h16_d64", 4096, 16, 64, "bf16"),
        cumsum_case("holdout_cumsum_fp32_16384x1024", 16384, 1024, "fp32"),
        cumsum_case("holdout_cumsum_fp16_65536x200", 65536, 200, "fp16"),
        matmul_case("holdout_matmul_fp16_1000x3000x1500", "holdout", 1000, 3000, 1500, "fp16", MATMUL_CONFIGS),
        matmul_case("holdout_matmul_bf16_wt_512x11008x4096", "holdout", 512, 11008, 4096, "bf16", SKINNY_CONFIGS,
                    b_kmajor=True),
    ]


# --- second held-out set (split "holdout2"): new kernel sources, measured in December 2026 and scored once, at the
# --- end of the session that made the cost model concurrency-aware

PERSISTENT_CONFIGS = _grid_configs({"PROGRAMS": [132, 264, 528, 1056], "num_warps": [4, 8, 16], "STAGES": [1, 2, 3]},
                                   limit=16, seed=11)


def softmax_persistent_case(name, rows, cols, dtype):
    block = 1 << (cols - 1).bit_length()

    def inputs(rng):
        return {"x": _rand(rng, (rows, cols), dtype), "out": np.empty((rows, cols), _np_dtype(dtype))}

    def reference(x):
        v = _f32(x["x"])
        e = np.exp(v - v.max(axis=1, keepdims=True))
        return {"out": e / e.sum(axis=1, keepdims=True)}

    size = _itemsize(dtype)
    return Case("holdout2_softmax_persistent", name, "holdout2", softmax_persistent_kernel,
                {"rows": rows, "cols": cols}, dtype, [{"BLOCK": block, **c} for c in PERSISTENT_CONFIGS], inputs,
                ("out",), lambda x, cfg: (x["out"], x["x"], rows, cols), lambda cfg: (min(rows, cfg["PROGRAMS"]),),
                reference, tolerance=1e-2, min_bytes=2.0 * size * rows * cols, extra={"launch_only": ("PROGRAMS",)})


def add_rmsnorm_case(name, rows, cols, dtype):
    def inputs(rng):
        return {"x": _rand(rng, (rows, cols), dtype), "r": _rand(rng, (rows, cols), dtype),
                "w": _rand(rng, (cols,), dtype), "out": np.empty((rows, cols), _np_dtype(dtype)),
                "res": np.empty((rows, cols), _np_dtype(dtype))}

    def reference(x):
        h = _f32(x["x"]) + _f32(x["r"])
        return {"res": h, "out": h / np.sqrt((h * h).mean(axis=1, keepdims=True) + 1e-6) * _f32(x["w"])}

    size = _itemsize(dtype)
    block = 1 << (cols - 1).bit_length()
    return Case("holdout2_add_rmsnorm", name, "holdout2", add_rmsnorm_kernel, {"rows": rows, "cols": cols}, dtype,
                [{"BLOCK": block, "num_warps": w} for w in ROW_WARPS], inputs, ("out", "res"),
                lambda x, cfg: (x["x"], x["r"], x["w"], x["out"], x["res"], cols, 1e-6), lambda cfg: (rows,),
                reference, tolerance=2e-2, min_bytes=4.0 * size * rows * cols)


BMM_CONFIGS = [{k: v for k, v in c.items() if k != "GROUP_M"} for c in MATMUL_CONFIGS]


def bmm_case(name, batch, m, n, k, dtype):
    def inputs(rng):
        return {"a": _rand(rng, (batch, m, k), dtype), "b": _rand(rng, (batch, k, n), dtype),
                "c": np.empty((batch, m, n), _np_dtype(dtype))}

    size = _itemsize(dtype)
    return Case("holdout2_bmm", name, "holdout2", bmm_kernel, {"batch": batch, "M": m, "N": n, "K": k}, dtype,
                BMM_CONFIGS, inputs, ("c",), lambda x, cfg: (x["a"], x["b"], x["c"], m, n, k),
                lambda cfg: (math.ceil(m / cfg["BLOCK_M"]) * math.ceil(n / cfg["BLOCK_N"]), batch),
                lambda x: {"c": _f32(x["a"]) @ _f32(x["b"])}, tolerance=2e-2, flops=2.0 * batch * m * n * k,
                min_bytes=size * batch * (m * k + k * n + m * n))


GEMV_CONFIGS = _grid_configs({"BLOCK_N": [1, 4, 16, 64], "BLOCK_K": [128, 256, 512, 1024], "num_warps": [1, 2, 4, 8]},
                             limit=16, seed=12, keep=lambda c: c["BLOCK_N"] * c["BLOCK_K"] <= 16384
                             and c["BLOCK_N"] * c["BLOCK_K"] >= 32 * c["num_warps"])


def gemv_case(name, n, k, dtype):
    def inputs(rng):
        return {"w": _rand(rng, (n, k), dtype, 0.05), "x": _rand(rng, (k,), dtype), "y": np.empty(n, _np_dtype(dtype))}

    size = _itemsize(dtype)
    return Case("holdout2_gemv", name, "holdout2", gemv_kernel, {"N": n, "K": k}, dtype, GEMV_CONFIGS, inputs, ("y",),
                lambda x, cfg: (x["w"], x["x"], x["y"], n, k), lambda cfg: (math.ceil(n / cfg["BLOCK_N"]),),
                lambda x: {"y": _f32(x["w"]) @ _f32(x["x"])}, tolerance=2e-2, flops=2.0 * n * k,
                min_bytes=size * (n * k + k + n))


def rope_inline_case(name, tokens, heads, d, dtype):
    half = d // 2
    theta = 10000.0

    def inputs(rng):
        return {"x": _rand(rng, (tokens, heads, d), dtype), "pos": rng.integers(0, 8192, tokens).astype(np.int32),
                "out": np.empty((tokens, heads, d), _np_dtype(dtype))}

    def reference(x):
        v = _f32(x["x"]).astype(np.float64)
        inv = theta ** (-(np.arange(half) / half))
        angle = x["pos"][:, None].astype(np.float64) * inv[None, :]
        c, s = np.cos(angle)[:, None, :], np.sin(angle)[:, None, :]
        x1, x2 = v[..., :half], v[..., half:]
        return {"out": np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)}

    size = _itemsize(dtype)
    return Case("holdout2_rope_inline", name, "holdout2", rope_inline_kernel, {"T": tokens, "H": heads, "D": d}, dtype,
                [{"HALF": half, **c} for c in ROPE_CONFIGS], inputs, ("out",),
                lambda x, cfg: (x["x"], x["pos"], x["out"], tokens, heads, math.log2(theta)),
                lambda cfg: (math.ceil(tokens / cfg["BLOCK_T"]), heads), reference, tolerance=2e-2,
                min_bytes=2.0 * size * tokens * heads * d)


ATOMIC_COLSUM_CONFIGS = _grid_configs({"BLOCK_M": [16, 64, 256], "BLOCK_N": [32, 128, 512], "num_warps": [1, 4, 8]},
                                      limit=16, seed=13, keep=lambda c: c["BLOCK_M"] * c["BLOCK_N"] <= 32768)


def colsum_atomic_case(name, m, n, dtype):
    def inputs(rng):
        return {"x": _rand(rng, (m, n), dtype), "out": np.zeros(n, np.float32)}

    size = _itemsize(dtype)
    return Case("holdout2_colsum_atomic", name, "holdout2", colsum_atomic_kernel, {"M": m, "N": n}, dtype,
                ATOMIC_COLSUM_CONFIGS, inputs, ("out",), lambda x, cfg: (x["x"], x["out"], m, n),
                lambda cfg: (math.ceil(m / cfg["BLOCK_M"]), math.ceil(n / cfg["BLOCK_N"])),
                lambda x: {"out": _f32(x["x"]).sum(axis=0)}, tolerance=1e-3, min_bytes=size * m * n,
                extra={"zero_outputs": True})


def holdout2_cases() -> list[Case]:
    return [
        softmax_persistent_case("holdout2_softmax_persistent_fp32_8192x1024", 8192, 1024, "fp32"),
        softmax_persistent_case("holdout2_softmax_persistent_fp16_16384x2048", 16384, 2048, "fp16"),
        add_rmsnorm_case("holdout2_add_rmsnorm_bf16_8192x4096", 8192, 4096, "bf16"),
        add_rmsnorm_case("holdout2_add_rmsnorm_fp16_16384x2048", 16384, 2048, "fp16"),
        bmm_case("holdout2_bmm_fp16_b32_512", 32, 512, 512, 512, "fp16"),
        bmm_case("holdout2_bmm_bf16_b8_1024x2048x1024", 8, 1024, 2048, 1024, "bf16"),
        gemv_case("holdout2_gemv_bf16_8192x8192", 8192, 8192, "bf16"),
        gemv_case("holdout2_gemv_fp16_4096x14336", 4096, 14336, "fp16"),
        rope_inline_case("holdout2_rope_inline_fp16_t4096_h32_d128", 4096, 32, 128, "fp16"),
        colsum_atomic_case("holdout2_colsum_atomic_fp32_65536x1024", 65536, 1024, "fp32"),
        colsum_atomic_case("holdout2_colsum_atomic_bf16_32768x4096", 32768, 4096, "bf16"),
    ]


# --- third held-out set (split "holdout3"): new kernel sources, measured once with the model frozen, at the end of
# --- the session that refitted it on the December data

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


ELEMENTWISE3_CONFIGS = _grid_configs({"BLOCK": [256, 512, 1024, 2048, 4096, 8192], "num_warps": [1, 2, 4, 8, 16]},
                                     limit=16, seed=21, keep=lambda c: c["BLOCK"] >= 32 * c["num_warps"])


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


LOOPED_ROW_CONFIGS = _grid_configs({"BLOCK": [256, 512, 1024, 2048, 4096, 8192], "num_warps": [1, 2, 4, 8, 16]},
                                   limit=16, seed=22, keep=lambda c: c["BLOCK"] >= 32 * c["num_warps"])


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


def launch_args(case: Case, arrays: dict, cfg: dict) -> tuple[tuple, dict]:
    """Positional arguments and keyword arguments (constexprs, num_warps, num_stages) of one config."""
    return case.args(arrays, cfg), {**_constexprs(cfg, case.extra.get("launch_only", ())), **_launch_options(cfg)}
