"""Launching compiled code: argument classification and packing, CPU threads, and run-time errors.

The native entry (see jit.abi) takes one context record; several threads call it at once and
share programs through an atomic counter. ctypes drops the GIL during each call.
"""

from __future__ import annotations

import ctypes
import functools
import os
import struct
import sys
import threading
from concurrent.futures import ThreadPoolExecutor, wait

import numpy as np

from dsl import dtypes as T
from dsl.core import constexpr
from dsl.errors import DeviceAssertionError, KernelError, OutOfBoundsError
from dsl.ir.core import TileType
from jit import abi, env, interrupt
from jit.grid import normalize_grid

_TORCH_DTYPES = {"torch.float32": T.float32, "torch.float16": T.float16, "torch.bfloat16": T.bfloat16,
                 "torch.float64": T.float64, "torch.int8": T.int8, "torch.int16": T.int16, "torch.int32": T.int32,
                 "torch.int64": T.int64, "torch.uint8": T.uint8, "torch.bool": T.int1,
                 "torch.float8_e4m3fn": T.float8e4nv, "torch.float8_e5m2": T.float8e5,
                 "torch.uint16": T.uint16, "torch.uint32": T.uint32, "torch.uint64": T.uint64}


_SCALAR = {d: TileType(d) for d in (T.int1, T.int32, T.int64, T.uint64, T.float32)}  # shared: their hash is cached
INTEGER_SCALARS = frozenset(_SCALAR[d] for d in (T.int32, T.int64, T.uint64))


def checks_enabled() -> bool:
    return env.get("WAVETILE_CHECKS", "1") != "0"


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
        if -2**31 <= v < 2**31:
            return _SCALAR[T.int32]
        if -2**63 <= v < 2**63:
            return _SCALAR[T.int64]
        if 2**63 <= v < 2**64:
            return _SCALAR[T.uint64]
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


_pool: ThreadPoolExecutor | None = None
_pool_stack = 0
_pool_lock = threading.Lock()
_print_lock = threading.Lock()
MiB = 1 << 20
POOL_STACK = 64 * MiB  # worker threads' stacks: room for big tiles (reserved, committed only when touched)
MAX_STACK = 1 << 30  # a program needing more tile storage than this is refused before it runs
_MAIN_STACK = 4 * MiB  # frames up to this run on the calling thread (whose stack is usually 8 MiB)


def _executor(n: int, stack: int = 0) -> ThreadPoolExecutor:
    """The launch pool, with at least `n` threads whose stacks hold `stack` bytes of program frame."""
    global _pool, _pool_stack
    with _pool_lock:
        if _pool is None or _pool._max_workers < n or _pool_stack < stack:
            size = max(POOL_STACK, 1 << (stack - 1).bit_length() if stack else 0)
            old = threading.stack_size(size)
            try:
                pool = ThreadPoolExecutor(max_workers=max(n, _pool._max_workers if _pool else 0),
                                          thread_name_prefix="wavetile")
                for _ in range(pool._max_workers):  # threads start now, while the stack size is set
                    pool._adjust_thread_count()
            finally:
                threading.stack_size(old)
            if _pool is not None:
                _pool.shutdown(wait=False)
            _pool, _pool_stack = pool, size
        return _pool


def launch(kernel, grid, runtime: list, machine=None, kernel_name: str = "", *, jit_fn=None,
           model: dict | None = None) -> None:
    """Run every program of `grid`; raises KernelError subclasses for failures reported by the code.

    When a profile is open (simulator.is_profiling(), or WAVETILE_PROFILE=1) and `jit_fn` is given,
    the launch is profiled instead (jit.profiler): same outputs, plus a LaunchRecord for the profile.
    `model` holds the modeling options of the launch (sample, shared_padding).
    """
    grid = normalize_grid(grid, kernel_name)
    if grid[0] * grid[1] * grid[2] == 0:
        return
    if jit_fn is not None and profiling():
        from jit import profiler

        profiler.profiled_launch(jit_fn, kernel, grid, runtime, machine=machine, **(model or {}))
        return
    execute(kernel, grid, runtime, kernel_name)


def profiling() -> bool:
    """A profile can only be open once the simulator is imported; when WAVETILE_PROFILE is set at all,
    importing it lets simulator.profiles read the value (the one place that parses it)."""
    sim = sys.modules.get("simulator")
    if sim is None and env.get("WAVETILE_PROFILE"):
        import simulator as sim
    return sim is not None and sim.is_profiling()


_FRAME_ERROR = abi.CONTEXT_SLOTS
_FRAME_COUNTER = _FRAME_ERROR + abi.ERROR_SLOTS
_FRAME_ARGS = _FRAME_COUNTER + 1


def execute(kernel, grid: tuple[int, int, int], runtime: list, kernel_name: str = "", *,
            programs: np.ndarray | None = None, instrumentation: int = 0, threads: int | None = None) -> None:
    """Run the programs of a normalised grid: all of them, or only the linear ids in `programs` (in that
    order). `instrumentation`: address of an abi.INSTR_SLOTS record for instrumented variants."""
    buffers = [v for _, v, _ in runtime if type(v) is Buffer]
    slots = [arg_slot(v, t) for _, v, t in runtime]
    bounds = [x for b in buffers for x in (b.low, b.high - b.low)]
    rc, error = run_frame(kernel, grid, slots, bounds, programs=programs, instrumentation=instrumentation,
                          threads=threads)
    if rc:
        raise launch_error(kernel, kernel_name, rc, error, runtime)


def run_frame(kernel, grid: tuple[int, int, int], slots: list[int], bounds: list[int], *,
              programs: np.ndarray | None = None, instrumentation: int = 0,
              threads: int | None = None) -> tuple[int, list[int] | None]:
    """Run the programs on packed arguments (abi.ARGS slots, (base, size) pairs of the buffers); returns
    the error code and the error record (see launch_error)."""
    total = grid[0] * grid[1] * grid[2]
    count = total if programs is None else len(programs)
    if count == 0:
        return 0, None
    threads = _thread_count(count) if threads is None else max(1, min(threads, count))
    # One int64 frame holds the context record, the error record, the program counter, the argument
    # slots and the buffer table: a single allocation per launch.
    n_args = len(slots)
    frame = (ctypes.c_int64 * (_FRAME_ARGS + n_args + len(bounds)))()
    base = ctypes.addressof(frame)
    if n_args:
        frame[_FRAME_ARGS:_FRAME_ARGS + n_args] = slots
    if bounds:
        frame[_FRAME_ARGS + n_args:] = bounds
    frame[abi.ARGS] = base + 8 * _FRAME_ARGS
    frame[abi.BUFFERS] = base + 8 * (_FRAME_ARGS + n_args)
    frame[abi.N_BUFFERS] = len(bounds) // 2
    frame[abi.GRID_X], frame[abi.GRID_Y], frame[abi.GRID_Z] = grid
    frame[abi.NEXT_PID] = base + 8 * _FRAME_COUNTER
    frame[abi.CHUNK] = max(1, count // (threads * 16)) if threads > 1 else count
    frame[abi.ERROR] = base + 8 * _FRAME_ERROR
    callback = _print_callback(kernel) if kernel.prints else None
    frame[abi.PRINT_CALLBACK] = ctypes.cast(callback, ctypes.c_void_p).value if callback else 0
    if programs is not None:
        order = (ctypes.c_int64 * count).from_buffer_copy(np.ascontiguousarray(programs, dtype=np.int64).tobytes())
        frame[abi.PROGRAM_COUNT] = count
    else:
        order = _schedule(total)
    frame[abi.PID_ORDER] = ctypes.addressof(order) if order is not None else 0
    frame[abi.CHECKS] = 1
    frame[abi.COUNTERS] = instrumentation
    frame[abi.CANCEL], frame[abi.CANCEL_SEEN] = interrupt.counter()
    stack = kernel.stack_bytes
    if threads == 1 and stack <= _MAIN_STACK:
        rc = kernel.function(base)
    else:
        if stack > MAX_STACK:
            raise ValueError(f"kernel '{kernel.name}' needs {stack / MiB:.0f} MiB of tile storage per program, "
                             f"more than the {MAX_STACK // MiB} MiB a program may use: use smaller blocks")
        rc = _run_on_pool(kernel, base, threads, stack)
    if callback is not None:
        sys.stdout.flush()
    return rc, (frame[_FRAME_ERROR:_FRAME_ERROR + abi.ERROR_SLOTS] if rc else None)


def _run_on_pool(kernel, base: int, threads: int, stack: int) -> int:
    """Run the launch on `threads` pool threads and wait for all of them, also when interrupted: on Ctrl-C
    the programs are told to stop, and the launch raises only once no thread can touch its arrays."""
    pool = _executor(threads, stack)
    futures = [pool.submit(kernel.function, base) for _ in range(threads)]
    try:
        codes = [f.result() for f in futures]
    except BaseException:
        interrupt.interrupt()
        while True:
            try:
                wait(futures)
                break
            except BaseException:  # noqa: BLE001 - a second Ctrl-C: keep waiting, the first one is raised
                interrupt.interrupt()
        raise
    return next((c for c in codes if c), 0)


def model_launch(kernel, grid, *args, machine=None, sample: int | bool | None = None,
                 shared_padding: int | None = None, record: bool = False, **kwargs):
    """Model one launch on the emulated machine without computing every output; returns its LaunchRecord.

    `kernel` is a @jit function, `grid` and `args` / `kwargs` (constexprs, num_warps, num_stages) are
    what `kernel[grid](*args, **kwargs)` would take. Only a sample of the programs runs (instrumented):
    sample=None picks one automatically for large grids (jit.sampling), an int asks for that many
    programs, False runs them all. The outputs are left partly computed. The record's
    `modeled_seconds`, `bound` and `counters` are what an autotuner compares; `sampled` says whether
    the counters were scaled from a sample. record=True also adds it to open profiles.
    """
    from jit import profiler

    return profiler.model_launch(kernel, grid, args, kwargs, machine=machine, sample=sample,
                                 shared_padding=shared_padding, record=record)


def model_only(run_fully=(), measure_fully=()):
    """Context manager: profiled launches inside run only their measured programs (see jit.profiler.model_only);
    for modeling whole models at real sizes, where computing every output would take the CPU hours."""
    from jit import profiler

    return profiler.model_only(run_fully, measure_fully)


_CPUS = os.cpu_count() or 1


def num_threads() -> int:
    """CPU threads a launch may use: WAVETILE_NUM_THREADS, default all cores."""
    return env.integer("WAVETILE_NUM_THREADS", _CPUS, minimum=1)


def _thread_count(total: int) -> int:
    return max(1, min(num_threads(), total))


def _schedule(total: int):
    seed = env.integer("WAVETILE_SCHEDULE_SEED", minimum=0)
    if seed is None:
        return None
    order = np.random.default_rng(seed).permutation(total).astype(np.int64)
    return (ctypes.c_int64 * total).from_buffer_copy(order.tobytes())


def launch_error(kernel, name: str, rc: int, error: list[int], runtime: list) -> BaseException:
    """The exception for a failed launch, from the error record the code wrote and the bound arguments."""
    if rc == abi.CANCELLED:
        return KeyboardInterrupt(f"kernel '{name}' was interrupted; its outputs are incomplete")
    buffers = [v for _, v, _ in runtime if type(v) is Buffer]
    site = kernel.sites[error[abi.ERR_SITE]] if 0 <= error[abi.ERR_SITE] < len(kernel.sites) else None
    where = _source_position(kernel, site)
    pid = (error[abi.ERR_PID_X], error[abi.ERR_PID_Y], error[abi.ERR_PID_Z])
    pointer_args = [(n, t) for n, _, t in runtime if t.dtype.is_ptr()]
    if rc == abi.OUT_OF_BOUNDS or rc == abi.MISALIGNED:
        index = error[abi.ERR_BUFFER]
        if 0 <= index < len(pointer_args):
            arg, pointer = pointer_args[index]
            buf = buffers[index]
            size = (buf.high - buf.low) // pointer.dtype.element_ty.itemsize
            what = f"buffer '{arg}' ({size} elements of {pointer.dtype.element_ty})"
            itemsize = pointer.dtype.element_ty.itemsize
            problem = (f"the address near element offset {error[abi.ERR_OFFSET]} of {what} is not a multiple of "
                       f"its {itemsize}-byte element size" if rc == abi.MISALIGNED
                       else f"element offset {error[abi.ERR_OFFSET]} is outside {what}")
        else:
            problem = (f"address {error[abi.ERR_OFFSET]:#x} is not inside any buffer passed to the kernel (the "
                       "pointer does not derive from an argument, e.g. it was loaded from memory)")
        kind = "misaligned" if rc == abi.MISALIGNED else "out-of-bounds"
        message = (f"{kind} {site.kind if site else 'access'} in kernel '{name}' at {where}, "
                   f"program id {pid}: {problem} (tile element {error[abi.ERR_LANE]})")
        return OutOfBoundsError(message)
    if rc == abi.POLL_BLOCKED:
        return KernelError(f"atomic_poll in kernel '{name}' at {where}, program id {pid} would wait forever: tile "
                           f"element {error[abi.ERR_LANE]} does not hold the expected value and no timeout_ns was "
                           "given; profiled launches run one program at a time, so no other program can write it "
                           "(profile with a timeout_ns, or launch without the profiler)")
    if rc == abi.ASSERT_FAILED:
        msg = site.message if site else ""
        return DeviceAssertionError(f"device assertion failed in kernel '{name}' at {where}, program id {pid}, "
                                    f"element {error[abi.ERR_LANE]}: {msg}")
    return KernelError(f"kernel '{name}' failed with code {rc} at {where}, program id {pid}")


def _source_position(kernel, site) -> str:
    """'file.py:LINE (`source text`)' for a failing site, as far as it is known."""
    if site is None or site.loc is None:
        return "an unknown line"
    source = kernel.metadata.get("source")
    if not source:
        return f"line {site.loc.line}"
    index = site.loc.line - source["first_line"]
    text = source["lines"][index].strip() if 0 <= index < len(source["lines"]) else ""
    return f"{source['file']}:{site.loc.line}" + (f" (`{text}`)" if text else "")


_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64)


def _print_callback(kernel):
    def on_print(site_index, pid, data, nbytes):
        site = kernel.sites[site_index]
        types = kernel.print_types.get(site_index, [])
        raw = ctypes.string_at(data, nbytes) if nbytes else b""
        words = np.frombuffer(raw, dtype=np.int64)
        parts, pos = [], 0
        for text in types:
            t = TileType.parse(text)
            n = t.numel
            chunk = words[pos:pos + n]
            pos += n
            if t.dtype.is_floating():
                vals = chunk.view(np.float64)
            else:
                vals = chunk.astype(np.uint64) if t.dtype.is_int_unsigned() else chunk
            parts.append(str(vals[0]) if t.is_scalar else np.array2string(vals.reshape(t.shape)))
        with _print_lock:
            print(f"pid ({pid}) {site.message}" + (" " + " ".join(parts) if parts else ""), flush=True)

    fn = _CALLBACK(on_print)
    kernel.metadata["_print_callback"] = fn  # keep alive
    return fn
