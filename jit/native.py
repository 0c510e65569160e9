"""Running compiled code: the native frame, CPU threads, and the exceptions a failed launch raises.

The native entry (see jit.abi) takes one context record; several threads call it at once and
share programs through an atomic counter. ctypes drops the GIL during each call. This module runs
programs of a normalised grid on packed arguments; which launches come here is jit.launcher's call.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor, wait

import numpy as np

from dsl.errors import DeviceAssertionError, KernelError, OutOfBoundsError
from dsl.ir.core import TileType
from jit import abi, env, interrupt
from jit.arguments import Buffer, arg_slot
from jit.grid import program_order

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
        order = program_order(total)
        if order is not None:
            order = (ctypes.c_int64 * total).from_buffer_copy(order.tobytes())
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


_CPUS = os.cpu_count() or 1


def num_threads() -> int:
    """CPU threads a launch may use: WAVETILE_NUM_THREADS, default all cores."""
    return env.integer("WAVETILE_NUM_THREADS", _CPUS, minimum=1)


def _thread_count(total: int) -> int:
    return max(1, min(num_threads(), total))


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
