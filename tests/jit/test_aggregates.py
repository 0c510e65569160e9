"""Triton's aggregates (`@tl.core._aggregate`): classes of tensors built in kernels, passed into and returned
from @jit functions, carried through loops and ifs, with @jit and plain methods and aggregate_replace."""

import re

import numpy as np
import pytest

import dsl as tl
from dsl.errors import CompilationError
from jit import cdiv, jit

EXECUTORS = [False, True, "eager"]


@tl.core._aggregate
class RunningStats:
    """Online mean/max over rows: two tensors and a compile-time scale."""

    total: tl.tensor
    biggest: tl.tensor
    count: tl.tensor
    scale: tl.constexpr

    def __init__(self, total, biggest, count, scale):
        self.total = total
        self.biggest = biggest
        self.count = count
        self.scale = tl.constexpr(scale)

    @jit
    def update(self, x):
        return RunningStats(self.total + x, tl.maximum(self.biggest, x), self.count + 1, self.scale)

    @jit
    def finish(self):
        return self.total * self.scale / self.count, self.biggest

    def scale_value(self):
        return self.scale


@tl.core._aggregate
class Window:
    """An aggregate holding another one."""

    stats: RunningStats
    offsets: tl.tensor

    def __init__(self, stats, offsets):
        self.stats = stats
        self.offsets = offsets


@jit
def fresh_stats(BLOCK: tl.constexpr, scale: tl.constexpr):
    return RunningStats(tl.zeros([BLOCK], tl.float32), tl.full([BLOCK], float("-inf"), tl.float32),
                        tl.zeros([BLOCK], tl.int32), scale)


@jit
def stats_kernel(x_ptr, mean_ptr, max_ptr, n_rows, n_cols, BUMP_ABOVE, BLOCK: tl.constexpr):
    cols = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    window = Window(fresh_stats(BLOCK, 2.0), cols)
    for row in range(n_rows):
        x = tl.load(x_ptr + row * n_cols + window.offsets, mask=window.offsets < n_cols, other=0.0)
        window = Window(window.stats.update(x), window.offsets)
    stats = window.stats
    if n_rows > BUMP_ABOVE:  # a run-time if whose branches give different aggregates
        stats = tl.aggregate_replace(stats, biggest=stats.biggest + 1.0)
    else:
        stats = stats.update(tl.full([BLOCK], 100.0, tl.float32))
    tl.static_assert(stats.scale_value() == 2.0)
    mean, biggest = stats.finish()
    tl.store(mean_ptr + cols, mean, mask=cols < n_cols)
    tl.store(max_ptr + cols, biggest, mask=cols < n_cols)


@pytest.mark.parametrize("interpret", EXECUTORS)
@pytest.mark.parametrize("bump_above", [0, 99])
def test_aggregates_flow_through_calls_loops_and_ifs(rng, interpret, bump_above):
    rows, cols, block = 5, 37, 16
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    mean, biggest = np.zeros(cols, np.float32), np.zeros(cols, np.float32)
    stats_kernel[(cdiv(cols, block),)](x, mean, biggest, rows, cols, bump_above, BLOCK=block, interpret=interpret)
    if rows > bump_above:
        want_mean, want_max = 2.0 * x.sum(0) / rows, x.max(0) + 1.0
    else:
        want_mean, want_max = 2.0 * (x.sum(0) + 100.0) / (rows + 1), np.full(cols, 100.0)
    np.testing.assert_allclose(mean, want_mean, rtol=1e-5)
    np.testing.assert_array_equal(biggest, want_max.astype(np.float32))


@tl.core._aggregate
class Incomplete:
    a: tl.tensor
    b: tl.tensor

    def __init__(self, a):
        self.a = a


@jit
def misuse_kernel(x_ptr, CASE: tl.constexpr):
    x = tl.load(x_ptr)
    if CASE == 0:
        Incomplete(x)
    elif CASE == 1:
        tl.aggregate_replace(fresh_stats(4, 1.0), mean=x)
    else:
        stats = fresh_stats(4, 1.0)
        if x > 0:
            stats = x
        tl.store(x_ptr, stats.total)


@pytest.mark.parametrize("case, message", [
    (0, "constructor for Incomplete did not initialize attribute 'b'"),
    (1, "RunningStats has no attribute 'mean'"),
    (2, "stats is a RunningStats in one branch and a different value in the other"),
])
def test_misuse_is_a_compile_error_naming_the_field(case, message):
    with pytest.raises(CompilationError, match=re.escape(message)):
        misuse_kernel[(1,)](np.ones(1, np.float32), CASE=case)


def _with_scale_method(body):
    """A one-field aggregate class named like another, differing only in its method's code."""
    return tl.core._aggregate(type("Same", (), {"__annotations__": {"total": tl.tensor}, "scale_value": body}))


def test_editing_a_method_changes_the_key_of_kernels_using_the_class():
    from jit.kernel import _aggregate_key

    first = _aggregate_key(RunningStats)
    assert first == _aggregate_key(RunningStats)  # stable (and its self-reference does not recurse)
    assert _aggregate_key(_with_scale_method(lambda self: 2)) == _aggregate_key(_with_scale_method(lambda self: 2))
    assert _aggregate_key(_with_scale_method(lambda self: 2)) != _aggregate_key(_with_scale_method(lambda self: 3))


@tl.core._aggregate
class Pair:
    first: tl.tensor
    second: tl.tensor

    def __init__(self, first, second):
        self.first = first
        self.second = second

    @jit
    def set_first(self, value):
        self.first = value

    def get_second(self, _semantic=None):  # a builtin-style method, called as Python
        return self.second

    def __getitem__(self, index, _semantic=None):
        return self.first if index == 0 else self.second

    def __setitem__(self, index, value, _semantic=None):
        setattr(self, "first" if index == 0 else "second", value)


@jit
def pair_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    pair = Pair(tl.load(x_ptr + offs), 3)  # a literal in a tl.tensor field becomes a scalar tensor
    tl.static_assert(pair.second.dtype == tl.int32)
    pair.set_first(pair.first * 2)
    pair[1] = pair[1] + 4
    pair.second = pair.get_second() * 10
    tl.store(out_ptr + offs, pair[0] + pair.second)


@pytest.mark.parametrize("interpret", EXECUTORS)
def test_fields_assigned_by_methods_attributes_and_items(rng, interpret):
    x = rng.integers(-100, 100, 16).astype(np.int32)
    out = np.zeros(16, np.int32)
    pair_kernel[(1,)](x, out, BLOCK=16, interpret=interpret)
    np.testing.assert_array_equal(out, x * 2 + 70)


@jit
def branch_mutation_kernel(x_ptr):
    pair = Pair(tl.load(x_ptr), 1)
    if tl.load(x_ptr) > 0:
        pair.first = 0
    tl.store(x_ptr, pair.first)


def test_assigning_a_field_inside_run_time_control_flow_is_refused():
    with pytest.raises(CompilationError, match=re.escape("Pair field first is assigned inside run-time control flow")):
        branch_mutation_kernel[(1,)](np.ones(1, np.int32))
