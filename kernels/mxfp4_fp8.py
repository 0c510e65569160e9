"""MoE expert weights kept in MXFP4, converted online into a reused FP8 workspace, consumed by an FP8 GEMM.

Memory: MXFP4 costs 4.25 bits per weight; storing every expert in FP8 would cost 8 bits. Only the experts a
batch routes to are converted (one launch), into a workspace of `capacity` expert slots that is allocated once
and reused across calls (experts already resident are not converted again; LRU eviction among the others).
`MXFP4Experts.memory_report()` gives the bytes saved against storing all experts in FP8.

Conversion (exact when a row's block exponents span at most 14 binades, i.e. always for real weights): per
output row n of an expert, with E = max of the row's E8M0 exponents, element value P * 2^(e - 127) is written as
the E4M3 value P * 2^(e - E + 6) (max 6 * 64 = 384 <= 448) and the row scale 2^(E - 133) goes to
`workspace_scale`. Blocks more than 14 binades below E round to E4M3 subnormals (round to nearest even), exactly
as `mxfp4_to_fp8_reference` does.

FP8 GEMM: activations are quantised per row to E4M3 (scale = amax / 448, `quantize_rows_fp8`), multiplied by the
workspace (fp8 x fp8 products, exact in fp32, fp32 accumulation) and rescaled by both scales in the epilogue.
It is a grouped GEMM: rows offsets[g]:offsets[g+1] of x (tokens sorted by expert) use expert expert_ids[g].

Host functions (for the MoE engineer):
    experts = MXFP4Experts(blocks [E, N, K/32, 16] uint8, scales [E, N, K/32] uint8, capacity=8)
        # gpt-oss layout of a weight [E, N_out, K_in]; y = x @ W[e].T
    experts.load(expert_ids) -> slots int32          # convert the missing experts into the workspace
    quantize_rows_fp8(x [M, K] fp32|fp16|bf16) -> (q [M, K] float8_e4m3fn, scale [M] fp32)
    mxfp4_moe_gemm(x [T, K], experts, expert_ids [G], offsets [G + 1], out_dtype=None, config=None,
                   tune=False) -> y [T, N]
        # rows outside every group are left zero; groups are run in chunks of at most `capacity` distinct
        # experts (each chunk converts what it needs, then one grouped launch)
References: mxfp4_to_fp8_reference, mxfp4_moe_gemm_reference (same fp8 codes, float64 product).

Error bound of mxfp4_moe_gemm against mxfp4_moe_gemm_reference, fp32 output:
|y - ref| <= 1e-5 * (|xq| @ |wq|) + 1e-6, where xq, wq are the dequantised fp8 operands (fp32 accumulation
only); fp16 / bf16 outputs add half an ulp: (1e-3, 1e-3), (8e-3, 8e-3). The error against the unquantised
fp32 product (FP8 activations, MXFP4 weights) is reported by the benchmark (notes: rel_err_vs_fp32).
"""

from __future__ import annotations

from collections import OrderedDict

import ml_dtypes
import numpy as np

import dsl as tl
from jit import cdiv, jit
from kernels._common import BF16, FLOAT_DTYPES, dtype_name, launch, random_array
from kernels.gemm import TOLERANCE, check_matrix, strides
from kernels.quant import E2M1_VALUES, MX_BLOCK, dequantize_mxfp4, mxfp4_codes, quantize_fp8, quantize_mxfp4, to_fp8
from kernels.registry import Case, register
from kernels.tuning import tuned

FP8 = np.dtype(ml_dtypes.float8_e4m3fn)
CONVERT_CONFIGS = [{"BLOCK_N": 16, "BLOCK_B": 4, "num_warps": 4}, {"BLOCK_N": 32, "BLOCK_B": 8, "num_warps": 4}]
QUANT_CONFIGS = [{"BLOCK": 1024, "num_warps": 4}, {"BLOCK": 256, "num_warps": 2}]
AUTOTUNE_CONFIGS = [  # the FP8 grouped GEMM
    {"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 64, "num_warps": 4},
    {"BLOCK_M": 32, "BLOCK_N": 64, "BLOCK_K": 64, "num_warps": 4},
    {"BLOCK_M": 64, "BLOCK_N": 128, "BLOCK_K": 64, "num_warps": 8},
]


@jit
def pow2(k):
    """2^k as fp32 for integer k in [-149, 127], built from its bits (exact, unlike exp2)."""
    bits = tl.where(k >= -126, (k + 127) << 23, 1 << tl.maximum(k + 149, 0))
    return bits.to(tl.float32, bitcast=True)


@jit
def e2m1_value(code):
    """fp32 value of E2M1 codes (int32 0..15): sign, 2 exponent bits (bias 1), 1 mantissa bit."""
    e = (code >> 1) & 3
    m = (code & 1).to(tl.float32)
    mag = tl.where(e == 0, m * 0.5, (2.0 + m) * (1 << e).to(tl.float32) * 0.25)
    return tl.where(code >= 8, -mag, mag)


@jit
def mxfp4_to_fp8_kernel(blocks_ptr, scales_ptr, experts_ptr, slots_ptr, ws_ptr, ws_scale_ptr, N, KB,
                        BLOCK_N: tl.constexpr, BLOCK_B: tl.constexpr):
    """Program (i, j): rows j*BLOCK_N.. of expert experts[i] -> workspace slot slots[i]; BLOCK_B 32-blocks a step."""
    expert = tl.load(experts_ptr + tl.program_id(0)).to(tl.int64)
    slot = tl.load(slots_ptr + tl.program_id(0)).to(tl.int64)
    offs_n = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    n_ok = offs_n < N
    rows = expert * N + offs_n  # row index into [E * N, ...]
    offs_b = tl.arange(0, BLOCK_B)
    row_e = tl.zeros((BLOCK_N,), dtype=tl.int32)
    for b0 in range(0, KB, BLOCK_B):
        ok = n_ok[:, None] & (b0 + offs_b < KB)[None, :]
        e = tl.load(scales_ptr + rows[:, None] * KB + (b0 + offs_b)[None, :], mask=ok, other=0).to(tl.int32)
        row_e = tl.maximum(row_e, tl.max(e, axis=1))
    tl.store(ws_scale_ptr + slot * N + offs_n, pow2(row_e - 133), mask=n_ok)

    BYTES: tl.constexpr = BLOCK_B * 16
    offs_y = tl.arange(0, BYTES)
    K = KB * 32
    out_rows = ws_ptr + (slot * N + offs_n)[:, None] * K
    for b0 in range(0, KB, BLOCK_B):
        ok = n_ok[:, None] & (b0 + offs_b < KB)[None, :]
        e = tl.load(scales_ptr + rows[:, None] * KB + (b0 + offs_b)[None, :], mask=ok, other=0).to(tl.int32)
        shift = tl.maximum(e - row_e[:, None] + 6, -126)
        f = tl.reshape(tl.broadcast_to(pow2(shift)[:, :, None], (BLOCK_N, BLOCK_B, 16)), (BLOCK_N, BYTES))
        y_ok = n_ok[:, None] & (b0 * 16 + offs_y < KB * 16)[None, :]
        byte = tl.load(blocks_ptr + rows[:, None] * (KB * 16) + (b0 * 16 + offs_y)[None, :], mask=y_ok,
                       other=0).to(tl.int32)
        lo = (e2m1_value(byte & 0xF) * f).to(tl.float8e4nv)  # exact products; the cast rounds only subnormals
        hi = (e2m1_value(byte >> 4) * f).to(tl.float8e4nv)
        k = b0 * 32 + 2 * offs_y
        tl.store(out_rows + k[None, :], lo, mask=y_ok)
        tl.store(out_rows + (k + 1)[None, :], hi, mask=y_ok)


@jit
def quantize_rows_fp8_kernel(x_ptr, q_ptr, s_ptr, K, stride_xm, stride_qm, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    amax = tl.zeros((BLOCK,), dtype=tl.float32)
    for k0 in range(0, K, BLOCK):
        x = tl.load(x_ptr + row * stride_xm + k0 + offs, mask=k0 + offs < K, other=0.0).to(tl.float32)
        amax = tl.maximum(amax, tl.abs(x))
    m = tl.max(amax, axis=0)
    scale = tl.where(m > 0, m / 448.0, 1.0)
    tl.store(s_ptr + row, scale)
    for k0 in range(0, K, BLOCK):
        x = tl.load(x_ptr + row * stride_xm + k0 + offs, mask=k0 + offs < K, other=0.0).to(tl.float32)
        tl.store(q_ptr + row * stride_qm + k0 + offs, (x / scale).to(tl.float8e4nv), mask=k0 + offs < K)


@jit
def fp8_grouped_gemm_kernel(a_ptr, a_scale_ptr, ws_ptr, ws_scale_ptr, c_ptr, offsets_ptr, group_slots_ptr, N, K,
                            stride_cm, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """Program (i, g): tile i of group g's rows x the workspace slot of group g (stored [N, K], used as B^T)."""
    g = tl.program_id(1)
    start = tl.load(offsets_ptr + g)
    end = tl.load(offsets_ptr + g + 1)
    slot = tl.load(group_slots_ptr + g).to(tl.int64)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m = tl.program_id(0) // num_pid_n
    pid_n = tl.program_id(0) % num_pid_n
    if start + pid_m * BLOCK_M < end:
        offs_m = start + pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
        offs_k = tl.arange(0, BLOCK_K)
        m_ok = offs_m < end
        n_ok = offs_n < N
        a_ptrs = a_ptr + offs_m.to(tl.int64)[:, None] * K + offs_k[None, :]
        b_ptrs = ws_ptr + (slot * N + offs_n)[None, :] * K + offs_k[:, None]
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for k0 in range(0, K, BLOCK_K):
            k_ok = offs_k < K - k0
            a = tl.load(a_ptrs, mask=m_ok[:, None] & k_ok[None, :], other=0.0)
            b = tl.load(b_ptrs, mask=k_ok[:, None] & n_ok[None, :], other=0.0)
            acc = tl.dot(a, b, acc)
            a_ptrs += BLOCK_K
            b_ptrs += BLOCK_K
        sa = tl.load(a_scale_ptr + offs_m, mask=m_ok, other=0.0)
        sw = tl.load(ws_scale_ptr + slot * N + offs_n, mask=n_ok, other=0.0)
        out = acc * sa[:, None] * sw[None, :]
        c_ptrs = c_ptr + offs_m.to(tl.int64)[:, None] * stride_cm + offs_n[None, :]
        tl.store(c_ptrs, out.to(c_ptr.dtype.element_ty), mask=m_ok[:, None] & n_ok[None, :])


fp8_grouped_gemm_kernel_tuned = tuned(fp8_grouped_gemm_kernel, AUTOTUNE_CONFIGS, key=["N", "K"])


class MXFP4Experts:
    """MXFP4 expert weights [E, N, K] (gpt-oss layout) plus an FP8 workspace of `capacity` expert slots."""

    def __init__(self, blocks: np.ndarray, scales: np.ndarray, capacity: int = 8):
        if not isinstance(blocks, np.ndarray) or blocks.dtype != np.uint8 or blocks.ndim != 4 or blocks.shape[3] != 16:
            raise ValueError(f"blocks must be uint8 [E, N, K/32, 16], got {getattr(blocks, 'dtype', None)} "
                             f"{getattr(blocks, 'shape', None)}")
        if not isinstance(scales, np.ndarray) or scales.dtype != np.uint8 or scales.shape != blocks.shape[:3]:
            raise ValueError(f"scales must be uint8 {blocks.shape[:3]}, got {getattr(scales, 'dtype', None)} "
                             f"{getattr(scales, 'shape', None)}")
        if capacity < 1:
            raise ValueError(f"capacity must be >= 1, got {capacity}")
        self.blocks, self.scales = np.ascontiguousarray(blocks), np.ascontiguousarray(scales)
        self.num_experts, self.N, kb = scales.shape
        self.K = kb * MX_BLOCK
        self.capacity = capacity
        self.workspace = np.zeros((capacity, self.N, self.K), dtype=FP8)
        self.workspace_scale = np.zeros((capacity, self.N), dtype=np.float32)
        self._resident: OrderedDict[int, int] = OrderedDict()  # expert -> slot, least recently used first
        self.conversions = 0  # experts converted so far (tests check reuse through it)

    @classmethod
    def from_float(cls, w: np.ndarray, capacity: int = 8) -> MXFP4Experts:
        """Quantise fp32 weights [E, N, K] to MXFP4 (FLOOR scale rule)."""
        return cls(*quantize_mxfp4(w), capacity=capacity)

    def load(self, expert_ids, config: dict | None = None) -> np.ndarray:
        """Make the given experts resident; returns their workspace slots (int32, same order)."""
        ids = [int(e) for e in np.asarray(expert_ids).reshape(-1)]
        if any(e < 0 or e >= self.num_experts for e in ids):
            raise ValueError(f"expert ids must be in [0, {self.num_experts}), got {ids}")
        wanted = list(dict.fromkeys(ids))
        if len(wanted) > self.capacity:
            raise ValueError(f"{len(wanted)} distinct experts requested, workspace capacity is {self.capacity}")
        missing = [e for e in wanted if e not in self._resident]
        free = sorted(set(range(self.capacity)) - set(self._resident.values()))
        evictable = [e for e in self._resident if e not in wanted]  # LRU order
        new_slots = []
        for _ in missing:
            if free:
                new_slots.append(free.pop(0))
            else:
                new_slots.append(self._resident.pop(evictable.pop(0)))
        if missing:
            cfg = dict(config or CONVERT_CONFIGS[0])
            grid = (len(missing), cdiv(self.N, cfg["BLOCK_N"]))
            mxfp4_to_fp8_kernel[grid](self.blocks, self.scales, np.array(missing, np.int32),
                                      np.array(new_slots, np.int32), self.workspace, self.workspace_scale, self.N,
                                      self.K // MX_BLOCK, **cfg)
            self.conversions += len(missing)
        for e, s in zip(missing, new_slots, strict=True):
            self._resident[e] = s
        for e in wanted:
            self._resident.move_to_end(e)
        return np.array([self._resident[e] for e in ids], dtype=np.int32)

    def memory_report(self) -> dict:
        """Bytes held (MXFP4 weights + workspace) against storing every expert in FP8 with row scales."""
        mxfp4 = self.blocks.nbytes + self.scales.nbytes
        work = self.workspace.nbytes + self.workspace_scale.nbytes
        fp8_all = self.num_experts * self.N * (self.K + 4)
        return {"mxfp4_bytes": mxfp4, "workspace_bytes": work, "fp8_all_bytes": fp8_all,
                "saved_bytes": fp8_all - mxfp4 - work, "saved_fraction": round(1 - (mxfp4 + work) / fp8_all, 4)}

    def dequantize(self, expert: int) -> np.ndarray:
        """Exact fp32 weight [N, K] of one expert."""
        return dequantize_mxfp4(self.blocks[expert], self.scales[expert])


def mxfp4_to_fp8_reference(blocks: np.ndarray, scales: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """numpy conversion of one expert's [N, K/32, 16] blocks: (fp8 [N, K], row scale [N] fp32)."""
    row_e = scales.astype(np.int32).max(axis=-1)
    shift = scales.astype(np.int32) - row_e[:, None] + 6
    vals = np.ldexp(E2M1_VALUES[mxfp4_codes(blocks)], shift[..., None])
    q = to_fp8(vals.reshape(blocks.shape[0], -1), "e4m3")
    return q, np.ldexp(np.float32(1.0), row_e - 133).astype(np.float32)


def _check_groups(expert_ids, offsets, T: int, E: int) -> tuple[np.ndarray, np.ndarray]:
    ids = np.asarray(expert_ids)
    offs = np.asarray(offsets)
    if ids.ndim != 1 or ids.dtype.kind not in "iu":
        raise ValueError(f"expert_ids must be a 1-D integer array, got {ids.dtype} {ids.shape}")
    if offs.ndim != 1 or offs.dtype.kind not in "iu" or offs.shape[0] != ids.shape[0] + 1:
        raise ValueError(f"offsets must be an integer array of len(expert_ids) + 1 = {ids.shape[0] + 1}, "
                         f"got {offs.dtype} {offs.shape}")
    if ids.size and (ids.min() < 0 or ids.max() >= E):
        raise ValueError(f"expert ids must be in [0, {E})")
    if offs[0] < 0 or offs[-1] > T or np.any(np.diff(offs) < 0):
        raise ValueError(f"offsets must be non-decreasing within [0, {T}], got {offs}")
    return ids.astype(np.int32), offs.astype(np.int32)


def quantize_rows_fp8(x: np.ndarray, config: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per-row E4M3 quantisation: scale = amax / 448 (1 for zero rows), q = satfinite_rne(x / scale)."""
    check_matrix(x, "x")
    M, K = x.shape
    q = np.empty((M, K), dtype=FP8)
    s = np.empty((M,), dtype=np.float32)
    if x.strides[1] != x.itemsize:
        raise ValueError("x must have unit stride along its last axis")
    if M:
        quantize_rows_fp8_kernel[(M,)](x, q, s, K, strides(x)[0], K, **(config or QUANT_CONFIGS[0]))
    return q, s


def mxfp4_moe_gemm(x: np.ndarray, experts: MXFP4Experts, expert_ids, offsets, out_dtype=None,
                   config: dict | None = None, tune: bool = False) -> np.ndarray:
    """y[offsets[g]:offsets[g+1]] = x[...] @ W[expert_ids[g]].T through FP8 (see module docstring).
    `config`: one of AUTOTUNE_CONFIGS for the GEMM (default: the machine's config table, kernels.config_table, else
    the first); `tune=True` lets the autotuner choose."""
    check_matrix(x, "x")
    if x.strides[1] != x.itemsize:
        raise ValueError("x must have unit stride along its last axis")
    if not isinstance(experts, MXFP4Experts):
        raise ValueError(f"experts must be an MXFP4Experts, got {type(experts).__name__}")
    T, K = x.shape
    if K != experts.K:
        raise ValueError(f"x has K={K}, the experts have K={experts.K}")
    ids, offs = _check_groups(expert_ids, offsets, T, experts.num_experts)
    out_dtype = np.dtype(x.dtype if out_dtype is None else out_dtype)
    if out_dtype not in FLOAT_DTYPES:
        raise ValueError(f"out_dtype must be float32, float16 or bfloat16, got {out_dtype}")
    y = np.zeros((T, experts.N), dtype=out_dtype)
    if ids.size == 0:
        return y
    xq, xs = quantize_rows_fp8(x)
    for first, last in _chunks(ids, experts.capacity):  # each chunk's experts fit in the workspace at once
        slots = experts.load(ids[first:last])
        chunk_offs = np.ascontiguousarray(offs[first:last + 1])
        longest = int(np.diff(chunk_offs).max())
        if not longest:
            continue
        args = (xq, xs, experts.workspace, experts.workspace_scale, y, chunk_offs, slots, experts.N, K, experts.N)
        grid = lambda m, rows=longest, n=last - first: (  # noqa: E731
            cdiv(rows, m["BLOCK_M"]) * cdiv(experts.N, m["BLOCK_N"]), n)
        launch(fp8_grouped_gemm_kernel, fp8_grouped_gemm_kernel_tuned, AUTOTUNE_CONFIGS, grid, args, config, tune)
    return y


def _chunks(ids: np.ndarray, capacity: int) -> list[tuple[int, int]]:
    """Split the groups into runs [first, last) that use at most `capacity` distinct experts each."""
    runs, first, seen = [], 0, set()
    for i, e in enumerate(ids.tolist()):
        if e not in seen and len(seen) == capacity:
            runs.append((first, i))
            first, seen = i, set()
        seen.add(e)
    return [*runs, (first, len(ids))]


def mxfp4_moe_gemm_reference(x: np.ndarray, experts: MXFP4Experts, expert_ids, offsets,
                             out_dtype=None) -> np.ndarray:
    """float64 product of the same fp8 codes and scales (numpy quantisation and conversion)."""
    xq, xs = quantize_fp8(x, "e4m3", axis=-1)
    xd = xq.astype(np.float64) * xs.astype(np.float64)
    y = np.zeros((x.shape[0], experts.N), dtype=np.float64)
    for e, a, b in zip(np.asarray(expert_ids), np.asarray(offsets)[:-1], np.asarray(offsets)[1:], strict=True):
        wq, ws = mxfp4_to_fp8_reference(experts.blocks[e], experts.scales[e])
        y[a:b] = xd[a:b] @ (wq.astype(np.float64) * ws.astype(np.float64)[:, None]).T
    return y.astype(x.dtype if out_dtype is None else out_dtype)


def moe_gemm_bound(x: np.ndarray, experts: MXFP4Experts, expert_ids, offsets, out_dtype) -> np.ndarray:
    """Per-element bound of |mxfp4_moe_gemm - reference| (module docstring)."""
    rtol, atol = TOLERANCE[np.dtype(out_dtype)]
    xq, xs = quantize_fp8(x, "e4m3", axis=-1)
    xd = np.abs(xq.astype(np.float64) * xs)
    y = np.zeros((x.shape[0], experts.N))
    for e, a, b in zip(np.asarray(expert_ids), np.asarray(offsets)[:-1], np.asarray(offsets)[1:], strict=True):
        y[a:b] = xd[a:b] @ np.abs(experts.dequantize(e).astype(np.float64)).T
    return rtol * y + atol


@register
def _cases():
    rng = np.random.default_rng(7)
    E, N, K, T = 64, 128, 2048, 24  # 64 experts, 3 in use over 24 routed token rows, a 4-slot workspace
    ids, offs = np.array([1, 5, 6]), np.array([0, 7, 16, 24])
    w = random_array(rng, (len(ids), N, K), np.float32, scale=0.02, offset=0.0)
    blocks = rng.integers(0, 256, size=(E, N, K // MX_BLOCK, 16), dtype=np.uint8)  # experts this batch never reads
    scales = rng.integers(115, 125, size=(E, N, K // MX_BLOCK), dtype=np.uint8)
    blocks[ids], scales[ids] = quantize_mxfp4(w)
    experts = MXFP4Experts(blocks, scales, capacity=4)
    x = random_array(rng, (T, K), BF16)
    report = experts.memory_report()
    notes = {"saved_vs_fp8": f"{report['saved_bytes']}B", "saved_fraction": report["saved_fraction"]}

    def reference():  # the first call also fills in the error against the unquantised fp32 weights
        ref = mxfp4_moe_gemm_reference(x, experts, ids, offs, np.float32)
        if "rel_err_vs_fp32" not in notes:
            exact = np.zeros((T, N))
            for i, (a, b) in enumerate(zip(offs[:-1], offs[1:], strict=True)):
                exact[a:b] = x[a:b].astype(np.float64) @ w[i].astype(np.float64).T
            notes["rel_err_vs_fp32"] = f"{np.abs(ref - exact).max() / np.abs(exact).max():.2e}"
        return ref

    yield Case("quant.mxfp4_fp8_moe", f"E={E} used=3 T={T} K={K} N={N}", dtype_name(BF16) + "/mxfp4",
               run=lambda: mxfp4_moe_gemm(x, experts, ids, offs, np.float32), reference=reference, rtol=1e-5,
               atol=1e-4, min_bytes=x.nbytes + 3 * (N * K // 2 + N * K // 32) + T * N * 4, notes=notes)
