"""Ctrl-C for running kernels: a process-wide interrupt counter that compiled programs poll.

Python handles SIGINT only between bytecodes, so a native call that loops forever never sees it. Here a
tiny native handler (compiled once with LLVM) is chained in front of Python's own C handler: it bumps a
counter and then calls Python's handler, which raises KeyboardInterrupt as usual once the call returns.
Programs compare the counter with its value at launch (context slots abi.CANCEL, abi.CANCEL_SEEN) at
every loop back-edge and between programs, and return abi.CANCELLED when it moved.
The launcher also bumps the counter itself when a KeyboardInterrupt reaches the waiting main thread,
so worker threads stop even where the native handler could not be installed.
"""

from __future__ import annotations

import ctypes
import hashlib
import signal
import threading
import time

_SA_SIGINFO = 4  # Linux: the handler takes (signo, info, context); never chained
_SIGACTION_BYTES = 256  # larger than struct sigaction on every Linux ABI
_HANDLER_IR = r"""
@wavetile_interrupts = global i64 0
@wavetile_previous_handler = global i64 0

define void @wavetile_on_sigint(i32 %signo) {
entry:
  %old = atomicrmw add i64* @wavetile_interrupts, i64 1 seq_cst
  %previous = load volatile i64, i64* @wavetile_previous_handler
  %callable = icmp ugt i64 %previous, 1
  br i1 %callable, label %chain, label %done
chain:
  %fn = inttoptr i64 %previous to void (i32)*
  call void %fn(i32 %signo)
  br label %done
done:
  ret void
}
"""


class _Native:
    """The compiled handler, the counter's address and the Python handler it was chained in front of."""

    def __init__(self) -> None:
        from jit import cache, engine

        key = hashlib.sha256((_HANDLER_IR + engine.target_key()).encode()).hexdigest()
        files = cache.get(key)  # the object is cached like kernels: a new process loads it in a millisecond
        if files is None:
            files = {"interrupt.o": engine.emit_support_object(_HANDLER_IR, "wavetile_interrupt")}
            cache.put(key, files)
        self.loaded = engine.load(files["interrupt.o"], "wavetile_on_sigint")
        self.handler = self.loaded.address
        address_of = self.loaded._engine.get_global_value_address
        self.counter_address = address_of("wavetile_interrupts")
        self.previous = ctypes.c_int64.from_address(address_of("wavetile_previous_handler"))
        self.counter = ctypes.c_int64.from_address(self.counter_address)
        self.chained_for: object = None  # the Python-level SIGINT handler in force when we installed ours
        self.checked_at = 0.0  # when the Python-level handler was last compared with chained_for


RECHECK_SECONDS = 0.05
_native: _Native | None = None
_lock = threading.Lock()
_fallback = ctypes.c_int64(0)  # used when no native handler could be built: only the launcher bumps it


def counter() -> tuple[int, int]:
    """(address of the interrupt counter, its value now), installing the chained handler when needed.

    Cheap on the launch path: at most every RECHECK_SECONDS it compares the current Python handler with the
    one the native handler was chained in front of (signal.signal() from Python replaces ours)."""
    native = _native
    if native is None:
        native = _build()
        if native is None:
            return ctypes.addressof(_fallback), _fallback.value
    now = time.monotonic()
    if now - native.checked_at > RECHECK_SECONDS:  # signal.getsignal costs microseconds: not every launch
        native.checked_at = now
        if native.chained_for is not signal.getsignal(signal.SIGINT):
            _install(native)
    return native.counter_address, native.counter.value


def interrupt() -> None:
    """Tell running programs of every launch to stop (a KeyboardInterrupt reached the launcher)."""
    target = _native.counter if _native is not None else _fallback
    target.value += 1


def _build() -> _Native | None:
    global _native
    with _lock:
        if _native is None:
            try:
                _native = _Native()
            except Exception:  # noqa: BLE001 - no native handler: Ctrl-C still reaches multi-threaded launches
                return None
        return _native


def _install(native: _Native) -> None:
    """Put the native handler in front of the C handler Python installed for SIGINT (if it installed one)."""
    with _lock:
        python_handler = signal.getsignal(signal.SIGINT)
        native.chained_for = python_handler
        if not callable(python_handler):  # SIG_DFL kills the process anyway; SIG_IGN means ignore
            return
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            old = ctypes.create_string_buffer(_SIGACTION_BYTES)
            if libc.sigaction(signal.SIGINT, None, old) != 0:
                return
            current = ctypes.c_uint64.from_buffer(old).value
            flags = ctypes.c_int32.from_buffer(old, 8 + 128).value  # after sa_handler and the 1024-bit sa_mask
            if current == native.handler or flags & _SA_SIGINFO:
                return
            native.previous.value = current
            new = ctypes.create_string_buffer(old.raw, _SIGACTION_BYTES)
            ctypes.c_uint64.from_buffer(new).value = native.handler
            libc.sigaction(signal.SIGINT, new, None)
        except (OSError, AttributeError):
            return
