"""The cost-model sweep's cases: shapes, config spaces, inputs and references of sweep_kernels' kernels.

Shapes are split into a calibration set (parameters may be fitted on it) and a validation set (never
fitted on): `Case.split`. Every case builds its inputs with numpy from a seed; `reference` gives the
expected outputs, so each config's GPU output is checked before it is timed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np
from sweep_kernels import (
    add_kernel,
    attention_kernel,
    colsum_kernel,
    layernorm_kernel,
    matmul_kernel,
    paged_decode_kernel,
    rmsnorm_kernel,
    rowsum_kernel,
    softmax_kernel,
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
    """Every case of the sweep: calibration and validation shapes of each family, then the held-out kernels and
    the probe sets (streams, rowtiles)."""
    from heldout_cases import heldout_cases  # they build on this module's helpers
    from row_tiles import row_tile_cases
    from streams import stream_cases

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
        # measured in December 2026 (second batch): past a bound that is not a multiple of 16 every load and store
        # moves one element per instruction, 16 bytes apart lane to lane; how those stores reach the L2
        add_case("add_fp32_unaligned_32M", c, (1 << 25) + 1, "fp32"),
        add_case("add_bf16_unaligned_48M", c, 3 * (1 << 24) + 3, "bf16"),
    ] + heldout_cases() + stream_cases() + row_tile_cases()


def in_split(case: Case, split: str) -> Case:
    """Another set's case counted in `split` (a held-out set that measures earlier sets' kernels at new shapes)."""
    return replace(case, split=split)


def launch_args(case: Case, arrays: dict, cfg: dict) -> tuple[tuple, dict]:
    """Positional arguments and keyword arguments (constexprs, num_warps, num_stages) of one config."""
    return case.args(arrays, cfg), {**_constexprs(cfg, case.extra.get("launch_only", ())), **_launch_options(cfg)}
