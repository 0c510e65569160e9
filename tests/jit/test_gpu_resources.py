import numpy as np
import pytest

import dsl as tl
import simulator
from dsl.ir import parse_function
from jit import gpu_resources, jit
from jit.launch import bind


@jit
def dropout_kernel(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    keep = tl.rand(seed, offs) > p  # Philox: rounds of integer multiplies and xors on data, not on indices
    tl.store(out_ptr + offs, tl.where(keep, x / (1 - p), 0.0), mask=offs < n)


@jit
def scale_kernel(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + offs, x / (1 - p), mask=offs < n)


@jit
def shuffled_scale_kernel(x_ptr, out_ptr, n, p, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    src = (offs * 7 + seed) % n  # index arithmetic: recomputed where used, never held
    x = tl.load(x_ptr + src, mask=offs < n, other=0.0)
    tl.store(out_ptr + offs, x / (1 - p), mask=offs < n)


def _bytes(kernel, block: int, n: int = 3000) -> int:
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    out = np.empty_like(x)
    compiled = bind(kernel, (x, out, n, 0.25, 7), {"BLOCK": block}, (-(-n // block),)).compiled()
    return gpu_resources.register_bytes(parse_function(compiled.asm["ir"]))


@pytest.mark.parametrize("block", [256, 2048])
def test_integer_tiles_that_hold_data_take_registers_and_index_arithmetic_does_not(block):
    plain = _bytes(scale_kernel, block)
    # the shuffle's index arithmetic is recomputed where used; only the plain kernel's load and store share an
    # offset tile, kept between them (one 32-bit offset per element: 3,000 elements are not 16-byte aligned)
    assert _bytes(shuffled_scale_kernel, block) == plain - 4 * block
    # Philox keeps four 32-bit words per element alive through its rounds: Triton's H200 build of this dropout at
    # BLOCK 2048 in one warp takes 217 registers (simulator/data/h200_compile_facts.jsonl), twice the scaling's
    assert _bytes(dropout_kernel, block) >= plain + 4 * 4 * block


@jit
def gated_kernel(x_ptr, wg_ptr, wu_ptr, h_ptr, M, N: tl.constexpr, K: tl.constexpr, BM: tl.constexpr,
                 BK: tl.constexpr, GATED: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.arange(0, N)
    gate = tl.zeros((BM, N), dtype=tl.float32)
    up = tl.zeros((BM, N), dtype=tl.float32)
    for k in range(0, K, BK):
        rk = k + tl.arange(0, BK)
        x = tl.load(x_ptr + rm[:, None] * K + rk[None, :], mask=rm[:, None] < M, other=0.0)
        gate = tl.dot(x, tl.load(wg_ptr + rk[:, None] * N + rn[None, :]), gate)
        if GATED:
            up = tl.dot(x, tl.load(wu_ptr + rk[:, None] * N + rn[None, :]), up)
    h = gate * up if GATED else gate
    tl.store(h_ptr + rm[:, None] * N + rn[None, :], h, mask=rm[:, None] < M)


@pytest.mark.parametrize("bm, buffers", [(16, 2), (64, 3)])  # warp-level MMAs keep stages - 1, warpgroup ones stages
@pytest.mark.parametrize("gated", [False, True])
def test_dots_sharing_a_loaded_tile_stage_it_once_beside_all_their_other_operands(gated, bm, buffers):
    m, n, k, bk, stages = 45, 32, 64, 32, 3
    rng = np.random.default_rng(11)
    x, wg, wu = (rng.standard_normal(shape).astype(np.float16) for shape in ((m, k), (k, n), (k, n)))
    h = np.empty((m, n), np.float32)
    args, constexprs = (x, wg, wu, h, m), {"N": n, "K": k, "BM": bm, "BK": bk, "GATED": gated, "num_stages": stages}
    with simulator.profile() as prof:
        gated_kernel[(-(-m // bm),)](*args, **constexprs)
    gate, up = x.astype(np.float32) @ wg.astype(np.float32), x.astype(np.float32) @ wu.astype(np.float32)
    np.testing.assert_allclose(h, gate * up if gated else gate, rtol=1e-2, atol=1e-2)
    # a gated MLP's two projections keep x once and both weight tiles per buffer, as Triton's H200 builds of the
    # holdout6 gated MLP allocate (simulator/data/h200_compile_facts.jsonl)
    per_stage = 2 * (bm * bk + bk * n * (2 if gated else 1))
    compiled = bind(gated_kernel, args, constexprs, (-(-m // bm),)).compiled()
    assert compiled.metadata.shared == buffers * per_stage
    assert prof.launches[0].counters["shared_bytes_per_program"] == buffers * per_stage


@jit
def stencil_kernel(x_ptr, out_ptr, n, TAPS: tl.constexpr, BLOCK: tl.constexpr):
    """out[i] = sum of x[i + t] over TAPS unrolled taps."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for t in tl.static_range(TAPS):
        acc += tl.load(x_ptr + offs + t, mask=offs + t < n, other=0.0)
    tl.store(out_ptr + offs, acc, mask=offs < n)


@pytest.mark.parametrize("taps", [3, 9])
def test_an_unrolled_stencils_loads_are_live_together(taps):
    # the backend issues a straight-line kernel's loads as early as their addresses allow, so an unrolled stencil
    # holds every tap's tile at once (Triton's depthwise 3x3 convolution: 218 registers for a 64 x 32 fp32 tile on
    # 4 warps, h200_compile_facts.jsonl), where consuming each tap as it comes would hold two
    x = np.random.default_rng(2).standard_normal(3000).astype(np.float32)
    out = np.empty_like(x)
    compiled = bind(stencil_kernel, (x, out, 3000), {"TAPS": taps, "BLOCK": 256}, (12,)).compiled()
    assert gpu_resources.register_bytes(parse_function(compiled.asm["ir"])) >= (taps + 1) * 256 * 4


@jit
def row_softmax_kernel(x_ptr, out_ptr, n_rows, n_cols, BLOCK: tl.constexpr, TRANSPOSED_OUT: tl.constexpr,
                       WIDE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    offs = (row.to(tl.int64) if WIDE else row) * n_cols + cols
    x = tl.load(x_ptr + offs, mask=cols < n_cols, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    out = e / tl.sum(e, axis=0)
    if TRANSPOSED_OUT:
        tl.store(out_ptr + cols * n_rows + row, out, mask=cols < n_cols)
    else:
        tl.store(out_ptr + offs, out, mask=cols < n_cols)


@pytest.mark.parametrize("n_cols, vector", [(1500, 1), (2048, 4)])
def test_offsets_a_load_and_its_store_share_are_kept_between_them(n_cols, vector):
    # LLVM computes a row's offsets once for its load and its store and keeps them across the softmax: a 32-bit
    # offset per vector, one per element where the rows are unaligned (Triton's causally masked softmax over
    # 1,500-wide bf16 rows: 80 registers for 32 elements a thread, h200_compile_facts.jsonl)
    rows, block = 3, 2048
    x = np.random.default_rng(5).standard_normal((rows, n_cols)).astype(np.float32)
    sizes = {}
    for transposed in (False, True):
        out = np.empty((n_cols, rows) if transposed else (rows, n_cols), np.float32)
        sizes[transposed] = _row_softmax_bytes(x, out, block, transposed=transposed, wide=False)
    assert sizes[False] - sizes[True] == block * 4 // vector


def _row_softmax_bytes(x, out, block, transposed, wide):
    """row_softmax_kernel's live register bytes, after checking what it computes."""
    rows, n_cols = x.shape
    args = (x, out, rows, n_cols)
    constexprs = {"BLOCK": block, "TRANSPOSED_OUT": transposed, "WIDE": wide, "num_warps": 2}
    row_softmax_kernel[(rows,)](*args, **constexprs)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out.T if transposed else out, e / e.sum(axis=1, keepdims=True), rtol=1e-5)
    compiled = bind(row_softmax_kernel, args, constexprs, (rows,)).compiled()
    return gpu_resources.register_bytes(parse_function(compiled.asm["ir"]))


@pytest.mark.parametrize("n_cols, vector", [(1500, 1), (2048, 4)])
def test_64_bit_offsets_take_two_registers(n_cols, vector):
    # `row.to(tl.int64) * n_cols + cols` keeps a 64-bit offset per vector (a block pointer's offsets are 64-bit too):
    # Triton's block-pointer matmul over unaligned bf16 rows spills where 32-bit offsets would fit
    # (holdout12, h200_compile_facts.jsonl)
    block = 2048
    x = np.random.default_rng(6).standard_normal((3, n_cols)).astype(np.float32)
    narrow, wide = (_row_softmax_bytes(x, np.empty_like(x), block, transposed=False, wide=wide)
                    for wide in (False, True))
    # at the store, the kept offsets and the store's pointer tile are live together: 4 more bytes a vector each
    assert wide - narrow == 2 * block * 4 // vector


@jit
def column_sums_kernel(x_ptr, out_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, MODE: tl.constexpr):
    """MODE 0: one fold of the loaded tile; 1: two folds of it; 2: a store between load and fold; 3: in a loop."""
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    if MODE == 3:
        acc = tl.zeros((BLOCK_N,), dtype=tl.float32)
        for _ in range(2):
            x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0)
            acc += tl.sum(x * 2.0, axis=0)
        tl.store(out_ptr + cols, acc, mask=cols < N)
    else:
        x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=mask, other=0.0)
        if MODE == 2:
            tl.store(out_ptr + N + cols, cols.to(tl.float32), mask=cols < N)
        total = tl.sum(x * 2.0, axis=0)
        if MODE == 1:
            total += tl.max(x, axis=0)
        tl.atomic_add(out_ptr + cols, total, mask=cols < N)


def test_a_tile_only_one_fold_reads_is_never_whole_in_registers():
    # Triton's H200 build of a 256 x 128 column sum in one warp takes 72 registers, not the 1,024 of the tile
    # (simulator/data/h200_compile_facts.jsonl): each thread adds its elements in as they arrive
    x = np.random.default_rng(1).standard_normal((300, 100)).astype(np.float32)
    out = np.zeros(200, np.float32)

    def live(mode: int) -> int:
        compiled = bind(column_sums_kernel, (x, out, 300, 100), {"BLOCK_M": 64, "BLOCK_N": 128, "MODE": mode},
                        (5,)).compiled()
        return gpu_resources.register_bytes(parse_function(compiled.asm["ir"]))

    tile = 64 * 128 * 4
    streamed = live(0)  # what is left: the pointer tile and the `other` constant
    for kept in (1, 2, 3):  # two folds, a store that may alias in between, a loop Triton pipelines
        assert live(kept) >= streamed + tile, kept



@jit
def row_moments_kernel(x_ptr, out_ptr, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GATHER: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    total = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    squares = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for start in range(0, N, BLOCK_N):
        cols = start + tl.arange(0, BLOCK_N)
        if GATHER:  # the columns come from memory: each iteration computes new addresses
            cols = tl.load(out_ptr + 2 * M + cols % N).to(tl.int32)
        x = tl.load(x_ptr + rows[:, None] * N + cols[None, :], mask=(rows[:, None] < M) & (cols[None, :] < N),
                    other=0.0).to(tl.float32)
        total += x
        squares += x * x
    tl.store(out_ptr + rows, tl.sum(total, axis=1), mask=rows < M)
    tl.store(out_ptr + M + rows, tl.sum(squares, axis=1), mask=rows < M)


def test_a_loops_loop_invariant_offsets_stay_in_registers_one_per_access():
    # Triton's H200 build of a 64 x 256 row sum of unaligned fp16 rows (one element per access) on 8 warps takes
    # 255 registers (simulator/data/h200_compile_facts.jsonl): each element keeps its hoisted offset all loop long
    tile = 64 * 256

    def live(n: int, gather: bool) -> int:
        x = np.random.default_rng(2).standard_normal((100, n)).astype(np.float16)
        out = np.zeros(200 + n, np.float32)
        compiled = bind(row_moments_kernel, (x, out, 100, n),
                        {"BLOCK_M": 64, "BLOCK_N": 256, "GATHER": gather}, (2,)).compiled()
        return gpu_resources.register_bytes(parse_function(compiled.asm["ir"]))

    # one 4-byte offset per element against one per 8-element vector, live beside x * x
    assert live(1000, False) - live(1024, False) == pytest.approx(4 * tile - 4 * tile // 8, rel=0.05)
    # addresses that depend on a load of the same iteration are computed there and die at the access, before x * x
    assert live(1000, True) < live(1000, False) - 2 * tile


@jit
def advancing_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """Triton tutorial 03's K loop: pointer tiles advanced each iteration, masked along K."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    a_ptrs = a_ptr + rm[:, None] * K + rk[None, :]
    b_ptrs = b_ptr + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        a = tl.load(a_ptrs, mask=(rm[:, None] < M) & (rk[None, :] < K - k * BK), other=0.0)
        b = tl.load(b_ptrs, mask=(rk[:, None] < K - k * BK) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BK
        b_ptrs += BK * N
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


def test_dot_operands_an_async_copy_cannot_move_are_loaded_through_registers_into_one_buffer():
    # Triton's H200 builds of this loop over fp16 rows of 1,000 and 3,000 elements (one element per access: the
    # strides and K are not multiples of 16) allocate one stage of A and B at 2 to 5 stages, and take 255 registers
    # and spill where rows of 1,024 and 2,048 take 168 (simulator/data/h200_compile_facts.jsonl, holdout9)
    bm = bn = bk = 64
    stages = 4

    def build(m: int, n: int, k: int):
        rng = np.random.default_rng(5)
        a, b = rng.standard_normal((m, k)).astype(np.float16), rng.standard_normal((k, n)).astype(np.float16)
        c = np.empty((m, n), np.float32)
        args, constexprs = (a, b, c, m, n, k), {"BM": bm, "BN": bn, "BK": bk, "num_stages": stages}
        grid = (-(-m // bm), -(-n // bn))
        advancing_matmul_kernel[grid](*args, **constexprs)
        np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=2e-2, atol=2e-2)
        # the profiler's (instrumented) build, which carries the pointer tiles as a GPU does
        return bind(advancing_matmul_kernel, args, constexprs, grid).compiled(instrument=True)

    aligned, unaligned = build(100, 192, 256), build(100, 200, 232)
    one_stage = 2 * (bm * bk + bk * bn)
    assert aligned.metadata.shared == stages * one_stage  # warpgroup MMAs: one buffer per stage
    assert unaligned.metadata.shared == one_stage
    aligned_live, unaligned_live = (gpu_resources.register_bytes(parse_function(kernel.asm["ir"]))
                                    for kernel in (aligned, unaligned))
    # the loaded values (2 bytes each) and a 64-bit address per element, carried through the loop, where aligned
    # rows keep neither: an async copy moves them, one 64-bit address per 8-element vector
    assert unaligned_live - aligned_live >= (2 + 8 - 1) * (bm * bk + bk * bn)


@jit
def strided_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_bk, stride_bn, BM: tl.constexpr, BN: tl.constexpr,
                          BK: tl.constexpr):
    """C = A @ B with B's strides given: [K, N] row-major (stride_bn 1), or a linear layer's [N, K] weight."""
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(b_ptr + (k + rk)[:, None] * stride_bk + rn[None, :] * stride_bn)
        acc = tl.dot(a, b, acc)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc)


def test_a_k_major_dot_operand_keeps_an_address_per_vector_not_per_element():
    # a K-major B (W stored [N, K]) runs contiguously down its columns: Triton copies it 16 bytes at a time along K,
    # as it does a row-major B along N (A @ W^T of bf16 over 64 x 256 tiles on 2 warps: 251 registers,
    # simulator/data/h200_compile_facts.jsonl), so its pointer tile costs what the row-major one does
    m, n, k, bm, bn, bk = 64, 96, 256, 32, 32, 128
    rng = np.random.default_rng(11)
    a = rng.standard_normal((m, k)).astype(np.float16)
    w = rng.standard_normal((n, k)).astype(np.float16)
    live = {}
    for name, b, strides in (("row-major", np.ascontiguousarray(w.T), (n, 1)), ("k-major", w, (1, k))):
        c = np.empty((m, n), np.float32)
        args, constexprs, grid = (a, b, c, m, n, k, *strides), {"BM": bm, "BN": bn, "BK": bk}, (m // bm, n // bn)
        strided_matmul_kernel[grid](*args, **constexprs)
        np.testing.assert_allclose(c, a.astype(np.float32) @ w.T.astype(np.float32), rtol=2e-2, atol=2e-2)
        compiled = bind(strided_matmul_kernel, args, constexprs, grid).compiled()
        live[name] = gpu_resources.register_bytes(parse_function(compiled.asm["ir"]))
    assert abs(live["k-major"] - live["row-major"]) < bk * bn  # one 4-byte offset an element would add 4 x bk x bn


@jit
def two_dot_kernel(a_ptr, b_ptr, c_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr,
                   CHAIN: tl.constexpr, PRECISION: tl.constexpr):
    """out = a @ b, or (a @ b) @ c with the first product fed to the second dot from registers (attention's P @ V)."""
    m, n, k = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + m[:, None] * K + k[None, :])
    b = tl.load(b_ptr + k[:, None] * N + n[None, :])
    out = tl.dot(a, b, input_precision=PRECISION)
    if CHAIN:
        c = tl.load(c_ptr + n[:, None] * N + n[None, :])
        out = tl.dot(out.to(c.dtype), c, input_precision=PRECISION)
    tl.store(out_ptr + m[:, None] * N + n[None, :], out)


@pytest.mark.parametrize("rows, num_warps, dtype, chain, precision, machine, kind", [
    (64, 4, np.float16, False, "tf32", "h200", "async"),  # warpgroup MMAs read both operands from shared memory
    (32, 4, np.float16, False, "tf32", "h200", "sync"),  # fewer rows than a warpgroup MMA takes
    (64, 2, np.float16, False, "tf32", "h200", "sync"),  # not a whole warpgroup
    (64, 4, np.float16, True, "tf32", "h200", "async_registers"),  # the second dot's operand was computed
    (64, 4, np.float32, False, "tf32", "h200", "async_registers"),  # TF32 operands may transpose through registers
    (64, 4, np.float32, False, "ieee", "h200", "sync"),  # no tensor core
    (64, 4, np.float16, False, "tf32", "mtt-s4000", "sync"),  # no asynchronous MMA path known
])
def test_dot_kind_says_where_the_mma_operands_live(rows, num_warps, dtype, chain, precision, machine, kind):
    n = k = 32
    rng = np.random.default_rng(1)
    a, b, c = (rng.standard_normal(shape).astype(dtype) for shape in ((rows, k), (k, n), (n, n)))
    out = np.empty((rows, n), np.float32)
    compiled = bind(two_dot_kernel, (a, b, c, out), dict(M=rows, N=n, K=k, CHAIN=chain, PRECISION=precision,
                                                         num_warps=num_warps), (1,)).compiled()
    assert gpu_resources.dot_kind(parse_function(compiled.asm["ir"]), simulator.get_spec(machine), num_warps) == kind
    weights = gpu_resources.MMA_WEIGHTS
    assert weights["async"] < weights["async_registers"] < weights["sync"]
