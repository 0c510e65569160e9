"""Lesson 5: autotuning — let the machine pick block sizes, with @autotune, @heuristics and wavetile-tune.

The best BLOCK_M / BLOCK_N / BLOCK_K of a matmul depend on the problem and on the GPU: big tiles
reuse more data per load but hold more registers and shared memory, leave fewer programs to fill
the compute units, and waste work on masked tails. Instead of guessing, list candidates:

    @autotune(configs=[Config({"BLOCK_M": 64, ...}, num_warps=4), ...], key=["M", "N", "K"])
    @heuristics({"EVEN_K": lambda args: args["K"] % args["BLOCK_K"] == 0})
    @jit
    def matmul_kernel(...)

The first launch for a new (M, N, K) and argument dtypes runs every config once and keeps the
fastest; later launches with the same key reuse it (also in the next process: the choice is cached
on disk). "Fastest" is the modeled time on the emulated GPU (the default objective) or the
measured CPU time (`objective="cpu"`). `kernel.best_config` is the choice, `kernel.records` every
candidate's result; WAVETILE_AUTOTUNE_PRINT=1 prints them as a table. @heuristics computes
meta-parameters from the arguments, after the config set the block sizes (here: whether K needs
a mask).

The same sweep from the command line, with worker processes, output checks and a ranked table:

    wavetile-tune tutorials/05_autotuning.py:matmul_kernel M=512 N=512 K=512 --machine h200 --jobs 2
    wavetile-tune tutorials/05_autotuning.py:matmul_kernel M=512 N=512 K=512 --machine mtt-s5000 --jobs 2

Run: python tutorials/05_autotuning.py
"""

import itertools

import numpy as np

import dsl as tl
from jit import Config, autotune, cdiv, heuristics, jit
from jit.tune import TuneProblem, tune_problem

try:
    from tutorials._bench import print_table, small
except ImportError:
    from _bench import print_table, small

# 36 candidates: tile shape x depth x warps
MATMUL_CONFIGS = [Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}, num_warps=w, num_stages=3)
                  for bm, bn, bk, w in itertools.product((32, 64, 128), (32, 64, 128), (32, 64), (4, 8))
                  if not (w == 8 and bm * bn < 64 * 64) and not (w == 4 and bm * bn > 64 * 128)]


@jit
def _matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,
            EVEN_K: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    first_pid_m = (pid // num_pid_in_group) * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m

    offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)) % M
    offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)) % N
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        if EVEN_K:  # no mask needed: every K step is full
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_K, other=0.0)
            b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    offs_cm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_cn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, acc, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


_even_k = heuristics({"EVEN_K": lambda args: args["K"] % args["BLOCK_K"] == 0})

# the full search space: what wavetile-tune sweeps
matmul_kernel = autotune(configs=MATMUL_CONFIGS, key=["M", "N", "K"])(_even_k(_matmul))

# a handful of configs for the quick run of this lesson
matmul_small = autotune(configs=[c for c in MATMUL_CONFIGS if c.kwargs["BLOCK_K"] == 32 and c.num_warps == 4][:4],
                        key=["M", "N", "K"])(_even_k(_matmul))


def grid(M: int, N: int):
    return lambda meta: (cdiv(M, meta["BLOCK_M"]) * cdiv(N, meta["BLOCK_N"]),)


def matmul(a: np.ndarray, b: np.ndarray, kernel=matmul_kernel) -> np.ndarray:
    """C = A @ B with fp32 accumulation, block sizes chosen by the autotuner."""
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul: shapes {a.shape} and {b.shape} do not chain")
    if a.dtype != b.dtype or a.dtype not in (np.float16, np.float32):
        raise ValueError(f"matmul: wants two float16 or two float32 arrays, got {a.dtype} and {b.dtype}")
    (M, K), (_, N) = a.shape, b.shape
    c = np.empty((M, N), dtype=np.float32)
    kernel[grid(M, N)](a, b, c, M, N, K, *(s // a.itemsize for s in a.strides), *(s // b.itemsize for s in b.strides),
                       *(s // c.itemsize for s in c.strides))
    return c


@tune_problem(matmul_kernel, name="tutorial.matmul")
def matmul_problem(M: int = 512, N: int = 512, K: int = 512, dtype: str = "float16") -> TuneProblem:
    """What wavetile-tune sweeps: fixed-seed inputs, so every worker process builds the same problem."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((M, K)).astype(dtype)
    b = rng.standard_normal((K, N)).astype(dtype)
    c = np.empty((M, N), dtype=np.float32)
    args = (a, b, c, M, N, K, K, 1, N, 1, N, 1)
    return TuneProblem(matmul_kernel, args=args, grid=grid(M, N), outputs=["c_ptr"], rtol=1e-3,
                       atol=1e-3 * np.sqrt(K))


def main() -> None:
    rng = np.random.default_rng()
    kernel = matmul_small if small() else matmul_kernel
    sizes = [(67, 45, 93), (83, 50, 75)] if small() else [(256, 256, 256), (500, 300, 200)]
    for M, N, K in sizes:
        a = rng.standard_normal((M, K)).astype(np.float16)
        b = rng.standard_normal((K, N)).astype(np.float16)
        c = matmul(a, b, kernel)
        np.testing.assert_allclose(c, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-3, atol=1e-3 * np.sqrt(K))
        tuned_now = kernel.cache_hit is None
        print(f"\nM={M} N={N} K={K}: best config {kernel.best_config} "
              f"({'tuned now' if tuned_now else 'from the ' + kernel.cache_hit + ' cache'})")
        if kernel.records:
            rows = [(str(r.config), f"{r.modeled_seconds * 1e6:.2f}", r.bound, f"{r.cpu_seconds * 1e3:.3f}")
                    for r in sorted(kernel.records, key=lambda r: r.modeled_seconds)]
            print_table(rows, ("config", "modeled us", "bound", "CPU ms"))
        matmul(a, b, kernel)  # same key: no tuning, the cached choice runs
        assert kernel.cache_hit == "memory"
    print("\nmatmul with autotuned block sizes matches float64 numpy; the second launch reused the choice")


if __name__ == "__main__":
    main()
