"""Lesson 1: vector addition — programs, blocks, masks.

A kernel is a Python function decorated with @jit. It is launched over a grid of *programs*;
each program handles one BLOCK of elements. `tl.program_id(0)` says which block this program
owns, `tl.arange` builds the offsets of its elements, and a *mask* switches off the lanes that fall
past the end of the arrays, so sizes need not be multiples of BLOCK.

Run: python tutorials/01_vector_add.py
"""

import numpy as np

import dsl as tl
from jit import cdiv, jit

try:
    from tutorials._bench import median_time, print_table, small
except ImportError:  # run as a script from the tutorials folder
    from _bench import median_time, print_table, small


@jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements  # the last block may be partial
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


def add(x: np.ndarray, y: np.ndarray, block: int = 1024) -> np.ndarray:
    out = np.empty_like(x)
    n = x.size
    # the grid can be a function of the launch's meta-parameters, as in Triton
    add_kernel[lambda meta: (cdiv(n, meta["BLOCK_SIZE"]),)](x, y, out, n, BLOCK_SIZE=block)
    return out


def main() -> None:
    rng = np.random.default_rng(0)
    sizes = [1000, 4097] if small() else [98_432, 1 << 20, 1 << 22]
    rows = []
    for n in sizes:
        x = rng.standard_normal(n, dtype=np.float32)
        y = rng.standard_normal(n, dtype=np.float32)
        out = add(x, y)
        np.testing.assert_array_equal(out, x + y)  # exact: one IEEE add per element
        t_wave = median_time(lambda: add(x, y))
        t_numpy = median_time(lambda: np.add(x, y))
        rows.append((n, f"{t_wave * 1e3:.3f}", f"{t_numpy * 1e3:.3f}", f"{t_numpy / t_wave:.2f}x"))
    print("vector add, fp32: results equal numpy's exactly")
    print_table(rows, ("n", "wavetile ms", "numpy ms", "speed vs numpy"))


if __name__ == "__main__":
    main()
