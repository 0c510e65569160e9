"""The seventeenth held-out set (split "holdout17"): ordinary Triton kernels written after stop 33's model changes
(the block scheduler's rate, 64-bit offsets), measured once on the H200 and scored once with the model frozen, never
fitted on.

A split-K matmul (each program a slice of K, its partial tile added atomically into an fp32 C), a 3x3 convolution
of NHWC images as an implicit GEMM (nine shifted, masked gathers of the input as A, the weights as B), an embedding
bag (the sum of each bag's table rows, bags given by offsets into an index list), GeGLU's backward (three inputs,
two outputs, tanh-approximated GELU) and a CSR sparse matrix-vector product (a row's nonzeros gathered in blocks).
Kernels and cases live together here, one module for the set.
"""

from __future__ import annotations

import math

import numpy as np
from holdout4 import _next_pow2
from holdout13 import _dot_fits
from sweep_cases import Case, _f32, _grid_configs, _itemsize, _np_dtype, _rand
from sweep_kernels import jit, tl

_SQRT_2_OVER_PI = 0.7978845608028654  # sqrt(2 / pi), GELU's tanh approximation
SQRT_2_OVER_PI = tl.constexpr(_SQRT_2_OVER_PI)


@jit
def splitk_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         BLOCK_K: tl.constexpr, SPLIT_K: tl.constexpr):
    """C += A @ B over one of SPLIT_K slices of K per program (grid: output tiles x SPLIT_K), the partial fp32 tile
    added atomically; K is a multiple of SPLIT_K * BLOCK_K, the M and N edges masked."""
    tiles_n = tl.cdiv(N, BLOCK_N)
    pid_m = tl.program_id(0) // tiles_n
    pid_n = tl.program_id(0) % tiles_n
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    span = K // SPLIT_K
    start = tl.program_id(1) * span
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(start, start + span, BLOCK_K):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=(rm < M)[:, None], other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=(rn < N)[None, :], other=0.0)
        acc = tl.dot(a, b, acc)
    mask = (rm < M)[:, None] & (rn < N)[None, :]
    tl.atomic_add(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=mask)


@jit
def conv3x3_kernel(x_ptr, w_ptr, out_ptr, n_pixels, height, width, c_in, c_out, BLOCK_P: tl.constexpr,
                   BLOCK_CO: tl.constexpr, BLOCK_CI: tl.constexpr):
    """A 3x3 convolution (padding 1) of NHWC images x [N, H, W, C_in] by w [3, 3, C_in, C_out] into out [N, H, W,
    C_out], as a GEMM: one program per (BLOCK_P pixels, BLOCK_CO output channels) runs over the nine taps and
    BLOCK_CI input channels at a time, the tap's shifted pixels (zero past the image's edge) as A."""
    p = tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)
    co = tl.program_id(1) * BLOCK_CO + tl.arange(0, BLOCK_CO)
    ci = tl.arange(0, BLOCK_CI)
    image = p // (height * width)
    h = (p // width) % height
    w = p % width
    acc = tl.zeros((BLOCK_P, BLOCK_CO), dtype=tl.float32)
    for tap in range(9):
        hh = h + tap // 3 - 1
        ww = w + tap % 3 - 1
        inside = (p < n_pixels) & (hh >= 0) & (hh < height) & (ww >= 0) & (ww < width)
        src = ((image * height + hh) * width + ww).to(tl.int64) * c_in
        for c in range(0, c_in, BLOCK_CI):
            a = tl.load(x_ptr + src[:, None] + (c + ci)[None, :], mask=inside[:, None], other=0.0)
            b = tl.load(w_ptr + (tap * c_in + c + ci)[:, None] * c_out + co[None, :], mask=(co < c_out)[None, :],
                        other=0.0)
            acc = tl.dot(a, b, acc)
    out = out_ptr + p[:, None].to(tl.int64) * c_out + co[None, :]
    tl.store(out, acc.to(out_ptr.dtype.element_ty), mask=(p < n_pixels)[:, None] & (co < c_out)[None, :])


@jit
def embedding_bag_kernel(table_ptr, indices_ptr, offsets_ptr, out_ptr, dim, BLOCK_I: tl.constexpr,
                         BLOCK_D: tl.constexpr):
    """out[b] = the sum of table[indices[j]] over offsets[b] <= j < offsets[b + 1]: one program per (bag, BLOCK_D
    columns) gathers BLOCK_I of the bag's rows at a time and sums them in fp32."""
    bag = tl.program_id(0)
    cols = tl.program_id(1) * BLOCK_D + tl.arange(0, BLOCK_D)
    first = tl.load(offsets_ptr + bag)
    last = tl.load(offsets_ptr + bag + 1)
    acc = tl.zeros((BLOCK_D,), dtype=tl.float32)
    for start in range(first, last, BLOCK_I):
        j = start + tl.arange(0, BLOCK_I)
        rows = tl.load(indices_ptr + j, mask=j < last, other=0).to(tl.int64)
        inside = (j < last)[:, None] & (cols < dim)[None, :]
        tile = tl.load(table_ptr + rows[:, None] * dim + cols[None, :], mask=inside, other=0.0)
        acc += tl.sum(tile.to(tl.float32), axis=0)
    tl.store(out_ptr + bag.to(tl.int64) * dim + cols, acc.to(out_ptr.dtype.element_ty), mask=cols < dim)


@jit
def geglu_bwd_kernel(g_ptr, u_ptr, dy_ptr, dg_ptr, du_ptr, n, BLOCK: tl.constexpr):
    """Backward of y = gelu_tanh(g) * u: du = dy * gelu_tanh(g), dg = dy * u * gelu_tanh'(g), in fp32."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    g = tl.load(g_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    u = tl.load(u_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    inner = SQRT_2_OVER_PI * (g + 0.044715 * g * g * g)
    t = 2.0 / (1.0 + tl.exp(-2.0 * inner)) - 1.0  # tanh(inner)
    gelu = 0.5 * g * (1.0 + t)
    slope = 0.5 * (1.0 + t) + 0.5 * g * (1.0 - t * t) * SQRT_2_OVER_PI * (1.0 + 3.0 * 0.044715 * g * g)
    tl.store(du_ptr + offs, (dy * gelu).to(du_ptr.dtype.element_ty), mask=mask)
    tl.store(dg_ptr + offs, (dy * u * slope).to(dg_ptr.dtype.element_ty), mask=mask)


@jit
def csr_spmv_kernel(row_ptr, col_ptr, val_ptr, x_ptr, y_ptr, n_rows, ROWS: tl.constexpr, BLOCK_NZ: tl.constexpr):
    """y = A x for A in CSR form (row_ptr, col, val): one program per ROWS rows, each row's nonzeros gathered
    BLOCK_NZ at a time (x[col] read where they point) and summed in fp32."""
    for r in range(ROWS):
        row = tl.program_id(0) * ROWS + r
        if row < n_rows:
            first = tl.load(row_ptr + row)
            last = tl.load(row_ptr + row + 1)
            acc = tl.zeros((BLOCK_NZ,), dtype=tl.float32)
            for start in range(first, last, BLOCK_NZ):
                j = start + tl.arange(0, BLOCK_NZ)
                inside = j < last
                cols = tl.load(col_ptr + j, mask=inside, other=0)
                vals = tl.load(val_ptr + j, mask=inside, other=0.0).to(tl.float32)
                acc += vals * tl.load(x_ptr + cols, mask=inside, other=0.0).to(tl.float32)
            tl.store(y_ptr + row, tl.sum(acc, axis=0))


# --- cases

def _splitk_fits(c):
    return _dot_fits(c) and c["BLOCK_K"] * c["SPLIT_K"] <= 2048


SPLITK_CONFIGS = _grid_configs(
    {"BLOCK_M": [32, 64, 128], "BLOCK_N": [32, 64, 128, 256], "BLOCK_K": [32, 64, 128], "SPLIT_K": [1, 2, 4, 8],
     "num_warps": [4, 8], "num_stages": [2, 3, 4]}, limit=20, seed=171, keep=_splitk_fits)


def splitk_matmul_case(name, m, n, k, dtype):
    def inputs(rng):
        return {"a": _rand(rng, (m, k), dtype), "b": _rand(rng, (k, n), dtype, 0.1), "c": np.zeros((m, n), np.float32)}

    size = _itemsize(dtype)
    return Case("holdout17_splitk_matmul", name, "holdout17", splitk_matmul_kernel, {"M": m, "N": n, "K": k}, dtype,
                SPLITK_CONFIGS, inputs, ("c",), lambda x, cfg: (x["a"], x["b"], x["c"], m, n, k),
                lambda cfg: (math.ceil(m / cfg["BLOCK_M"]) * math.ceil(n / cfg["BLOCK_N"]), cfg["SPLIT_K"]),
                lambda x: {"c": _f32(x["a"]).astype(np.float64) @ _f32(x["b"]).astype(np.float64)}, tolerance=2e-2,
                flops=2.0 * m * n * k, min_bytes=size * (m * k + k * n) + 4.0 * m * n, extra={"zero_outputs": True})


def conv3x3_case(name, images, height, width, c_in, c_out, dtype):
    pixels = images * height * width
    configs = _grid_configs({"BLOCK_P": [32, 64, 128], "BLOCK_CO": [32, 64, 128], "BLOCK_CI": [16, 32, 64],
                             "num_warps": [2, 4, 8], "num_stages": [1, 2, 3]}, limit=18, seed=172,
                            keep=lambda c: c["BLOCK_CI"] <= c_in
                            and 32 * 16 * c["num_warps"] <= c["BLOCK_P"] * c["BLOCK_CO"] <= 128 * 32 * c["num_warps"])

    def inputs(rng):
        return {"x": _rand(rng, (images, height, width, c_in), dtype),
                "w": _rand(rng, (3, 3, c_in, c_out), dtype, 1.0 / math.sqrt(9 * c_in)),
                "out": np.empty((images, height, width, c_out), _np_dtype(dtype))}

    def reference(x):
        padded = np.pad(_f32(x["x"]), ((0, 0), (1, 1), (1, 1), (0, 0)))
        w = _f32(x["w"])
        out = np.zeros((images, height, width, c_out), np.float32)
        for kh in range(3):
            for kw in range(3):
                out += padded[:, kh:kh + height, kw:kw + width] @ w[kh, kw]
        return {"out": out}

    size = _itemsize(dtype)
    return Case("holdout17_conv3x3", name, "holdout17", conv3x3_kernel,
                {"N": images, "H": height, "W": width, "Cin": c_in, "Cout": c_out}, dtype, configs, inputs, ("out",),
                lambda x, cfg: (x["x"], x["w"], x["out"], pixels, height, width, c_in, c_out),
                lambda cfg: (math.ceil(pixels / cfg["BLOCK_P"]), math.ceil(c_out / cfg["BLOCK_CO"])), reference,
                tolerance=3e-2, flops=18.0 * pixels * c_in * c_out,
                min_bytes=size * (pixels * (c_in + c_out) + 9 * c_in * c_out))


def embedding_bag_case(name, rows, dim, bags, mean_len, dtype):
    lengths = np.random.default_rng(bags + dim).poisson(mean_len, bags).astype(np.int64) + 1
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    configs = _grid_configs({"BLOCK_I": [1, 2, 4, 8, 16], "BLOCK_D": [64, 128, 256, 512, 1024],
                             "num_warps": [1, 2, 4, 8]}, limit=16, seed=173,
                            keep=lambda c: c["BLOCK_D"] <= _next_pow2(dim)
                            and 32 * c["num_warps"] <= c["BLOCK_I"] * c["BLOCK_D"] <= 64 * 32 * c["num_warps"])

    def inputs(rng):
        return {"table": _rand(rng, (rows, dim), dtype),
                "indices": rng.integers(0, rows, int(offsets[-1])).astype(np.int32), "offsets": offsets,
                "out": np.empty((bags, dim), _np_dtype(dtype))}

    def reference(x):
        table = _f32(x["table"]).astype(np.float64)
        return {"out": np.stack([table[x["indices"][offsets[b]:offsets[b + 1]]].sum(axis=0) for b in range(bags)])}

    size = _itemsize(dtype)
    return Case("holdout17_embedding_bag", name, "holdout17", embedding_bag_kernel,
                {"rows": rows, "D": dim, "bags": bags, "mean_len": mean_len}, dtype, configs, inputs, ("out",),
                lambda x, cfg: (x["table"], x["indices"], x["offsets"], x["out"], dim),
                lambda cfg: (bags, math.ceil(dim / cfg["BLOCK_D"])), reference,
                tolerance=2e-2 if dtype != "fp32" else 1e-4,
                min_bytes=size * (int(offsets[-1]) + bags) * dim + 4.0 * int(offsets[-1]))


def geglu_bwd_case(name, n, dtype):
    configs = _grid_configs({"BLOCK": [256, 512, 1024, 2048, 4096, 8192], "num_warps": [1, 2, 4, 8, 16]}, limit=16,
                            seed=174, keep=lambda c: 32 * c["num_warps"] <= c["BLOCK"] <= 64 * 32 * c["num_warps"])

    def inputs(rng):
        return {"g": _rand(rng, (n,), dtype, 2.0), "u": _rand(rng, (n,), dtype), "dy": _rand(rng, (n,), dtype),
                "dg": np.empty(n, _np_dtype(dtype)), "du": np.empty(n, _np_dtype(dtype))}

    def reference(x):
        g, u, dy = (_f32(x[k]).astype(np.float64) for k in ("g", "u", "dy"))
        t = np.tanh(_SQRT_2_OVER_PI * (g + 0.044715 * g ** 3))
        slope = 0.5 * (1 + t) + 0.5 * g * (1 - t * t) * _SQRT_2_OVER_PI * (1 + 3 * 0.044715 * g * g)
        return {"du": dy * 0.5 * g * (1 + t), "dg": dy * u * slope}

    size = _itemsize(dtype)
    return Case("holdout17_geglu_bwd", name, "holdout17", geglu_bwd_kernel, {"n": n}, dtype, configs, inputs,
                ("dg", "du"), lambda x, cfg: (x["g"], x["u"], x["dy"], x["dg"], x["du"], n),
                lambda cfg: (math.ceil(n / cfg["BLOCK"]),), reference, tolerance=2e-2 if dtype != "fp32" else 1e-4,
                min_bytes=5.0 * size * n)


def csr_spmv_case(name, n_rows, n_cols, mean_nnz, dtype):
    counts = np.random.default_rng(n_rows).poisson(mean_nnz, n_rows).astype(np.int64)
    row_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    nnz = int(row_ptr[-1])
    configs = _grid_configs({"ROWS": [1, 2, 4, 8], "BLOCK_NZ": [16, 32, 64, 128, 256], "num_warps": [1, 2, 4, 8]},
                            limit=16, seed=175, keep=lambda c: 32 * c["num_warps"] <= c["BLOCK_NZ"] * 4)

    def inputs(rng):
        return {"row_ptr": row_ptr, "col": rng.integers(0, n_cols, nnz).astype(np.int32),
                "val": _rand(rng, (nnz,), dtype), "x": _rand(rng, (n_cols,), dtype),
                "y": np.empty(n_rows, np.float32)}

    def reference(x):
        products = _f32(x["val"]).astype(np.float64) * _f32(x["x"]).astype(np.float64)[x["col"]]
        return {"y": np.bincount(np.repeat(np.arange(n_rows), counts), weights=products, minlength=n_rows)}

    size = _itemsize(dtype)
    return Case("holdout17_csr_spmv", name, "holdout17", csr_spmv_kernel,
                {"rows": n_rows, "cols": n_cols, "mean_nnz": mean_nnz}, dtype, configs, inputs, ("y",),
                lambda x, cfg: (x["row_ptr"], x["col"], x["val"], x["x"], x["y"], n_rows),
                lambda cfg: (math.ceil(n_rows / cfg["ROWS"]),), reference, tolerance=1e-3 if dtype == "fp32" else 2e-2,
                min_bytes=(4.0 + size) * nnz + 4.0 * n_rows + size * n_cols)


def holdout17_cases() -> list[Case]:
    return [
        splitk_matmul_case("holdout17_splitk_matmul_fp16_512x1024x16384", 512, 1024, 16384, "fp16"),
        splitk_matmul_case("holdout17_splitk_matmul_bf16_200x2048x8192", 200, 2048, 8192, "bf16"),
        conv3x3_case("holdout17_conv3x3_fp16_n8_56x56_c64_k128", 8, 56, 56, 64, 128, "fp16"),
        conv3x3_case("holdout17_conv3x3_bf16_n4_28x28_c128_k256", 4, 28, 28, 128, 256, "bf16"),
        embedding_bag_case("holdout17_embedding_bag_fp32_r100000_d256_b4096", 100_000, 256, 4096, 20, "fp32"),
        embedding_bag_case("holdout17_embedding_bag_bf16_r50000_d1000_b2048", 50_000, 1000, 2048, 8, "bf16"),
        geglu_bwd_case("holdout17_geglu_bwd_bf16_8192x2816", 8192 * 2816, "bf16"),
        geglu_bwd_case("holdout17_geglu_bwd_fp16_31000003", 31_000_003, "fp16"),
        csr_spmv_case("holdout17_csr_spmv_fp32_r200000_nnz32", 200_000, 200_000, 32, "fp32"),
        csr_spmv_case("holdout17_csr_spmv_fp16_r50000_nnz200", 50_000, 100_000, 200, "fp16"),
    ]
