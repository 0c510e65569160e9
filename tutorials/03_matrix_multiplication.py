"""Lesson 3: matrix multiplication — 2-D tiles, a K loop, grouped ordering, fp16 in / fp32 out.

Each program computes one BLOCK_M x BLOCK_N tile of C. It walks K in steps of BLOCK_K, loading a
tile of A and a tile of B and accumulating `tl.dot(a, b)` into an fp32 accumulator. Pointer tiles
are built from row and column offsets with `[:, None]` and `[None, :]` broadcasting.

Grouped ordering: programs that run at the same time should share tiles of A and B so they hit in
L2. Launching programs row by row reuses one row of A but streams all of B; grouping GROUP_M rows
of tiles together reuses both. On a GPU this changes the L2 hit rate; here it changes nothing in
the result, which lets the profiler (lesson 4) show its effect alone.

fp16 inputs are multiplied exactly and accumulated in fp32, like tensor cores; fp32 inputs default
to TF32 precision (`input_precision="tf32"`), as Triton does on GPUs — pass "ieee" for exact fp32.

Run: python tutorials/03_matrix_multiplication.py
"""

import numpy as np

import dsl as tl
from jit import cdiv, jit

try:
    from tutorials._bench import median_time, print_table, small
except ImportError:
    from _bench import median_time, print_table, small


@jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
                  PRECISION: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)

    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator, input_precision=PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, accumulator, mask=c_mask)


def matmul(a: np.ndarray, b: np.ndarray, block=(64, 64, 32), group_m: int = 8, precision: str = "ieee") -> np.ndarray:
    (M, K), (_, N) = a.shape, b.shape
    c = np.empty((M, N), dtype=np.float32)
    bm, bn, bk = block
    grid = (cdiv(M, bm) * cdiv(N, bn),)
    matmul_kernel[grid](a, b, c, M, N, K, *(s // a.itemsize for s in a.strides), *(s // b.itemsize for s in b.strides),
                        *(s // c.itemsize for s in c.strides), BLOCK_M=bm, BLOCK_N=bn, BLOCK_K=bk, GROUP_M=group_m,
                        PRECISION=precision)
    return c


def main() -> None:
    rng = np.random.default_rng(0)
    sizes = [(67, 45, 93)] if small() else [(512, 512, 512), (1000, 700, 300)]
    rows = []
    for M, N, K in sizes:
        for dtype in (np.float32, np.float16):
            a = rng.standard_normal((M, K)).astype(dtype)
            b = rng.standard_normal((K, N)).astype(dtype)
            c = matmul(a, b)
            expected = a.astype(np.float64) @ b.astype(np.float64)
            np.testing.assert_allclose(c, expected, rtol=1e-4, atol=1e-4 * np.sqrt(K))
            a32, b32 = a.astype(np.float32), b.astype(np.float32)
            t_wave = median_time(lambda: matmul(a, b), repeat=3)
            t_numpy = median_time(lambda: a32 @ b32, repeat=3)
            gflops = 2 * M * N * K / t_wave / 1e9
            rows.append((f"{M}x{N}x{K}", np.dtype(dtype).name, f"{t_wave * 1e3:.2f}", f"{gflops:.1f}",
                         f"{t_numpy * 1e3:.2f}", f"{t_numpy / t_wave:.2f}"))
    print("matmul (fp32 accumulate): matches float64 numpy within 1e-4")
    print_table(rows, ("M x N x K", "inputs", "wavetile ms", "GFLOP/s", "numpy fp32 ms", "ratio"))


if __name__ == "__main__":
    main()
