"""Shape ops: broadcast, expand_dims, permute, flip, reshape, join, split, cat, gather, sort, histogram —
each both fused into a consumer and stored."""

from __future__ import annotations

import numpy as np
import pytest
from codegen_harness import KernelBuilder, compile_kernel, ptr, tile
from test_lower_reduce import load_tile, store_tile

from dsl import dtypes as T


def run_shape_kernel(build, inputs: list[np.ndarray], out_sizes: list[int], in_dts, out_dts):
    args = {f"in{i}": ptr(d) for i, d in enumerate(in_dts)}
    args.update({f"out{i}": ptr(d) for i, d in enumerate(out_dts)})
    kb = KernelBuilder("shapes", **args)
    ins, outs = kb.args[:len(in_dts)], kb.args[len(in_dts):]
    results = build(kb, ins)
    for p, value in zip(outs, results):
        store_tile(kb, p, value)
    kernel = compile_kernel(kb.done())
    arrays = [np.zeros(n, d.to_numpy()) for n, d in zip(out_sizes, out_dts)]
    assert kernel(*inputs, *arrays).rc == 0
    return arrays


def test_permute_flip_broadcast_expand_fused_and_stored(rng):
    data = rng.standard_normal(24).astype(np.float32)

    def build(kb, ins):
        x = load_tile(kb, ins[0], (2, 3, 4))
        perm = kb.op("tile.permute", [x], tile(T.float32, 4, 2, 3), order=(2, 0, 1))
        flipped = kb.op("tile.flip", [perm], perm.type, axis=2)
        fused = kb.binary("add", flipped, kb.const(1.0, T.float32, 4, 2, 3))
        stored = kb.op("tile.flip", [x], x.type, axis=0)  # two uses: materialised as a view
        twice = kb.binary("add", stored, stored)
        col = kb.op("tile.expand_dims", [kb.arange(4)], tile(T.int32, 4, 1), axis=1)
        wide = kb.op("tile.broadcast", [col], tile(T.int32, 4, 5))
        return [fused, twice, wide]

    fused, twice, wide = run_shape_kernel(build, [data], [24, 24, 20], [T.float32], [T.float32, T.float32, T.int32])
    x = data.reshape(2, 3, 4)
    np.testing.assert_array_equal(fused.reshape(4, 2, 3), np.flip(np.transpose(x, (2, 0, 1)), 2) + 1)
    np.testing.assert_array_equal(twice.reshape(2, 3, 4), np.flip(x, 0) * 2)
    np.testing.assert_array_equal(wide.reshape(4, 5), np.broadcast_to(np.arange(4)[:, None], (4, 5)))


def test_reshape_join_split_cat(rng):
    a = rng.integers(-99, 99, 16).astype(np.int32)
    b = rng.integers(-99, 99, 16).astype(np.int32)

    def build(kb, ins):
        x = load_tile(kb, ins[0], (4, 4))
        y = load_tile(kb, ins[1], (4, 4))
        joined = kb.op("tile.join", [x, kb.binary("mul", y, kb.const(10, T.int32, 4, 4))], tile(T.int32, 4, 4, 2))
        left, right = kb.b.create("tile.split", [joined], [tile(T.int32, 4, 4)] * 2).results
        catted = kb.op("tile.cat", [kb.binary("sub", right, left), x], tile(T.int32, 8, 4))
        flat = kb.op("tile.reshape", [kb.op("tile.permute", [catted], tile(T.int32, 4, 8), order=(1, 0))],
                     tile(T.int32, 32))
        return [joined, flat]

    joined, flat = run_shape_kernel(build, [a, b], [32, 32], [T.int32, T.int32], [T.int32, T.int32])
    x, y = a.reshape(4, 4), b.reshape(4, 4)
    np.testing.assert_array_equal(joined.reshape(4, 4, 2), np.stack([x, y * 10], axis=-1))
    np.testing.assert_array_equal(flat, np.concatenate([y * 10 - x, x]).T.ravel())


def test_gather_along_each_axis_clamps_indices(rng):
    data = rng.standard_normal(32).astype(np.float32)
    idx = rng.integers(0, 8, 32).astype(np.int32)
    idx[3] = 100  # out of range: clamped

    def build(kb, ins):
        x = load_tile(kb, ins[0], (4, 8))
        i = load_tile(kb, ins[1], (4, 8))
        along_1 = kb.op("tile.gather", [x, i], x.type, axis=1)
        i0 = kb.binary("and", i, kb.const(3, T.int32, 4, 8))
        along_0 = kb.op("tile.gather", [x, i0], x.type, axis=0)
        return [along_1, along_0]

    g1, g0 = run_shape_kernel(build, [data, idx], [32, 32], [T.float32, T.int32], [T.float32, T.float32])
    x, i = data.reshape(4, 8), idx.reshape(4, 8)
    np.testing.assert_array_equal(g1.reshape(4, 8), np.take_along_axis(x, np.minimum(i, 7), axis=1))
    np.testing.assert_array_equal(g0.reshape(4, 8), np.take_along_axis(x, i & 3, axis=0))


@pytest.mark.parametrize("n, descending, dt", [(64, False, T.float32), (16, True, T.int32), (12, False, T.int16),
                                               (7, True, T.float32), (256, True, T.uint8)])
def test_sort_rows(rng, n, descending, dt):
    rows = 3
    if dt.is_floating():
        data = rng.standard_normal(rows * n).astype(dt.to_numpy())
    else:
        info = np.iinfo(dt.to_numpy())
        data = rng.integers(info.min, info.max, rows * n).astype(dt.to_numpy())

    def build(kb, ins):
        x = load_tile(kb, ins[0], (rows, n))
        return [kb.op("tile.sort", [x], x.type, descending=descending)]

    (out,) = run_shape_kernel(build, [data], [rows * n], [dt], [dt])
    expect = np.sort(data.reshape(rows, n), axis=1)
    np.testing.assert_array_equal(out.reshape(rows, n), expect[:, ::-1] if descending else expect)


def test_histogram_counts_masked_in_values_only(rng):
    data = rng.integers(-3, 20, 256).astype(np.int32)

    def build(kb, ins):
        x = load_tile(kb, ins[0], (256,))
        mask = kb.cmp("lt", kb.arange(256), kb.const(200, T.int32, 256))
        return [kb.op("tile.histogram", [x, mask], tile(T.int32, 16), num_bins=16)]

    (out,) = run_shape_kernel(build, [data], [16], [T.int32], [T.int32])
    kept = data[:200]
    np.testing.assert_array_equal(out, np.bincount(kept[(kept >= 0) & (kept < 16)], minlength=16))
