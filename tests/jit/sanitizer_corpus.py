"""Deliberately buggy kernels (BUGGY) and correct ones (CORRECT) for the sanitizer tests.

Each buggy kernel marks the line a report must name with a `# BUG` comment. Entries are
(kernel, make_args, grid, expected class, constexprs); make_args takes a numpy Generator.
"""

import numpy as np

import dsl as tl
import simulator
from jit import jit

N = 100


def _f(rng, n=N):
    return rng.standard_normal(n).astype(np.float32) + 3.0


# ---------------------------------------------------------------- out of bounds

@jit
def no_mask(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))  # BUG


@jit
def off_by_one_mask(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs <= n)  # BUG
    tl.store(y_ptr + offs, x, mask=offs < n)


@jit
def store_mask_wrong(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    tl.store(y_ptr + offs, x, mask=offs < n + 1)  # BUG


@jit
def wrong_stride(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * 20 + cols, mask=cols < 10)  # BUG
    tl.store(y_ptr + row * 10 + cols, x, mask=cols < 10)


@jit
def negative_offset(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK) - 1
    x = tl.load(x_ptr + offs, mask=offs < n)  # BUG
    tl.store(y_ptr + offs + 1, x, mask=offs + 1 < n)


@jit
def transposed_index(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, 16)[:, None]
    c = tl.arange(0, 8)[None, :]
    x = tl.load(x_ptr + c * 16 + r)  # BUG
    tl.store(y_ptr + r * 8 + c, x)


@jit
def unknown_provenance(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    address = x_ptr.to(tl.int64) + 4 * 1000000
    p = address.to(tl.pointer_type(tl.float32))
    tl.store(y_ptr + offs, tl.load(p + offs), mask=offs < n)  # BUG


@jit
def wrong_dtype_pointer_math(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs * 4, mask=offs < n)  # BUG
    tl.store(y_ptr + offs, x, mask=offs < n)


@jit
def atomic_past_end(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    tl.atomic_add(y_ptr + n, 1.0)  # BUG


@jit
def loop_runs_past(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for k in range(0, n + BLOCK, BLOCK):
        offs = k + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + offs, mask=offs < n + BLOCK)  # BUG
    tl.store(y_ptr + tl.arange(0, BLOCK), acc)


# ---------------------------------------------------------------- uninitialised reads

@jit
def read_scratch_before_write(x_ptr, scratch_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    s = tl.load(scratch_ptr + offs, mask=offs < n)  # BUG
    tl.store(x_ptr + offs, s, mask=offs < n)


@jit
def partial_init(x_ptr, scratch_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(scratch_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n // 2)
    s = tl.load(scratch_ptr + offs, mask=offs < n)  # BUG
    tl.store(x_ptr + offs, s, mask=offs < n)


@jit
def accumulate_into_empty(x_ptr, scratch_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.load(scratch_ptr + offs, mask=offs < n)  # BUG
    tl.store(scratch_ptr + offs, acc + tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@jit
def shifted_read_of_scratch(x_ptr, scratch_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(scratch_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n - 1)
    s = tl.load(scratch_ptr + offs + 1, mask=offs + 1 < n)  # BUG
    tl.store(x_ptr + offs, s, mask=offs + 1 < n)


@jit
def atomic_on_empty(x_ptr, scratch_ptr, n, BLOCK: tl.constexpr):
    old = tl.atomic_add(scratch_ptr, 1.0)  # BUG
    tl.store(x_ptr, old)


# ---------------------------------------------------------------- races between programs

@jit
def racing_store(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)  # BUG


@jit
def missing_atomic(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    s = tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0)
    total = tl.load(y_ptr)
    tl.store(y_ptr, total + s)  # BUG


@jit
def overlapping_tiles(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * (BLOCK // 2) + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)  # BUG


@jit
def read_neighbour_output(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
    prev = tl.load(y_ptr + offs - BLOCK, mask=(offs >= BLOCK) & (offs < n))  # BUG
    tl.store(x_ptr + offs, prev, mask=(offs >= BLOCK) & (offs < n))


@jit
def mixed_atomic_and_store(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    if pid == 0:
        tl.store(y_ptr, 0.0)  # BUG
    else:
        tl.atomic_add(y_ptr, 1.0)


@jit
def wrong_program_axis(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(1) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)  # BUG


@jit
def in_place_shift(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    v = tl.load(x_ptr + offs + 1, mask=offs + 1 < n)  # BUG
    tl.store(x_ptr + offs, v, mask=offs + 1 < n)


# ---------------------------------------------------------------- races between warps

@jit
def warp_race_transpose(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, 64)[:, None]
    c = tl.arange(0, 64)[None, :]
    tl.store(y_ptr + r * 64 + c, tl.load(x_ptr + r * 64 + c))
    t = tl.load(y_ptr + c * 64 + r)  # BUG
    tl.store(x_ptr + r * 64 + c, t)


@jit
def warp_race_reverse(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, 512)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))
    t = tl.load(y_ptr + 511 - offs)  # BUG
    tl.store(x_ptr + offs, t)


@jit
def warp_write_write(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, 512)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))
    tl.store(y_ptr + 511 - offs, tl.load(x_ptr + offs) * 2)  # BUG


# ---------------------------------------------------------------- NaN / Inf

@jit
def divide_by_zero(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    z = x - x
    y = x / z  # BUG
    tl.store(y_ptr + offs, y, mask=offs < n)


@jit
def log_of_negative(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    y = tl.log(x - 100.0)  # BUG
    tl.store(y_ptr + offs, y, mask=offs < n)


@jit
def exp_overflow(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    e = tl.exp(x * 100.0)  # BUG
    tl.store(y_ptr + offs, e / tl.sum(e, axis=0), mask=offs < n)


@jit
def sqrt_negative(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    y = tl.sqrt(-x)  # BUG
    tl.store(y_ptr + offs, y, mask=offs < n)


@jit
def inf_minus_inf(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=1.0)
    big = x * 1e38 * 1e38  # BUG
    tl.store(y_ptr + offs, big - big, mask=offs < n)


# ---------------------------------------------------------------- i32 index overflow

@jit
def i32_row_offset(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0) + 70000
    offs = row * 40000 + tl.arange(0, BLOCK)  # BUG
    tl.store(y_ptr + offs - 2800000000, tl.load(x_ptr + tl.arange(0, BLOCK)))


@jit
def i32_stride_product(x_ptr, y_ptr, n, stride, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    offs = r * stride  # BUG
    tl.store(y_ptr + r, tl.load(x_ptr + offs, mask=r < 0))


@jit
def i32_shift_offset(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    offs = (r + 1) << 28  # BUG
    tl.store(y_ptr + r, tl.load(x_ptr + offs, mask=r < 0))


def _scratch(n=N):
    return simulator.empty(n, np.float32)


BUGGY = [
    (no_mask, lambda g: [_f(g), np.zeros(N, np.float32), N], (4,), "out-of-bounds", {"BLOCK": 32}),
    (off_by_one_mask, lambda g: [_f(g), np.zeros(N, np.float32), N], (4,), "out-of-bounds", {"BLOCK": 32}),
    (store_mask_wrong, lambda g: [_f(g, 200), np.zeros(N, np.float32), N], (4,), "out-of-bounds", {"BLOCK": 32}),
    (wrong_stride, lambda g: [_f(g), np.zeros(N, np.float32), N], (10,), "out-of-bounds", {"BLOCK": 16}),
    (negative_offset, lambda g: [_f(g), np.zeros(N, np.float32), N], (4,), "out-of-bounds", {"BLOCK": 32}),
    (transposed_index, lambda g: [_f(g, 100), np.zeros(128, np.float32), N], (1,), "out-of-bounds", {"BLOCK": 1}),
    (unknown_provenance, lambda g: [_f(g), np.zeros(N, np.float32), N], (1,), "out-of-bounds", {"BLOCK": 128}),
    (wrong_dtype_pointer_math, lambda g: [_f(g), np.zeros(N, np.float32), N], (4,), "out-of-bounds", {"BLOCK": 32}),
    (atomic_past_end, lambda g: [_f(g), np.zeros(N, np.float32), N], (1,), "out-of-bounds", {"BLOCK": 32}),
    (loop_runs_past, lambda g: [_f(g), np.zeros(32, np.float32), N], (1,), "out-of-bounds", {"BLOCK": 32}),
    (read_scratch_before_write, lambda g: [_f(g), _scratch(), N], (4,), "uninitialized-read", {"BLOCK": 32}),
    (partial_init, lambda g: [_f(g), _scratch(), N], (1,), "uninitialized-read", {"BLOCK": 128}),
    (accumulate_into_empty, lambda g: [_f(g), _scratch(), N], (1,), "uninitialized-read", {"BLOCK": 128}),
    (shifted_read_of_scratch, lambda g: [_f(g), _scratch(), N], (1,), "uninitialized-read", {"BLOCK": 128}),
    (atomic_on_empty, lambda g: [_f(g), _scratch(), N], (1,), "uninitialized-read", {"BLOCK": 1}),
    (racing_store, lambda g: [_f(g), np.zeros(N, np.float32), N], (3,), "data-race", {"BLOCK": 128}),
    (missing_atomic, lambda g: [_f(g), np.zeros(1, np.float32), N], (4,), "data-race", {"BLOCK": 32}),
    (overlapping_tiles, lambda g: [_f(g), np.zeros(N, np.float32), N], (4,), "data-race", {"BLOCK": 32}),
    (read_neighbour_output, lambda g: [_f(g), np.zeros(N, np.float32), N], (4,), "data-race", {"BLOCK": 32}),
    (mixed_atomic_and_store, lambda g: [_f(g), np.zeros(1, np.float32), N], (3,), "data-race", {"BLOCK": 1}),
    (wrong_program_axis, lambda g: [_f(g), np.zeros(N, np.float32), N], (4,), "data-race", {"BLOCK": 32}),
    (in_place_shift, lambda g: [_f(g), np.zeros(N, np.float32), N], (4,), "data-race", {"BLOCK": 32}),
    (warp_race_transpose, lambda g: [_f(g, 4096), np.zeros(4096, np.float32), N], (1,), "data-race",
     {"BLOCK": 1}),
    (warp_race_reverse, lambda g: [_f(g, 512), np.zeros(512, np.float32), N], (1,), "data-race", {"BLOCK": 1}),
    (warp_write_write, lambda g: [_f(g, 512), np.zeros(512, np.float32), N], (1,), "data-race", {"BLOCK": 1}),
    (divide_by_zero, lambda g: [_f(g), np.zeros(N, np.float32), N], (1,), "nan-inf", {"BLOCK": 128}),
    (log_of_negative, lambda g: [_f(g), np.zeros(N, np.float32), N], (1,), "nan-inf", {"BLOCK": 128}),
    (exp_overflow, lambda g: [_f(g), np.zeros(N, np.float32), N], (1,), "nan-inf", {"BLOCK": 128}),
    (sqrt_negative, lambda g: [_f(g), np.zeros(N, np.float32), N], (1,), "nan-inf", {"BLOCK": 128}),
    (inf_minus_inf, lambda g: [_f(g), np.zeros(N, np.float32), N], (1,), "nan-inf", {"BLOCK": 128}),
    (i32_row_offset, lambda g: [_f(g, 64), np.zeros(64, np.float32), N], (1,), "index-overflow", {"BLOCK": 64}),
    (i32_stride_product, lambda g: [_f(g, 64), np.zeros(64, np.float32), N, 2**27], (1,), "index-overflow",
     {"BLOCK": 64}),
    (i32_shift_offset, lambda g: [_f(g, 64), np.zeros(64, np.float32), N], (1,), "index-overflow", {"BLOCK": 64}),
]


# ---------------------------------------------------------------- correct kernels

@jit
def ok_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@jit
def ok_softmax(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(out_ptr + offs, e / tl.sum(e, axis=0), mask=offs < n)


@jit
def ok_atomic_sum(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.atomic_add(out_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0))


@jit
def ok_scratch_roundtrip(x_ptr, scratch_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(scratch_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)
    tl.store(out_ptr + offs, tl.load(scratch_ptr + offs, mask=m) + 1.0, mask=m)


@jit
def ok_masked_division(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    d = tl.load(y_ptr + offs, mask=m, other=0.0)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) / d, mask=m)  # masked-off lanes divide by 0: no report


@jit
def ok_transpose_with_barrier(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, 64)[:, None]
    c = tl.arange(0, 64)[None, :]
    tl.store(y_ptr + r * 64 + c, tl.load(x_ptr + r * 64 + c))
    tl.debug_barrier()
    tl.store(out_ptr + r * 64 + c, tl.load(y_ptr + c * 64 + r))


@jit
def ok_matmul(a_ptr, b_ptr, c_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, 16)
    pid = tl.program_id(0)
    a = tl.load(a_ptr + (pid * 16 + r)[:, None] * 16 + r[None, :])
    b = tl.load(b_ptr + r[:, None] * 16 + r[None, :])
    tl.store(c_ptr + (pid * 16 + r)[:, None] * 16 + r[None, :], tl.dot(a, b))


@jit
def ok_int64_offsets(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64) + 70000
    offs = row * 40000 + tl.arange(0, BLOCK) - 2800000000
    tl.store(out_ptr + offs, tl.load(x_ptr + tl.arange(0, BLOCK)))


CORRECT = [
    (ok_add, lambda g: [_f(g), _f(g), np.zeros(N, np.float32), N], (4,), {"BLOCK": 32}),
    (ok_softmax, lambda g: [_f(g), _f(g), np.zeros(N, np.float32), N], (1,), {"BLOCK": 128}),
    (ok_atomic_sum, lambda g: [_f(g), _f(g), np.zeros(1, np.float32), N], (4,), {"BLOCK": 32}),
    (ok_scratch_roundtrip, lambda g: [_f(g), _scratch(), np.zeros(N, np.float32), N], (4,), {"BLOCK": 32}),
    (ok_masked_division, lambda g: [_f(g), _f(g), np.zeros(N, np.float32), N], (4,), {"BLOCK": 32}),
    (ok_transpose_with_barrier, lambda g: [_f(g, 4096), np.zeros(4096, np.float32), np.zeros(4096, np.float32), N],
     (1,), {"BLOCK": 1}),
    (ok_matmul, lambda g: [_f(g, 512), _f(g, 256), np.zeros(512, np.float32), N], (2,), {"BLOCK": 1}),
    (ok_int64_offsets, lambda g: [_f(g, 64), _f(g), np.zeros(64, np.float32), N], (1,), {"BLOCK": 64}),
]
