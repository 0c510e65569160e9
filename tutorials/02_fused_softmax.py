"""Lesson 2: fused softmax — reductions along a row, and why fusing pays.

numpy computes a row softmax in five passes over memory (max, subtract, exp, sum, divide).
A kernel can load each row once into a block, do all five steps on it, and store once. Each
program walks several rows (`tl.range` with a stride of `tl.num_programs`), so a small grid covers
any number of rows. Columns past the row's end are loaded as -inf, which exp turns into 0.

Run: python tutorials/02_fused_softmax.py
"""

import numpy as np

import dsl as tl
from jit import jit, next_power_of_2

try:
    from tutorials._bench import median_time, print_table, small
except ImportError:
    from _bench import median_time, print_table, small


@jit
def softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_rows, n_cols, BLOCK_SIZE: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row in tl.range(row_start, n_rows, row_step):
        cols = tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(in_ptr + row * in_row_stride + cols, mask=mask, other=-float("inf"))
        z = x - tl.max(x, axis=0)
        num = tl.exp(z)
        den = tl.sum(num, axis=0)
        tl.store(out_ptr + row * out_row_stride + cols, num / den, mask=mask)


def softmax(x: np.ndarray, programs: int = 64) -> np.ndarray:
    n_rows, n_cols = x.shape
    out = np.empty_like(x)
    grid = (min(programs, n_rows),)
    softmax_kernel[grid](out, x, x.strides[0] // x.itemsize, out.strides[0] // out.itemsize, n_rows, n_cols,
                         BLOCK_SIZE=next_power_of_2(n_cols))
    return out


def numpy_softmax(x: np.ndarray) -> np.ndarray:
    z = x - x.max(axis=1, keepdims=True)
    num = np.exp(z)
    return num / num.sum(axis=1, keepdims=True)


def main() -> None:
    rng = np.random.default_rng(0)
    shapes = [(37, 100), (64, 781)] if small() else [(1823, 781), (4096, 1024)]
    rows = []
    for shape in shapes:
        x = rng.standard_normal(shape, dtype=np.float32) * 4
        out = softmax(x)
        np.testing.assert_allclose(out, numpy_softmax(x.astype(np.float64)), rtol=1e-5, atol=1e-7)
        t_wave = median_time(lambda: softmax(x))
        t_numpy = median_time(lambda: numpy_softmax(x))
        rows.append((f"{shape[0]}x{shape[1]}", f"{t_wave * 1e3:.2f}", f"{t_numpy * 1e3:.2f}",
                     f"{t_numpy / t_wave:.2f}x"))
    print("fused softmax, fp32: matches numpy (float64) to 1e-5 relative")
    print_table(rows, ("shape", "wavetile ms", "numpy ms", "speed vs numpy"))


if __name__ == "__main__":
    main()
