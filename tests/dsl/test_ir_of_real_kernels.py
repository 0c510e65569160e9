"""The IR the frontend builds for real kernels verifies, and prints -> parses -> prints identically."""

import importlib.util
import pathlib

import pytest

from dsl import dtypes as T
from dsl.frontend import compile_kernel
from dsl.ir import parse_function, print_function, verify
from dsl.ir.core import TileType
from jit.passes import run_passes

ROOT = pathlib.Path(__file__).parents[2]


def load(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


P32, P16, I32 = (TileType(T.pointer_type(T.float32)), TileType(T.pointer_type(T.float16)), TileType(T.int32))


def cases():
    vec = load(ROOT / "tutorials" / "01_vector_add.py")
    soft = load(ROOT / "tutorials" / "02_fused_softmax.py")
    mm = load(ROOT / "tutorials" / "03_matrix_multiplication.py")
    e2e = load(ROOT / "tests" / "jit" / "test_kernels_end_to_end.py")
    yield vec.add_kernel, dict(x_ptr=P32, y_ptr=P32, out_ptr=P32, n_elements=I32, BLOCK_SIZE=256)
    yield soft.softmax_kernel, dict(out_ptr=P32, in_ptr=P32, in_row_stride=I32, out_row_stride=I32, n_rows=I32,
                                    n_cols=I32, BLOCK_SIZE=128)
    yield mm.matmul_kernel, dict(a_ptr=P16, b_ptr=P16, c_ptr=P32, M=I32, N=I32, K=I32, stride_am=I32, stride_ak=1,
                                 stride_bk=I32, stride_bn=1, stride_cm=I32, stride_cn=1, BLOCK_M=32, BLOCK_N=32,
                                 BLOCK_K=16, GROUP_M=8, PRECISION="ieee")
    yield e2e.reduce_kernel, dict(x_ptr=P32, sum_ptr=P32, max_ptr=P32, min_ptr=P32,
                                  arg_ptr=TileType(T.pointer_type(T.int32)), M=I32, N=I32, BM=16, BN=32, AXIS=1)
    yield e2e.control_flow_kernel, dict(x_ptr=P32, out_ptr=P32, n=I32, BLOCK=32)
    yield e2e.atomic_count_kernel, dict(counter_ptr=TileType(T.pointer_type(T.int32)),
                                        hist_ptr=TileType(T.pointer_type(T.int32)),
                                        x_ptr=TileType(T.pointer_type(T.int32)), n=I32, BLOCK=64)
    yield e2e.rand_kernel, dict(out_ptr=TileType(T.pointer_type(T.uint32)), seed=I32, n=I32, BLOCK=64)


@pytest.mark.parametrize("optimized", [False, True])
def test_round_trip(optimized):
    for kernel, signature in cases():
        func = compile_kernel(kernel, signature)
        verify(func)
        if optimized:
            run_passes(func)
            verify(func)
        text = print_function(func)
        assert print_function(parse_function(text)) == text, kernel.__name__
