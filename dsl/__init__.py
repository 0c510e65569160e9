"""wavetile's kernel language: `import dsl as tl` gives the names of `triton.language`."""

from dsl import core, extra, libdevice, math, standard, target_info  # noqa: F401
from dsl.aggregate import aggregate
from dsl.core import constexpr, tensor
from dsl.distribution import check_packages as _check_packages
from dsl.dtypes import (
    bfloat16,
    dtype,
    float8e4b8,
    float8e4b15,
    float8e4nv,
    float8e5,
    float8e5b16,
    float16,
    float32,
    float64,
    int1,
    int8,
    int16,
    int32,
    int64,
    pi32_t,
    pointer_type,
    str_to_ty,
    uint8,
    uint16,
    uint32,
    uint64,
)
from dsl.errors import CompilationError, CompileTimeAssertionFailure
from dsl.language import *  # noqa: F401,F403
from dsl.language import range, static_range  # noqa: F401
from dsl.pointers import (  # noqa: F401
    advance,
    load_tensor_descriptor,
    make_block_ptr,
    make_tensor_descriptor,
    store_tensor_descriptor,
    tensor_descriptor,
)
from dsl.random import (  # noqa: F401
    pair_uniform_to_normal,
    philox,
    philox_impl,
    rand,
    rand4x,
    randint,
    randint4x,
    randn,
    randn4x,
    uint_to_uniform_float,
)
from dsl.scaled_dot import dot_scaled  # noqa: F401
from dsl.tuples import slice, tuple  # noqa: F401  (Triton's names; they shadow the builtins only in this module)
from dsl.types import block_type, const, constexpr_type, tensor_descriptor_type, tuple_type, void  # noqa: F401

core._aggregate = aggregate  # Triton's spelling, tl.core._aggregate (dsl.core sits below dsl.aggregate)
_check_packages()  # another distribution's files in our packages: a clear ImportError now, not odd ones later

float8e4m3fn = float8e4nv
float8e5m2 = float8e5
TRITON_MAX_TENSOR_NUMEL = 1 << 20

__all__ = ["constexpr", "tensor", "dtype", "pointer_type", "pi32_t", "str_to_ty", "CompilationError",
           "CompileTimeAssertionFailure", "bfloat16", "float8e4nv", "float8e4b15", "float8e4b8", "float8e5b16",
           "float8e5", "float16", "float32", "float64", "int1", "int8", "int16", "int32", "int64", "uint8", "uint16",
           "uint32", "uint64"]
