"""Element types of the language, named as in triton.language, shared by the frontend and the IR.

A dtype knows its IR spelling (`f32`, `ptr<f16>`), its width and kind, and the numpy dtype
that stores it, so every layer asks one object instead of keeping its own tables.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np


class _DtypeMeta(type):
    """`tl.dtype("int8")` is Triton's way to name a type: one name argument returns the existing dtype."""

    def __call__(cls, *args, **kwargs):
        if cls is dtype and len(args) == 1 and not kwargs and isinstance(args[0], str):
            if args[0] not in BY_NAME:
                raise AssertionError(args[0])
            return BY_NAME[args[0]]
        return super().__call__(*args, **kwargs)


@dataclass(frozen=True)
class dtype(metaclass=_DtypeMeta):
    """A scalar element type. `kind` is one of "int", "uint", "float", "bool", "ptr"."""

    SINT_TYPES: ClassVar[list[str]] = ["int8", "int16", "int32", "int64"]
    UINT_TYPES: ClassVar[list[str]] = ["int1", "uint8", "uint16", "uint32", "uint64"]
    FP_TYPES: ClassVar[list[str]] = ["fp8e4b15", "fp8e4nv", "fp8e4b8", "fp8e5", "fp8e5b16", "fp16", "bf16", "fp32",
                                     "fp64"]
    STANDARD_FP_TYPES: ClassVar[list[str]] = ["fp16", "bf16", "fp32", "fp64"]

    name: str  # triton.language's name: "fp32", "int32", "bf16", ...
    ir: str  # IR spelling: "f32", "i32", "bf16", ...
    kind: str
    primitive_bitwidth: int
    exponent_bits: int = 0
    mantissa_bits: int = 0
    bias: int | None = None  # exponent bias of a float format when not IEEE's 2^(e-1) - 1 (fp8e4b15, ...)

    @property
    def exponent_bias(self) -> int:
        """Triton's `dtype.exponent_bias` (floats only)."""
        if self.bias is not None:
            return self.bias
        return (1 << (self.exponent_bits - 1)) - 1

    @property
    def fp_mantissa_width(self) -> int:
        """Triton's name for the explicit mantissa bits of a float type."""
        return self.mantissa_bits

    # predicates real kernels use
    def is_floating(self) -> bool:
        return self.kind == "float"

    def is_int(self) -> bool:
        return self.kind in ("int", "uint", "bool")

    def is_int_signed(self) -> bool:
        return self.kind == "int"

    def is_int_unsigned(self) -> bool:
        return self.kind in ("uint", "bool")

    def is_bool(self) -> bool:
        return self.kind == "bool"

    def is_ptr(self) -> bool:
        return self.kind == "ptr"

    def is_fp16(self) -> bool:
        return self.name == "fp16"

    def is_bf16(self) -> bool:
        return self.name == "bf16"

    def is_fp32(self) -> bool:
        return self.name == "fp32"

    def is_fp64(self) -> bool:
        return self.name == "fp64"

    def is_fp8(self) -> bool:
        return self.name.startswith("fp8")

    def is_fp8e4nv(self) -> bool:
        return self.name == "fp8e4nv"

    def is_fp8e5(self) -> bool:
        return self.name == "fp8e5"

    def is_fp8e4b15(self) -> bool:
        return self.name == "fp8e4b15"

    def is_fp8e4b8(self) -> bool:
        return self.name == "fp8e4b8"

    def is_fp8e5b16(self) -> bool:
        return self.name == "fp8e5b16"

    def is_uint16(self) -> bool:
        return self.name == "uint16"

    def is_standard_floating(self) -> bool:
        return self.name in ("fp16", "bf16", "fp32", "fp64")

    def is_int1(self) -> bool:
        return self.name == "int1"

    def is_int8(self) -> bool:
        return self.name == "int8"

    def is_int16(self) -> bool:
        return self.name == "int16"

    def is_int32(self) -> bool:
        return self.name == "int32"

    def is_int64(self) -> bool:
        return self.name == "int64"

    def is_uint8(self) -> bool:
        return self.name == "uint8"

    def is_uint32(self) -> bool:
        return self.name == "uint32"

    def is_uint64(self) -> bool:
        return self.name == "uint64"

    def is_block(self) -> bool:
        return False

    @property
    def itemsize(self) -> int:
        """Bytes one element occupies in memory (int1 is stored as a byte)."""
        return max(1, self.primitive_bitwidth // 8)

    @property
    def scalar(self) -> dtype:
        return self

    def to_numpy(self) -> np.dtype:
        return np.dtype(_NUMPY_STORAGE[self.name])

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"triton.language.{self.name}"


@dataclass(frozen=True)
class pointer_type(dtype):
    """Pointer to `element_ty` in global memory; 64 bits wide."""

    element_ty: dtype = None  # type: ignore[assignment]
    address_space: int = 1
    const: bool = False

    def __init__(self, element_ty: dtype, address_space: int = 1, const: bool = False):
        object.__setattr__(self, "name", f"pointer<{element_ty.name}>")
        object.__setattr__(self, "ir", f"ptr<{element_ty.ir}>")
        object.__setattr__(self, "kind", "ptr")
        object.__setattr__(self, "primitive_bitwidth", 64)
        object.__setattr__(self, "exponent_bits", 0)
        object.__setattr__(self, "mantissa_bits", 0)
        object.__setattr__(self, "element_ty", element_ty)
        object.__setattr__(self, "address_space", address_space)
        object.__setattr__(self, "const", const)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, pointer_type) and other.element_ty == self.element_ty

    def __hash__(self) -> int:
        return hash(("ptr", self.element_ty))

    def to_numpy(self) -> np.dtype:
        return np.dtype(np.uint64)


int1 = dtype("int1", "i1", "bool", 1)
int8 = dtype("int8", "i8", "int", 8)
int16 = dtype("int16", "i16", "int", 16)
int32 = dtype("int32", "i32", "int", 32)
int64 = dtype("int64", "i64", "int", 64)
uint8 = dtype("uint8", "u8", "uint", 8)
uint16 = dtype("uint16", "u16", "uint", 16)
uint32 = dtype("uint32", "u32", "uint", 32)
uint64 = dtype("uint64", "u64", "uint", 64)
float8e5 = dtype("fp8e5", "f8e5", "float", 8, 5, 2)
float8e4nv = dtype("fp8e4nv", "f8e4nv", "float", 8, 4, 3)
# Triton's other fp8 formats. fp8e4b15: E4M3 with bias 15 (no inf, 0x7f/0xff NaN, max 1.75);
# fp8e4b8 / fp8e5b16: AMD's E4M3FNUZ / E5M2FNUZ (bias 8 / 16, no inf, no -0, NaN is 0x80 alone).
float8e4b15 = dtype("fp8e4b15", "f8e4b15", "float", 8, 4, 3, 15)
float8e4b8 = dtype("fp8e4b8", "f8e4b8", "float", 8, 4, 3, 8)
float8e5b16 = dtype("fp8e5b16", "f8e5b16", "float", 8, 5, 2, 16)
float16 = dtype("fp16", "f16", "float", 16, 5, 10)
bfloat16 = dtype("bf16", "bf16", "float", 16, 8, 7)
float32 = dtype("fp32", "f32", "float", 32, 8, 23)
float64 = dtype("fp64", "f64", "float", 64, 11, 52)

pi32_t = pointer_type(int32)

ALL_DTYPES = (int1, int8, int16, int32, int64, uint8, uint16, uint32, uint64,
              float8e5, float8e4nv, float8e4b15, float8e4b8, float8e5b16, float16, bfloat16, float32, float64)
BY_IR = {d.ir: d for d in ALL_DTYPES}
BY_NAME = {d.name: d for d in ALL_DTYPES}

_NUMPY_STORAGE = {
    "int1": "bool", "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64",
    "uint8": "uint8", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
    "fp8e5": "uint8", "fp8e4nv": "uint8", "fp8e4b15": "uint8", "fp8e4b8": "uint8", "fp8e5b16": "uint8",
    "fp16": "float16", "bf16": "uint16",
    "fp32": "float32", "fp64": "float64",
}


_TRITON_SHORT_NAMES = {"i1": "int1", "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "u1": "int1",
                       "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64", "bool": "int1",
                       "float16": "fp16", "bfloat16": "bf16", "float32": "fp32", "float64": "fp64",
                       "float8e5": "fp8e5", "float8e4nv": "fp8e4nv", "float8e4b15": "fp8e4b15",
                       "float8e4b8": "fp8e4b8", "float8e5b16": "fp8e5b16", "float8_e5m2": "fp8e5",
                       "float8_e4m3fn": "fp8e4nv"}


def str_to_ty(name: str, c=None) -> dtype:
    """Triton's `tl.str_to_ty`: a type from its signature spelling ('i32', 'fp16', '*fp32', 'bf16', ...)."""
    if name.startswith("*"):
        return pointer_type(str_to_ty(name[1:]), const=False)
    key = _TRITON_SHORT_NAMES.get(name, name)
    if key in BY_NAME:
        return BY_NAME[key]
    raise TypeError(f"Unsupported type {name}")


def parse_ir_type(text: str) -> dtype:
    """Inverse of `dtype.ir`: 'f32' -> float32, 'ptr<ptr<f16>>' -> pointer_type(pointer_type(float16))."""
    if text.startswith("ptr<") and text.endswith(">"):
        return pointer_type(parse_ir_type(text[4:-1]))
    try:
        return BY_IR[text]
    except KeyError:
        raise ValueError(f"unknown element type {text!r}") from None


def from_numpy(np_dtype: np.dtype) -> dtype:
    """The language dtype of a numpy array's elements (bfloat16/fp8 via ml_dtypes names)."""
    name = np.dtype(np_dtype).name
    table = {"bool": int1, "int8": int8, "int16": int16, "int32": int32, "int64": int64,
             "uint8": uint8, "uint16": uint16, "uint32": uint32, "uint64": uint64,
             "float16": float16, "float32": float32, "float64": float64, "bfloat16": bfloat16,
             "float8_e4m3fn": float8e4nv, "float8_e5m2": float8e5, "float8_e4m3fnuz": float8e4b8,
             "float8_e5m2fnuz": float8e5b16}
    try:
        return table[name]
    except KeyError:
        raise TypeError(f"arrays of {name} cannot be passed to a kernel") from None


def integer_dtype(value: int) -> dtype | None:
    """Triton's type of a Python int, by value: int32, else int64, else uint64; None beyond 64 bits.
    One rule for kernel arguments (jit.arguments, jit.plans) and literals in kernels (dsl.semantic)."""
    if -2**31 <= value < 2**31:
        return int32
    if -2**63 <= value < 2**63:
        return int64
    if 2**63 <= value < 2**64:
        return uint64
    return None
