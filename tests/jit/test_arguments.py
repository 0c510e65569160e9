"""Argument binding follows Triton: array types, int width by value, the ==1 and divisible-by-16 keys, dlpack."""

import numpy as np
import pytest

import dsl as tl
from jit import jit


@jit
def fill_kernel(out_ptr, value, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, (offs * 0 + value).to(out_ptr.dtype.element_ty), mask=offs < n)


class DLPackOnly:
    """An array that only speaks the dlpack protocol, like a CPU torch tensor."""

    def __init__(self, array):
        self._array = array

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._array.__dlpack_device__()


def test_dlpack_argument_is_zero_copy(rng):
    backing = np.zeros(37, np.float32)
    value = float(rng.integers(2, 100))
    fill_kernel[(1,)](DLPackOnly(backing), value, 37, BLOCK=64)
    np.testing.assert_array_equal(backing, value)


def test_torch_cpu_tensor_if_available():
    torch = pytest.importorskip("torch")
    t = torch.zeros(20, dtype=torch.bfloat16)
    fill_kernel[(1,)](t, 3.0, 20, BLOCK=32)
    assert bool((t == 3).all())


def test_int_width_and_specialisation_keys():
    out = np.zeros(40, np.int64)
    fill_kernel.compiled.clear()
    fill_kernel[(1,)](out, 7, 40, BLOCK=64)  # value: i32
    fill_kernel[(1,)](out, 2**40, 40, BLOCK=64)  # value: i64 by value
    assert (out == 2**40).all()
    signatures = [k.signature for k in fill_kernel.compiled.values()]
    assert {str(s["value"]) for s in signatures} == {"i32", "i64"}
    fill_kernel[(1,)](out, 1, 40, BLOCK=64)  # an int equal to 1 becomes a constant
    assert any(k.signature["value"] == 1 for k in fill_kernel.compiled.values())
    before = len(fill_kernel.compiled)
    fill_kernel[(1,)](out, 9, 32, BLOCK=64)  # n divisible by 16: a new specialisation, as in Triton
    assert len(fill_kernel.compiled) == before + 1
    assert (out[:32] == 9).all() and (out[32:] == 1).all()


def test_unknown_keyword_and_direct_call():
    out = np.zeros(4, np.float32)
    with pytest.raises(KeyError, match="unrecognised"):
        fill_kernel[(1,)](out, 1.0, 4, BLOCK=8, BOGUS=3)
    with pytest.raises(RuntimeError, match="launch it"):
        fill_kernel(out, 1.0, 4, BLOCK=8)


def test_unsupported_argument_type_names_the_argument():
    with pytest.raises(TypeError, match="value"):
        fill_kernel[(1,)](np.zeros(4, np.float32), object(), 4, BLOCK=8)
