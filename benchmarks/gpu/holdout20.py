"""The twentieth held-out set (split "holdout20"): the library's own Qwen3.5 kernels at Qwen3.5-like shapes, never
measured before — the sampling softmax over a vocabulary (kernels/rows.py, fp32 out at a temperature of 0.7, three
passes over each row in BLOCK-wide chunks), greedy decoding's row argmax (the same row loop, a running best value
and index per lane), LayerNorm with its bias and RMSNorm fused with the residual add in the zero-centred 1 + w form
(kernels/norm.py, ROWS whole rows a program). The kernels run as the library wrote them, through
`triton_twin.library_kernel`. Measured once on the H200 and scored once with the model frozen, never fitted on.
"""

from __future__ import annotations

import math

import numpy as np
from holdout4 import _next_pow2
from holdout5 import unique_max_logits
from sweep_cases import Case, _f32, _grid_configs, _itemsize, _np_dtype, _rand
from triton_twin import library_kernel

SPLIT = "holdout20"
TEMPERATURE = 0.7

# One program per row walking a vocabulary-wide row in BLOCK chunks: whole warps, and at most 128 elements a
# thread of each BLOCK-wide array the loop carries (the running max and sum, or the best value and index).
VOCAB_BLOCK_WARPS = {"BLOCK": [1024, 2048, 4096, 8192, 16384], "num_warps": [1, 2, 4, 8, 16, 32]}


def _vocab_row(c: dict) -> bool:
    return 32 * c["num_warps"] <= c["BLOCK"] <= 128 * 32 * c["num_warps"]


SOFTMAX_ROWS_CONFIGS = _grid_configs(VOCAB_BLOCK_WARPS, limit=16, seed=201, keep=_vocab_row)
ARGMAX_ROWS_CONFIGS = _grid_configs(VOCAB_BLOCK_WARPS, limit=16, seed=202, keep=_vocab_row)


def _whole_row_configs(cols: int, seed: int) -> list[dict]:
    """ROWS whole rows of BLOCK_N = next_pow2(cols) a program (the norms hold a row in one tile): whole warps, at
    most 256 elements a thread."""
    block = _next_pow2(cols)
    configs = _grid_configs({"ROWS": [1, 2, 4, 8, 16], "num_warps": [1, 2, 4, 8, 16]}, limit=16, seed=seed,
                            keep=lambda c: 32 * c["num_warps"] <= c["ROWS"] * block <= 256 * 32 * c["num_warps"])
    return [{"BLOCK_N": block, **c} for c in configs]


def softmax_rows_case(name, rows, vocab, dtype):
    """Sampling: fp32 softmax(logits / T) of each row (`softmax_rows`), the row read three times (max, sum, write)."""
    inv_t = 1.0 / TEMPERATURE

    def inputs(rng):
        return {"x": _rand(rng, (rows, vocab), dtype, 2.0), "out": np.empty((rows, vocab), np.float32)}

    def reference(x):
        z = _f32(x["x"]).astype(np.float64) / TEMPERATURE
        e = np.exp(z - z.max(axis=1, keepdims=True))
        return {"out": e / e.sum(axis=1, keepdims=True)}

    return Case("holdout20_softmax_rows", name, SPLIT, library_kernel("kernels/rows.py", "_softmax_rows_kernel"),
                {"rows": rows, "vocab": vocab, "T": TEMPERATURE}, dtype, SOFTMAX_ROWS_CONFIGS, inputs, ("out",),
                lambda x, cfg: (x["x"], x["out"], vocab, inv_t), lambda cfg: (rows,), reference, tolerance=1e-5,
                min_bytes=(_itemsize(dtype) + 4.0) * rows * vocab)


def argmax_rows_case(name, rows, vocab, dtype):
    """Greedy decoding: the int32 index of each row's maximum (`argmax_rows`)."""
    def inputs(rng):
        return {"x": unique_max_logits(rng, rows, vocab, dtype), "out": np.empty(rows, np.int32)}

    def reference(x):
        return {"out": _f32(x["x"]).argmax(axis=1).astype(np.float64)}

    # tolerance 0: any wrong index is at least 1 / vocab off after the check's division by the largest index
    return Case("holdout20_argmax_rows", name, SPLIT, library_kernel("kernels/rows.py", "_argmax_rows_kernel"),
                {"rows": rows, "vocab": vocab}, dtype, ARGMAX_ROWS_CONFIGS, inputs, ("out",),
                lambda x, cfg: (x["x"], x["out"], vocab), lambda cfg: (rows,), reference, tolerance=0.0,
                min_bytes=_itemsize(dtype) * rows * vocab + 4.0 * rows)


def layernorm_case(name, rows, cols, dtype):
    """LayerNorm with weight and bias (`layernorm`): two-pass variance in fp32, one rounding to the input dtype."""
    def inputs(rng):
        return {"x": _rand(rng, (rows, cols), dtype), "w": _rand(rng, (cols,), dtype), "b": _rand(rng, (cols,), dtype),
                "out": np.empty((rows, cols), _np_dtype(dtype))}

    def reference(x):
        v = _f32(x["x"]).astype(np.float64)
        xc = v - v.mean(axis=1, keepdims=True)
        y = xc / np.sqrt((xc * xc).mean(axis=1, keepdims=True) + 1e-5)
        return {"out": y * _f32(x["w"]).astype(np.float64) + _f32(x["b"]).astype(np.float64)}

    return Case("holdout20_layernorm", name, SPLIT, library_kernel("kernels/norm.py", "_layernorm_kernel"),
                {"rows": rows, "cols": cols}, dtype,
                [{"HAS_BIAS": True, **c} for c in _whole_row_configs(cols, seed=203)], inputs, ("out",),
                lambda x, cfg: (x["x"], x["w"], x["b"], x["out"], rows, cols, 1e-5),
                lambda cfg: (math.ceil(rows / cfg["ROWS"]),), reference, tolerance=1e-2,
                min_bytes=2.0 * _itemsize(dtype) * rows * cols)


def rmsnorm_residual_case(name, rows, cols, dtype):
    """RMSNorm fused with the residual add (`rmsnorm(x, w, residual=r, zero_centered=True)`): h = x + r rounded to
    the dtype is written as the new residual, and out = h * rsqrt(mean(h^2) + eps) * (1 + w)."""
    def inputs(rng):
        return {"x": _rand(rng, (rows, cols), dtype), "res": _rand(rng, (rows, cols), dtype),
                "w": _rand(rng, (cols,), dtype, 0.1), "out": np.empty((rows, cols), _np_dtype(dtype)),
                "res_out": np.empty((rows, cols), _np_dtype(dtype))}

    def reference(x):
        h = (_f32(x["x"]) + _f32(x["res"])).astype(_np_dtype(dtype))
        v = _f32(h).astype(np.float64)
        out = v / np.sqrt((v * v).mean(axis=1, keepdims=True) + 1e-6) * (1 + _f32(x["w"]).astype(np.float64))
        return {"out": out, "res_out": _f32(h)}

    return Case("holdout20_rmsnorm_residual", name, SPLIT, library_kernel("kernels/norm.py", "_rmsnorm_kernel"),
                {"rows": rows, "cols": cols}, dtype,
                [{"HAS_RESIDUAL": True, "ZERO_CENTERED": True, **c} for c in _whole_row_configs(cols, seed=204)],
                inputs, ("out", "res_out"),
                lambda x, cfg: (x["x"], x["res"], x["w"], x["out"], x["res_out"], rows, cols, 1e-6),
                lambda cfg: (math.ceil(rows / cfg["ROWS"]),), reference, tolerance=1e-2,
                min_bytes=4.0 * _itemsize(dtype) * rows * cols)


def holdout20_cases() -> list[Case]:
    return [
        softmax_rows_case("holdout20_softmax_rows_fp32_64x151936", 64, 151936, "fp32"),
        softmax_rows_case("holdout20_softmax_rows_bf16_200x32000", 200, 32000, "bf16"),
        argmax_rows_case("holdout20_argmax_rows_bf16_96x151936", 96, 151936, "bf16"),
        argmax_rows_case("holdout20_argmax_rows_fp32_300x50000", 300, 50000, "fp32"),
        layernorm_case("holdout20_layernorm_bf16_6000x2560", 6000, 2560, "bf16"),
        layernorm_case("holdout20_layernorm_fp16_3000x4000", 3000, 4000, "fp16"),
        rmsnorm_residual_case("holdout20_rmsnorm_residual_bf16_5000x5120", 5000, 5120, "bf16"),
        rmsnorm_residual_case("holdout20_rmsnorm_residual_fp16_8192x2048", 8192, 2048, "fp16"),
    ]
