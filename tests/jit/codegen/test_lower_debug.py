"""tile.print (packed 8-byte values through the callback), tile.assert (first failing lane), tile.barrier,
and the shape of the generated code: vectorised tile loops, compile time."""

from __future__ import annotations

import re
import struct

import numpy as np
from codegen_harness import KernelBuilder, compile_kernel, ptr, scalar
from test_lower_kernels import row_softmax, vector_add

from dsl import dtypes as T
from jit import abi


def test_print_packs_every_operand_as_eight_byte_values(rng):
    kb = KernelBuilder("show", x=ptr(T.float16), k=scalar(T.int8))
    x, k = kb.args
    values = kb.load(kb.addptr(x, kb.arange(4)))
    flags = kb.cmp("gt", kb.arange(4), kb.const(1, T.int32, 4))
    kb.b.create("tile.print", [kb.pid(), values, k, flags, x], [], {"prefix": "vals: ", "hex": False})
    kb.b.create("tile.barrier", [], [])
    kernel = compile_kernel(kb.done())
    data = rng.standard_normal(4).astype(np.float16)
    result = kernel(data, -5, grid=(3,))
    assert result.rc == 0
    assert kernel.sites[1].kind == "print" and kernel.sites[1].message == "vals: "
    by_pid = {pid: values for _, pid, values in result.prints}
    assert sorted(by_pid) == [0, 1, 2]
    raw = by_pid[2]
    assert len(raw) == 1 + 4 + 1 + 4 + 1
    as_float = [struct.unpack("<d", struct.pack("<q", v))[0] for v in raw[1:5]]
    assert raw[0] == 2 and as_float == data.astype(np.float64).tolist()
    assert raw[5] == -5 and raw[6:10] == [0, 0, 1, 1] and raw[10] == data.ctypes.data


def test_assert_reports_the_first_failing_lane(rng):
    kb = KernelBuilder("check", x=ptr(T.int32))
    (x,) = kb.args
    values = kb.load(kb.addptr(x, kb.arange(32)))
    kb.b.create("tile.assert", [kb.cmp("ge", values, kb.const(0, T.int32, 32))], [], {"message": "x >= 0"})
    kernel = compile_kernel(kb.done())
    data = rng.integers(0, 100, 32).astype(np.int32)
    assert kernel(data, grid=(4,)).rc == 0
    data[[9, 20]] = -1
    result = kernel(data, grid=(4,))
    assert result.rc == abi.ASSERT_FAILED
    assert result.error["lane"] == 9 and result.error["buffer"] == -1
    assert kernel.sites[result.error["site"]] == abi.Site("assert", None, None, "x >= 0")


def test_elementwise_tile_loops_are_vectorised():
    kernel = compile_kernel(vector_add(1024), with_asm=True)
    packed = re.findall(r"\bv(?:add|mov[au])ps\b[^\n]*%[yz]mm", kernel.asm)  # AVX2 or AVX-512
    assert len(packed) >= 4, "expected packed 256/512-bit adds and moves in the vector-add loop"
    kernel = compile_kernel(row_softmax(1024), with_asm=True)
    assert re.search(r"\bv(?:fmadd\w*|mulps|maxps)\b[^\n]*%[yz]mm", kernel.asm)  # the exp and max loops


