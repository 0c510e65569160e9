"""`tl.extra.libdevice` has every unary math op of the op table under its name, and nothing it lacks;
a function only the table declares (cbrt) compiles, interprets and matches numpy."""

from __future__ import annotations

import numpy as np
import pytest

import dsl as tl
from dsl import libdevice
from dsl.ir.ops import UNARY_MATH
from jit import cdiv, jit


@pytest.mark.parametrize("name", UNARY_MATH)
def test_every_unary_math_op_is_a_libdevice_function(name):
    fn = getattr(libdevice, name)
    assert callable(fn) and fn.__name__ == name
    assert getattr(libdevice, name) is fn


def test_a_function_the_table_lacks_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'acoshf'"):
        libdevice.acoshf  # noqa: B018


@jit
def _cbrt_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, libdevice.cbrt(tl.load(x_ptr + offs, mask=mask)), mask=mask)


@pytest.mark.parametrize("interpret", [False, True], ids=["compiled", "interpreted"])
def test_cbrt_matches_numpy_on_special_and_random_fp32(rng, interpret):
    """libdevice.cbrt, a function only the table declares: within 1 ulp of numpy (f64 cbrt rounded to fp32)."""
    fi = np.finfo(np.float32)
    specials = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 8.0, -27.0, 0.001, fi.max, -fi.max,
                         fi.tiny, fi.smallest_subnormal, -fi.smallest_subnormal, fi.eps], np.float32)
    bits = rng.integers(0, 2**32, 20_000, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = np.concatenate([specials, bits, rng.uniform(-1e3, 1e3, 20_000).astype(np.float32)])
    out = np.empty_like(x)
    _cbrt_kernel[(cdiv(x.size, 1024),)](x, out, x.size, BLOCK=1024, interpret=interpret)
    want = np.cbrt(x.astype(np.float64)).astype(np.float32)
    ulps = np.abs(out.view(np.int32).astype(np.int64) - want.view(np.int32).astype(np.int64))
    ulps[np.isnan(out) & np.isnan(want)] = 0
    assert ulps.max() <= 1, f"cbrt({x[np.argmax(ulps)]!r}) = {out[np.argmax(ulps)]!r}, want {want[np.argmax(ulps)]!r}"
    assert np.array_equal(np.signbit(out[:5]), np.signbit(specials[:5]))
