"""Loads and stores record the elements a thread moves per instruction, as far as Triton can prove them."""

import numpy as np
import pytest

import dsl as tl
from dsl.frontend import compile_kernel
from jit import jit
from jit.passes import run_passes


@jit
def rows_copy(x_ptr, out_ptr, n_cols, stride, ROWS: tl.constexpr, BLOCK: tl.constexpr, ROW_MASK: tl.constexpr):
    rows = tl.program_id(0) * ROWS + tl.arange(0, ROWS)[:, None]
    cols = tl.arange(0, BLOCK)[None, :]
    mask = (rows < 64) if ROW_MASK else (cols < n_cols)
    x = tl.load(x_ptr + rows * stride + cols, mask=mask, other=0.0)
    tl.store(out_ptr + rows * BLOCK + cols, x, mask=mask)


@jit
def looped_sum(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for start in range(0, n, BLOCK):  # the loop variable starts at 0 and steps by BLOCK: a multiple of BLOCK
        cols = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + cols, mask=cols < n, other=0.0)
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)


@jit
def wrapped(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = (tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)) % n  # a matmul's way to stay in bounds without a mask
    tl.store(out_ptr + tl.arange(0, BLOCK), tl.load(x_ptr + offs))


@jit
def hinted_rows(x_ptr, out_ptr, stride, BLOCK: tl.constexpr, HINT: tl.constexpr):
    start = tl.program_id(0) * stride
    if HINT:  # what the caller knows and the compiler cannot: every row starts at a multiple of 16 elements
        start = tl.multiple_of(start, 16)
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + start + offs))


@jit
def split_rows(x_ptr, out_ptr, n, SPLIT: tl.constexpr, BLOCK: tl.constexpr):
    """A split-K program's slice: it starts at pid * (n // SPLIT)."""
    start = tl.program_id(0) * (n // SPLIT)
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + start + offs))


@jit
def gather(x_ptr, idx_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + tl.load(idx_ptr + offs)))


@jit
def block_rows_sum(x_ptr, out_ptr, n_rows, n_cols, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    """Column blocks of a row-major matrix through a block pointer that advances along the rows."""
    rows = tl.make_block_ptr(x_ptr, (n_rows, n_cols), (n_cols, 1), (0, 0), (BLOCK_R, BLOCK_C), (1, 0))
    acc = tl.zeros((BLOCK_R, BLOCK_C), dtype=tl.float32)
    for _ in range(0, n_cols, BLOCK_C):
        acc += tl.load(rows, boundary_check=(0, 1), padding_option="zero").to(tl.float32)
        rows = tl.advance(rows, (0, BLOCK_C))
    tl.store(out_ptr + tl.arange(0, BLOCK_R)[:, None] * BLOCK_C + tl.arange(0, BLOCK_C)[None, :], acc)


@jit
def b_tiles(b_ptr, bt_ptr, out_ptr, N, K, stride_bk, BLOCK_K: tl.constexpr, BLOCK_N: tl.constexpr):
    """A matmul's B tile as the tutorial builds it, columns wrapped at N, and a K-major one read from a [N, K]
    weight."""
    offs_n = (tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    b = tl.load(b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :])
    bt = tl.load(bt_ptr + offs_n[None, :] * K + offs_k[:, None])
    tl.store(out_ptr + offs_k[:, None] * BLOCK_N + tl.arange(0, BLOCK_N)[None, :], b + bt)


def _accesses(jit_fn, args: dict, constexprs: dict) -> list[dict]:
    """The attrs the pass records on each load and store, the arguments specialised as a launch specialises them."""
    signature, _, runtime = jit_fn.bind(tuple(args.values()), dict(constexprs))
    func = compile_kernel(jit_fn, signature)
    run_passes(func, num_warps=4, divisible=frozenset(jit_fn.divisibility(runtime)))
    return [op.attrs for op in func.walk() if op.name in ("tile.load", "tile.store")]


@pytest.mark.parametrize("n, k, wrapped_fastest, weight_vector", [(4096, 4096, None, 8), (3001, 4096, 0, 8),
                                                                  (4096, 1001, None, 1)])
def test_the_layout_runs_along_the_dim_triton_proves_contiguous(n, k, wrapped_fastest, weight_vector):
    """Columns wrapped at an N Triton knows to be a multiple of 16 run in runs of 16; at an odd N no dim of the
    tile is proven contiguous and Triton lays it down the K rows, one element a lane (threadsPerWarp [32, 1],
    order [0, 1] in its build of holdout18's 1,999 x 3,001 x 1,001 matmul). A K-major tile runs along K, as
    wide as K's alignment allows."""
    b, bt = np.zeros(k * n, np.float16), np.zeros(n * k, np.float16)
    wrapped, weight, _ = _accesses(b_tiles, {"b": b, "bt": bt, "out": np.zeros(64 * 64, np.float16), "N": n,
                                             "K": k, "stride_bk": n}, {"BLOCK_K": 64, "BLOCK_N": 64})
    assert wrapped.get("fastest_dim") == wrapped_fastest and bool(wrapped.get("strided")) == (n % 16 != 0)
    if wrapped_fastest is not None:
        assert (wrapped["fastest_per_thread"], wrapped["fastest_vector"]) == (1, 1)
    assert weight["strided"] and weight["fastest_dim"] == 0 and weight["fastest_vector"] == weight_vector


def _vectors(jit_fn, args: dict, constexprs: dict, attr: str = "vector") -> list[int]:
    """(load, store) vector widths the pass records."""
    return [attrs[attr] for attrs in _accesses(jit_fn, args, constexprs)]


@pytest.mark.parametrize("dtype, full", [(np.float32, 4), (np.float16, 8)])
def test_rows_move_16_bytes_only_where_stride_and_bound_are_known_multiples_of_16(dtype, full):
    x, out = np.zeros(64 * 1024, dtype), np.zeros(64 * 128, dtype)
    case = {"ROWS": 4, "BLOCK": 128, "ROW_MASK": False}
    assert _vectors(rows_copy, {"x": x, "out": out, "n_cols": 96, "stride": 1024}, case) == [full, full]
    # a bound of 100: the mask may change at any element, so Triton moves one at a time (load and store)
    assert _vectors(rows_copy, {"x": x, "out": out, "n_cols": 100, "stride": 1024}, case) == [1, 1]
    # ... but the layout follows the pointer alone (Triton's coalescing pass): each thread still holds `full`
    # elements in a row and reads them one instruction each
    assert _vectors(rows_copy, {"x": x, "out": out, "n_cols": 100, "stride": 1024}, case,
                    "size_per_thread") == [full, full]
    # a stride of 1000: rows start at addresses Triton cannot prove aligned (the store's stride is BLOCK)
    assert _vectors(rows_copy, {"x": x, "out": out, "n_cols": 96, "stride": 1000}, case) == [1, full]
    assert _vectors(rows_copy, {"x": x, "out": out, "n_cols": 96, "stride": 1000}, case, "size_per_thread") == \
        [1, full]
    # a mask of whole rows is equal along each row
    row_mask = {**case, "ROW_MASK": True}
    assert _vectors(rows_copy, {"x": x, "out": out, "n_cols": 100, "stride": 1024}, row_mask) == [full, full]


def test_a_loop_variable_keeps_the_alignment_of_its_start_and_step():
    x, out = np.zeros(4200, np.float32), np.zeros(256, np.float32)
    assert _vectors(looped_sum, {"x": x, "out": out, "n": 4096}, {"BLOCK": 256}) == [4, 4]
    assert _vectors(looped_sum, {"x": x, "out": out, "n": 4100}, {"BLOCK": 256}) == [1, 4]


def test_offsets_wrapped_at_a_bound_stay_runs_of_what_both_are_known_to_divide():
    x, out = np.zeros(4200, np.float32), np.zeros(256, np.float32)
    assert _vectors(wrapped, {"x": x, "out": out, "n": 4096}, {"BLOCK": 256}) == [4, 4]
    assert _vectors(wrapped, {"x": x, "out": out, "n": 4100}, {"BLOCK": 256}) == [1, 4]


def test_alignment_hints_count_as_known():
    x, out = np.zeros(4096, np.float32), np.zeros(256, np.float32)
    assert _vectors(hinted_rows, {"x": x, "out": out, "stride": 1000}, {"BLOCK": 256, "HINT": False}) == [1, 4]
    assert _vectors(hinted_rows, {"x": x, "out": out, "stride": 1000}, {"BLOCK": 256, "HINT": True}) == [4, 4]


def test_a_gather_moves_one_element_per_instruction():
    x, idx, out = np.zeros(256, np.float32), np.zeros(256, np.int32), np.zeros(256, np.float32)
    assert _vectors(gather, {"x": x, "idx": idx, "out": out}, {"BLOCK": 256}) == [4, 1, 4]


def test_a_block_pointers_unit_stride_is_known_through_the_loop_that_carries_it():
    """A block pointer carries its strides through the loop it advances in; the last one is still the constant 1,
    so rows of a multiple of 16 elements move 16 bytes an instruction, as Triton's build of the same loop does."""
    out = np.zeros(64 * 64, np.float32)
    aligned = {"x": np.zeros(64 * 4096, np.float16), "out": out, "n_rows": 64, "n_cols": 4096}
    assert _vectors(block_rows_sum, aligned, {"BLOCK_R": 64, "BLOCK_C": 64})[0] == 8
    unaligned = {"x": np.zeros(64 * 4100, np.float16), "out": out, "n_rows": 64, "n_cols": 4100}
    assert _vectors(block_rows_sum, unaligned, {"BLOCK_R": 64, "BLOCK_C": 64})[0] == 1


@pytest.mark.parametrize("n, split, vector", [(4096, 4, 4), (4096, 8, 2), (4096, 3, 1), (4100, 4, 1)])
def test_a_multiple_of_16_divided_by_a_power_of_two_keeps_what_is_left_of_its_alignment(n, split, vector):
    # Triton's AxisInfo: 4096 is specialised as a multiple of 16, so n // 4 is one of 4 and n // 8 of 2 (fp32:
    # 16 and 8 bytes); n // 3 is known to divide nothing, nor is n // 4 when n is not a multiple of 16
    x, out = np.zeros(2 * n, np.float32), np.zeros(64, np.float32)
    assert _vectors(split_rows, {"x": x, "out": out, "n": n}, {"SPLIT": split, "BLOCK": 64})[0] == vector
