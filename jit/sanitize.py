"""Sanitizers of the interpreter: WAVETILE_SANITIZE=all, or a comma list of bounds, uninit, race, nan, overflow.

They run in the IR interpreter (interpret=True / WAVETILE_INTERPRET=1; setting WAVETILE_SANITIZE alone also
selects it) and stop the launch at the first finding with a `SanitizerError` that names the class, the
kernel's source line(s) and program id(s):

- bounds: every access is checked against its buffer (or, for pointers of unknown provenance, against all
  buffers), reporting the tile index and the valid range. The interpreter always does this; the error is
  an `OutOfBoundsError`, which a `SanitizerError` of class "out-of-bounds" also is.
- uninit: a load of bytes of a `simulator.empty()` allocation that nothing has written.
- race: conflicting accesses to one element in one launch, not both atomic, at least one a write: by two
  programs (there is no order between programs), or by two warps of one program with no `tl.debug_barrier()`
  between them. Warps own elements as in Triton's blocked layout (jit.layout, with the current machine's
  warp width), each lane holding up to 16 contiguous bytes where the access's addresses run contiguously
  along the last dim (as Triton's coalescing gives memory ops). Duplicate addresses within one store count
  only when the values differ.
- nan: the first op that produces a NaN or Inf from finite operands, reported when such a value reaches
  memory (a store or atomic on an active lane), so garbage in masked-off lanes is not reported.
- overflow: i32 arithmetic feeding a pointer offset (tile.addptr) that wraps around.
"""

from __future__ import annotations

import numpy as np

from dsl.errors import OutOfBoundsError
from dsl.ir.core import Function, Operation, Value
from dsl.ir.ops import OP, Trait, with_trait
from jit import env
from jit.codegen.provenance import result_sources
from jit.interp.machine import Hooks
from jit.layout import default_layout, owners

SANITIZERS = ("bounds", "uninit", "race", "nan", "overflow")
NUM_WARPS = 4


class SanitizerError(OutOfBoundsError):
    """A finding of a sanitizer. `kind` is the class; `lines` the source line(s); `pids` the program id(s)."""

    def __init__(self, kind: str, message: str, lines: tuple[int, ...], pids: tuple = ()):
        super().__init__(f"{kind}: {message}")
        self.kind, self.lines, self.pids = kind, lines, pids


def selected(options: dict | None = None) -> tuple[str, ...]:
    value = (options or {}).get("sanitize") or env.get("WAVETILE_SANITIZE", "")
    if not value or value == "0":
        return ()
    names = SANITIZERS if value == "all" else tuple(v.strip() for v in value.split(",") if v.strip())
    unknown = [n for n in names if n not in SANITIZERS]
    if unknown:
        raise ValueError(f"WAVETILE_SANITIZE: unknown sanitizer {unknown[0]!r}; choose from {', '.join(SANITIZERS)}")
    return names


def hooks_for(func: Function | None, jit_fn, options: dict) -> Hooks:
    names = selected(options)
    if not names:
        return Hooks()
    return Sanitizers(func, jit_fn.__name__, names, int(options.get("num_warps", NUM_WARPS)), jit_fn.parsed)


def warp_of(shape: tuple[int, ...], num_warps: int, warp_size: int | None = None, vector: int = 1) -> np.ndarray:
    """The warp holding each element of a tile: Triton's blocked layout (jit.layout) over `num_warps` warps of
    `warp_size` lanes (default: the current machine's), `vector` contiguous elements per lane."""
    if warp_size is None:
        import simulator

        warp_size = simulator.current_spec().warp_size
    warps, _, _ = owners(default_layout(tuple(shape), num_warps, warp_size, vector))
    return warps.reshape(shape)


def _shaped(values: np.ndarray, shape: tuple) -> np.ndarray:
    """`values` seen with `shape` (a scalar register may arrive as a 1-element array)."""
    values = np.asarray(values)
    return values.reshape(shape) if values.size == int(np.prod(shape)) else np.broadcast_to(values, shape)


def _vector(idx: np.ndarray, itemsize: int) -> int:
    """Elements per lane of a memory op (Triton's coalescing): up to 16 bytes when the element indices run
    contiguously along the last dim, else 1."""
    if idx.ndim == 0 or idx.shape[-1] < 2 or not (np.diff(idx, axis=-1) == 1).all():
        return 1
    return max(1, min(16 // max(1, itemsize), idx.shape[-1]))


def _line(op: Operation) -> int:
    return op.loc.line if op.loc else 0


class _Shadow:
    """Per buffer: who last wrote / read / updated atomically each element in this launch (program and warp)."""

    def __init__(self, size: int):
        self.writer = np.full(size, -1, np.int64)  # linear program id
        self.writer_line = np.zeros(size, np.int64)
        self.reader = np.full(size, -1, np.int64)  # -2: several programs
        self.reader_line = np.zeros(size, np.int64)
        self.atomic = np.full(size, -1, np.int64)
        self.atomic_line = np.zeros(size, np.int64)
        self.epoch_warp_w = np.full(size, -1, np.int64)
        self.epoch_warp_w_line = np.zeros(size, np.int64)
        self.epoch_warp_r = np.full(size, -1, np.int64)
        self.epoch_warp_r_line = np.zeros(size, np.int64)


class Sanitizers(Hooks):
    active = True

    def __init__(self, func: Function | None, kernel: str, names: tuple[str, ...], num_warps: int, source=None):
        self.names = set(names)
        self.source = source  # dsl.frontend.ParsedSource: reports quote the kernel's lines
        self.warp_size: int | None = None
        self.kernel = kernel
        self.num_warps = num_warps
        self.shadows: dict[int, _Shadow] = {}
        self.pid = (0, 0, 0)
        self.linear = 0
        self.grid_x = 1
        self.pids: dict[int, tuple] = {}
        self.origin: dict[Value, np.ndarray] = {}  # nan: op index that first made each non-finite element
        self.ops: list[Operation] = []
        self.op_index: dict[Operation, int] = {}
        self.index_values = _feeds_addresses(func) if func is not None else None
        self.machine = None

    # -- program boundaries
    def begin_program(self, pid):
        self.pid = pid
        self.linear = len(self.pids)
        self.pids[self.linear] = pid
        for shadow in self.shadows.values():
            shadow.epoch_warp_w[:] = -1
            shadow.epoch_warp_r[:] = -1
        self.origin.clear()

    def barrier(self, op):
        for shadow in self.shadows.values():
            shadow.epoch_warp_w[:] = -1
            shadow.epoch_warp_r[:] = -1

    def _shadow(self, reg, dt) -> _Shadow:
        shadow = self.shadows.get(reg.index)
        if shadow is None:
            shadow = self.shadows[reg.index] = _Shadow(max(1, reg.size // dt.itemsize))
        return shadow

    def where(self, line: int) -> str:
        """'line N (`source text`)' for a report."""
        source = self.source
        if source is None or not line:
            return f"line {line}"
        index = line - source.first_line
        text = source.lines[index].strip() if 0 <= index < len(source.lines) else ""
        return f"line {line}" + (f" (`{text}`)" if text else "")

    def _fail(self, kind, message, lines, pids=()):
        raise SanitizerError(kind, f"in kernel '{self.kernel}': {message}", tuple(lines), tuple(pids))

    # -- memory
    def access(self, op, kind, reg, idx, active, dt):
        idx = np.broadcast_to(idx, active.shape)
        elements = idx[active]
        if "uninit" in self.names:
            self._uninit(op, kind, reg, elements, dt)
        if "race" in self.names:
            if self.warp_size is None:
                import simulator

                self.warp_size = simulator.current_spec().warp_size
            warps = (warp_of(active.shape, self.num_warps, self.warp_size, _vector(idx, dt.itemsize))[active]
                     if active.shape else np.zeros(1, np.int64))
            self._race(op, kind, reg, elements, warps, dt)
        if "nan" in self.names and kind in ("store", "atomic"):
            self._nan_at_store(op, active)

    def _uninit(self, op, kind, reg, elements, dt):
        from simulator.memory import allocation_at

        alloc = allocation_at(reg.low, reg.high)
        if alloc is None:
            return
        start = reg.low - alloc.low
        byte = start + elements * dt.itemsize
        if kind in ("load", "atomic", "atomic_read"):  # an atomic reads the old value too
            unwritten = alloc.unwritten(byte.reshape(-1), dt.itemsize)
            if unwritten.any():
                bad = int(elements.reshape(-1)[np.flatnonzero(unwritten)[0]])
                self._fail("uninitialized-read", f"{kind} at {self.where(_line(op))}, program id {self.pid}, "
                           "reads element "
                           f"{bad} of buffer '{reg.name}', which nothing has written (simulator.empty() memory)",
                           [_line(op)], [self.pid])
        if kind not in ("load", "atomic_read"):
            for k in range(dt.itemsize):
                alloc.written[byte + k] = True

    def _race(self, op, kind, reg, elements, warps, dt):
        s = self._shadow(reg, dt)
        me, line = self.linear, _line(op)

        def other(owner: np.ndarray) -> np.ndarray:
            return (owner != -1) & (owner != me)

        def report(what: str, owners: np.ndarray, lines: np.ndarray, hit: np.ndarray):
            j = int(np.flatnonzero(hit)[0])
            e = int(elements[j])
            first = int(owners[e])
            first_pid = self.pids.get(first, "several programs") if first >= 0 else "several programs"
            self._fail("data-race", f"{what} on element {e} of buffer '{reg.name}': {self.where(int(lines[e]))} in "
                       f"program {first_pid} and {self.where(line)} in program {self.pid}", [int(lines[e]), line],
                       [first_pid, self.pid])

        if kind == "load":
            hit = other(s.writer[elements])
            if hit.any():
                report("write/read race between programs", s.writer, s.writer_line, hit)
            hit = other(s.atomic[elements])
            if hit.any():
                report("atomic/read race between programs", s.atomic, s.atomic_line, hit)
            wr = s.epoch_warp_w[elements]
            hit = (wr != -1) & (wr != warps)
            if hit.any():
                self._warp_race("write/read", reg, elements, hit, s.epoch_warp_w_line, line)
            current = s.reader[elements]
            s.reader[elements] = np.where((current == -1) | (current == me), me, -2)
            s.reader_line[elements] = line
            s.epoch_warp_r[elements] = warps
            s.epoch_warp_r_line[elements] = line
        elif kind == "store":
            for owners, lines, what in ((s.writer, s.writer_line, "write/write"), (s.atomic, s.atomic_line,
                                                                                   "atomic/write")):
                hit = other(owners[elements])
                if hit.any():
                    report(f"{what} race between programs", owners, lines, hit)
            readers = s.reader[elements]
            hit = (readers == -2) | other(readers)
            if hit.any():
                report("read/write race between programs", s.reader, s.reader_line, hit)
            for owners, lines, what in ((s.epoch_warp_w, s.epoch_warp_w_line, "write/write"),
                                        (s.epoch_warp_r, s.epoch_warp_r_line, "read/write")):
                prev = owners[elements]
                hit = (prev != -1) & (prev != warps)
                if hit.any():
                    self._warp_race(what, reg, elements, hit, lines, line)
            s.writer[elements] = me
            s.writer_line[elements] = line
            s.epoch_warp_w[elements] = warps
            s.epoch_warp_w_line[elements] = line
        elif kind == "atomic_read":  # atomic_load / atomic_poll: races only with plain writes
            hit = other(s.writer[elements])
            if hit.any():
                report("write/atomic race between programs", s.writer, s.writer_line, hit)
        else:  # atomic
            hit = other(s.writer[elements])
            if hit.any():
                report("write/atomic race between programs", s.writer, s.writer_line, hit)
            s.atomic[elements] = me
            s.atomic_line[elements] = line

    def _warp_race(self, what, reg, elements, hit, lines, line):
        e = int(elements[np.flatnonzero(hit)[0]])
        self._fail("data-race", f"{what} race between warps of program {self.pid} without a barrier on element {e} "
                   f"of buffer '{reg.name}': {self.where(int(lines[e]))} and {self.where(line)}", [int(lines[e]), line],
                   [self.pid])

    # -- values
    def value(self, op, args, results):
        if "overflow" in self.names and self.index_values is not None and op.name in _WRAPPING \
                and op.result in self.index_values and op.result.type.dtype.name == "int32":
            exact = _WRAPPING[op.name](*(np.asarray(a, np.int64) for a in args))
            if np.any((exact < -2**31) | (exact >= 2**31)):
                j = int(np.flatnonzero(((exact < -2**31) | (exact >= 2**31)).ravel())[0])
                self._fail("index-overflow", f"int32 {op.name} at {self.where(_line(op))}, program id {self.pid}, "
                           "wraps "
                           f"(exact value {int(np.ravel(exact)[j])}) in arithmetic that feeds a pointer offset; "
                           "compute offsets in int64", [_line(op)], [self.pid])
        if "nan" in self.names:
            self._track_nan(op, args, results)

    def _track_nan(self, op, args, results):
        if op.name in _NOT_PRODUCERS or not results:
            return
        index = self.op_index.setdefault(op, len(self.ops))
        if index == len(self.ops):
            self.ops.append(op)
        for value, result in zip(op.results, results):
            if not value.type.dtype.is_floating():
                continue
            bad = ~np.isfinite(np.asarray(result, np.float64))
            if not bad.any():
                continue
            if op.regions:  # a loop or if: the value came from a yield, whose origin is the op inside
                found = [self.origin[v] for v in result_sources(value) if v in self.origin]
                origin = _shaped(found[0], np.shape(result)) if found else np.full(np.shape(result), -1)
                self.origin[value] = np.where(bad, np.where(origin == -1, index, origin), -1)
                continue
            inherited = [self.origin[v] for v in op.operands if v in self.origin]
            if op.info.elementwise and inherited:
                origin = np.full(np.shape(result), -1, np.int64)
                for o in inherited:
                    origin = np.where(origin == -1, np.broadcast_to(o, origin.shape), origin)
                fresh = bad & (origin == -1)
                origin = np.where(fresh, index, origin)
            elif inherited:
                origin = np.full(np.shape(result), int(max(int(np.max(o)) for o in inherited)), np.int64)
            else:
                origin = np.where(bad, index, -1)
            self.origin[value] = np.where(bad, origin, -1)

    def _nan_at_store(self, op, active):
        value = op.operands[1]
        origin = self.origin.get(value)
        if origin is None:
            return
        hit = np.broadcast_to(origin, active.shape)[active]
        hit = hit[hit >= 0]
        if hit.size:
            first = self.ops[int(hit[0])]
            self._fail("nan-inf", f"{first.name} at {self.where(_line(first))}, program id {self.pid}, produced a NaN "
                       f"or Inf from finite operands; it reaches memory at {self.where(_line(op))}",
                       [_line(first), _line(op)],
                       [self.pid])


_WRAPPING = {OP.ARITH_ADD: lambda a, b: a + b, OP.ARITH_SUB: lambda a, b: a - b, OP.ARITH_MUL: lambda a, b: a * b,
             OP.ARITH_SHL: lambda a, b: a << np.clip(b, 0, 63)}
# a NaN or Inf read from memory or written as a constant is an input, not one the kernel produced
_NOT_PRODUCERS = with_trait(Trait.READS_MEMORY) | {OP.ARITH_CONSTANT}
# integer values reach an offset through shape ops, choices (select, min, max), casts and the wrapping arithmetic
_THROUGH = with_trait(Trait.SAME_VALUES) | with_trait(Trait.SELECTS) | frozenset(_WRAPPING) | {OP.ARITH_CAST}


def _feeds_addresses(func: Function) -> set[Value]:
    """Integer values that flow into the offset of a tile.addptr (through arithmetic, casts and shape ops)."""
    seen: set[Value] = set()
    work = [op.operands[1] for op in func.walk() if op.name == OP.TILE_ADDPTR]
    while work:
        v = work.pop()
        if v in seen:
            continue
        seen.add(v)
        op = v.op
        if op is not None and op.name in _THROUGH:
            work.extend(x for x in op.operands if x.type.dtype.is_int() and not x.type.dtype.is_bool())
    return seen
