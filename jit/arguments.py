"""Kernel arguments as the launch sees them: Triton's typing of each value, buffers, and argument slots.

`classify` gives a runtime argument its type (arrays and tensors become Buffers, ints i32/i64/u64 by value
or the constant 1, floats fp32, bools i1); `arg_slot` packs one into its int64 slot of the native frame
(jit.abi). The launch object (jit.launch), the plan fast path (jit.plans), native launches (jit.native) and the
interpreters all read arguments through this one module.
"""

from __future__ import annotations

import ctypes
import functools
import struct

import numpy as np

from dsl import dtypes as T
from dsl.core import constexpr
from dsl.ir.core import TileType

_TORCH_DTYPES = {"torch.float32": T.float32, "torch.float16": T.float16, "torch.bfloat16": T.bfloat16,
                 "torch.float64": T.float64, "torch.int8": T.int8, "torch.int16": T.int16, "torch.int32": T.int32,
                 "torch.int64": T.int64, "torch.uint8": T.uint8, "torch.bool": T.int1,
                 "torch.float8_e4m3fn": T.float8e4nv, "torch.float8_e5m2": T.float8e5,
                 "torch.uint16": T.uint16, "torch.uint32": T.uint32, "torch.uint64": T.uint64}


_SCALAR = {d: TileType(d) for d in (T.int1, T.int32, T.int64, T.uint64, T.float32)}  # shared: their hash is cached
INTEGER_SCALARS = frozenset(_SCALAR[d] for d in (T.int32, T.int64, T.uint64))


class IntegerArgumentOverflow(OverflowError, ValueError):
    """A Python int argument outside both int64 and uint64."""


def classify(value, name: str, kernel: str, specialize: bool = True) -> TileType | constexpr | Buffer:
    """The type a runtime argument gets (Triton's rules), a constexpr for values that specialise,
    or the Buffer of an array argument (its type is `buffer.type`)."""
    if isinstance(value, np.ndarray):
        return _named(numpy_buffer, value, name, kernel)
    if isinstance(value, (bool, np.bool_)):
        return _SCALAR[T.int1]
    if isinstance(value, (int, np.integer)):
        v = int(value)
        if v == 1 and specialize:
            return constexpr(1)
        dtype = T.integer_dtype(v)
        if dtype is not None:
            return _SCALAR[dtype]
        # Triton raises OverflowError here; ValueError too, for callers that caught wavetile's earlier error
        raise IntegerArgumentOverflow(f"{kernel}: argument {name}={v} does not fit in 64 bits "
                                      "(an int argument must lie in [-2**63, 2**64-1])")
    if isinstance(value, (float, np.floating)):
        return _SCALAR[T.float32]
    if value is None or isinstance(value, (T.dtype, str)) or getattr(value, "is_wavetile_jit", False):
        return constexpr(value)
    buf = _named(as_buffer, value, name, kernel)
    if buf is not None:
        return buf
    raise TypeError(f"{kernel}: argument {name} has unsupported type {type(value).__name__}; "
                    "pass a numpy array, a tensor with __dlpack__, a number or a bool")


def _named(make, value, name: str, kernel: str):
    """make(value), with the kernel and argument named in the error of an array that cannot be passed."""
    try:
        return make(value)
    except (TypeError, ValueError, NotImplementedError, RuntimeError) as e:
        raise TypeError(f"{kernel}: argument {name}: {e}") from None


class Buffer:
    """A pointer argument: its element type, the address of element 0 and the byte range it may touch."""

    __slots__ = ("dtype", "type", "address", "low", "high", "keepalive", "writable")

    def __init__(self, dtype, address, low, high, keepalive, type=None, writable: bool = True):
        self.dtype, self.address, self.low, self.high, self.keepalive = dtype, address, low, high, keepalive
        self.type = type or _pointer_tile(dtype)
        self.writable = writable


@functools.cache
def _pointer_tile(dtype) -> TileType:
    return TileType(T.pointer_type(dtype))


def as_buffer(value) -> Buffer | None:
    if isinstance(value, np.ndarray):
        return numpy_buffer(value)
    if hasattr(value, "data_ptr") and hasattr(value, "dtype"):  # torch-like tensors (bfloat16 too)
        # a tl.dtype: a tensor reinterpreted as another element type (Triton's TensorWrapper)
        dtype = value.dtype if isinstance(value.dtype, T.dtype) else _TORCH_DTYPES.get(str(value.dtype))
        if dtype is None:
            raise TypeError(f"tensors of {value.dtype} cannot be passed to a kernel")
        if getattr(value, "device", None) is not None and str(value.device) != "cpu":
            raise TypeError(f"only CPU tensors can be passed to a kernel, got one on {value.device}")
        layout = str(getattr(value, "layout", "torch.strided"))
        if layout != "torch.strided":
            raise TypeError(f"only dense (strided) tensors can be passed to a kernel, got a {layout} (sparse) "
                            "tensor; pass tensor.to_dense()")
        low, high = _tensor_extent(value, dtype.itemsize)
        return Buffer(dtype, value.data_ptr(), low, high, value)
    if hasattr(value, "__dlpack__"):
        return numpy_buffer(np.from_dlpack(value))
    return None


def _tensor_extent(tensor, itemsize: int) -> tuple[int, int]:
    """The bytes a strided tensor's elements span (a view's own, not its whole storage's)."""
    address = tensor.data_ptr()
    if tensor.numel() == 0:
        return address, address
    low = high = 0
    for size, stride in zip(tensor.shape, tensor.stride()):
        reach = (size - 1) * stride
        low, high = (low + reach, high) if stride < 0 else (low, high + reach)
    return address + low * itemsize, address + (high + 1) * itemsize


def numpy_buffer(arr: np.ndarray) -> Buffer:
    """The Buffer of an array argument: its element type, data address and byte range."""
    dtype, type = _numpy_types(arr.dtype)
    if not arr.flags.aligned:
        raise TypeError(f"the array is not aligned to its {arr.dtype.itemsize}-byte elements (data at "
                        f"{arr.ctypes.data:#x}); pass an aligned copy, e.g. np.array(x)")
    address = data_address(arr)
    if arr.flags.c_contiguous:
        low, high = address, address + arr.nbytes
    else:
        low, high = byte_bounds(arr)
    return Buffer(dtype, address, low, high, arr, type, arr.flags.writeable)


def refuse_read_only(kernel_name: str, runtime: list, written: tuple[int, ...]) -> None:
    """Raise before running when a buffer the kernel can store into (or update atomically) is read-only:
    writing it would crash (a read-only memmap) or silently change memory the caller declared immutable."""
    if not written:
        return
    pointers = [(name, value) for name, value, type in runtime if type.dtype.is_ptr()]
    for index in written:
        name, buffer = pointers[index]
        if not buffer.writable:
            raise ValueError(f"{kernel_name}: argument '{name}' is read-only (a numpy array with "
                             "flags.writeable False, a read-only memmap or a bytes buffer), but the kernel stores "
                             "into it or updates it atomically; pass a writable array")


def _slow_data_address(arr: np.ndarray) -> int:
    return arr.ctypes.data


def _fast_data_address(arr: np.ndarray) -> int:
    """An array's data pointer read straight from the object: numpy's array struct starts with the object
    header and then `char *data`. Ten times cheaper than `arr.ctypes.data`, which builds a helper object."""
    return _read_pointer(id(arr) + _DATA_OFFSET).value or 0


_read_pointer = ctypes.c_void_p.from_address
_DATA_OFFSET = object.__basicsize__  # the object header: reference count and type


def _pick_data_address():
    """Use the fast read only where it agrees with numpy on this interpreter (it assumes the struct layout)."""
    probes = [np.empty(3, np.float32), np.arange(10)[3:], np.empty((0,), np.int8)]
    if all(_fast_data_address(a) == _slow_data_address(a) for a in probes):
        return _fast_data_address
    return _slow_data_address


data_address = _pick_data_address()


@functools.cache
def _numpy_types(np_dtype) -> tuple[T.dtype, TileType]:
    """Element dtype and pointer type of an array dtype (keyed by numpy's dtype, which hashes fast)."""
    if not np_dtype.isnative:
        raise TypeError(f"arrays of {np_dtype.str} have the non-native byte order; kernels read the host's "
                        "byte order: pass x.astype(x.dtype.newbyteorder('='))")
    dtype = T.from_numpy(np_dtype)
    return dtype, _pointer_tile(dtype)


def byte_bounds(arr: np.ndarray) -> tuple[int, int]:
    utils = getattr(np.lib, "array_utils", None)
    return utils.byte_bounds(arr) if utils is not None else np.byte_bounds(arr)


def arg_slot(value, type: TileType) -> int:
    """The int64 argument slot of a runtime argument (abi.ARGS): address, integer, or the float's bits."""
    d = type.dtype
    if d.kind == "ptr":
        return value.address
    if d.kind == "float":
        if d.primitive_bitwidth == 64:
            return struct.unpack("<q", struct.pack("<d", float(value)))[0]
        return struct.unpack("<I", struct.pack("<f", float(value)))[0]
    v = int(value)
    return v - (1 << 64) if v >= 1 << 63 else v
