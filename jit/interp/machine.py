"""Runs tile IR op by op on numpy arrays: one table, op name -> handler, for every op of dsl.ir.ops.

A program is a walk over the function body with an environment (Value -> array). Programs run one
after another in launch order, or in the order WAVETILE_SCHEDULE_SEED gives (the same permutation
the compiled launcher uses). Hooks (jit.interp.hooks) see every memory access and every result, which
is where the sanitizers live.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable

import numpy as np

from dsl.errors import DeviceAssertionError, KernelError, OutOfBoundsError
from dsl.ir.core import Block, Function, Operation, Value
from dsl.ir.ops import OP, OPS
from jit.codegen.provenance import Provenance
from jit.interp import numerics as N
from jit.interp.elementwise import ELEMENTWISE, cast_value
from jit.interp.memory import AccessError, Memory
from jit.layout import reduction_order


class Hooks:
    """No-op observer; sanitizers override what they need."""

    active = False

    def begin_program(self, pid: tuple[int, int, int]) -> None: ...
    def end_program(self, pid: tuple[int, int, int]) -> None: ...
    def access(self, op: Operation, kind: str, reg, idx: np.ndarray, active: np.ndarray, dt) -> None: ...
    def value(self, op: Operation, args: list[np.ndarray], results: list[np.ndarray]) -> None: ...
    def barrier(self, op: Operation) -> None: ...
    def end_launch(self) -> None: ...


class Machine:
    """Interprets one kernel over a grid. `buffers` are (argument name, low, high) of the pointer arguments."""

    def __init__(self, func: Function, args: list[np.ndarray], buffers: list[tuple[str, int, int]],
                 kernel_name: str, hooks: Hooks | None = None):
        self.func = func
        self.memory = Memory(buffers)
        self.kernel_name = kernel_name
        self.hooks = hooks or Hooks()
        self.provenance = Provenance(func) if func is not None else _Unknown()
        self.args = args
        self.pid = (0, 0, 0)
        self.grid = (1, 1, 1)
        self.env: dict = {}
        self.warp_shuffle: tuple[int, int] | None = None  # (seed, num_warps): WAVETILE_SCHEDULE_SEED
        self._memory_ops = 0

    def lane_order(self, shape: tuple[int, ...]) -> np.ndarray | None:
        """Flat element order for a store or atomic: warps in a seeded random order (lanes of one warp keep
        theirs), so racing writes from different warps land in an order the seed chooses; None = element order."""
        if self.warp_shuffle is None or not shape:
            return None
        from jit.sanitize import warp_of

        seed, num_warps = self.warp_shuffle
        self._memory_ops += 1
        gx, gy, _ = self.grid
        linear = self.pid[0] + gx * (self.pid[1] + gy * self.pid[2])
        rank = np.random.default_rng((seed, linear, self._memory_ops)).permutation(num_warps)
        return np.argsort(rank[warp_of(shape, num_warps).ravel()], kind="stable")

    # -- launch
    def launch(self, grid: tuple[int, int, int], order: np.ndarray | None = None) -> None:
        self.grid = grid
        gx, gy, gz = grid
        total = gx * gy * gz
        for k in range(total):
            linear = int(order[k]) if order is not None else k
            self.pid = (linear % gx, (linear // gx) % gy, linear // (gx * gy))
            self.hooks.begin_program(self.pid)
            self.env = dict(zip(self.func.args, self.args))
            self.run_block(self.func.body, self.env)
            self.hooks.end_program(self.pid)
        self.hooks.end_launch()

    def run_block(self, block: Block, env: dict) -> list[np.ndarray]:
        for op in block.ops:
            if op.name in _TERMINATORS:
                return [env[v] for v in op.operands]
            results = HANDLERS[op.name](self, op, [env[v] for v in op.operands])
            if results:
                for value, array in zip(op.results, results):
                    env[value] = array
            if self.hooks.active:
                self.hooks.value(op, [env[v] for v in op.operands], results or [])
        return []

    def run_region(self, block: Block, args: list[np.ndarray]) -> list[np.ndarray]:
        """Regions see the enclosing values (SSA names are unique), so they share the program's environment."""
        self.env.update(zip(block.args, args))
        return self.run_block(block, self.env)

    # -- errors
    def fail(self, op: Operation, error: KernelError) -> KernelError:
        return error

    def where(self, op: Operation) -> str:
        return f"line {op.loc.line}" if op.loc else "line ?"


class _Unknown:
    """Eager mode has no IR to trace pointers through: every access is checked against all buffers."""

    def buffer(self, value) -> None:
        return None


Handler = Callable[[Machine, Operation, list[np.ndarray]], list[np.ndarray] | None]


def _reg(op: Operation, i: int = 0) -> np.dtype:
    return N.register_dtype(op.results[i].type.dtype)


def _elementwise(name: str) -> Handler:
    fn = ELEMENTWISE[name]
    return lambda m, op, args: [np.asarray(fn(op, *args))]


def _constant(m, op, args):
    t = op.result.type
    value = op.attrs["value"]
    if t.dtype.is_floating():
        with np.errstate(all="ignore"):
            scalar = cast_value(np.asarray(float(value), np.float64), _F64, t.dtype)
        return [np.full(t.shape, scalar, _reg(op))]
    if t.dtype.is_bool():
        return [np.full(t.shape, bool(value), np.bool_)]
    bits = int(value) & ((1 << t.dtype.primitive_bitwidth) - 1)
    return [np.full(t.shape, bits, np.uint64).astype(_reg(op))]


def _arange(m, op, args):
    return [np.arange(op.attrs["start"], op.attrs["end"], dtype=np.int32)]


def _program_id(m, op, args):
    return [np.asarray(m.pid[op.attrs["axis"]], np.int32)]


def _num_programs(m, op, args):
    return [np.asarray(m.grid[op.attrs["axis"]], np.int32)]


def _splat(m, op, args):
    return [np.full(op.result.type.shape, args[0], _reg(op))]


def _broadcast(m, op, args):
    return [np.broadcast_to(args[0], op.result.type.shape).copy()]


def _expand_dims(m, op, args):
    return [np.expand_dims(args[0], op.attrs["axis"])]


def _reshape(m, op, args):
    return [np.reshape(args[0], op.result.type.shape).copy()]


def _permute(m, op, args):
    return [np.transpose(args[0], tuple(op.attrs["order"])).copy()]


def _join(m, op, args):
    return [np.stack([args[0], args[1]], axis=-1)]


def _split(m, op, args):
    return [args[0][..., 0].copy(), args[0][..., 1].copy()]


def _cat(m, op, args):
    return [np.concatenate([args[0], args[1]], axis=0)]


def _flip(m, op, args):
    return [np.flip(args[0], op.attrs["axis"]).copy()]


def _gather(m, op, args):
    src, index = args
    axis = op.attrs["axis"]
    n = src.shape[axis]
    wide = index.astype(np.int64) if op.operands[1].type.dtype.is_int_signed() else \
        index.astype(np.uint64).clip(0, n - 1).astype(np.int64)
    wide = np.clip(wide, 0, n - 1)
    return [np.take_along_axis(src, wide, axis=axis)]


def _reduce(m, op, args):
    """The code generator's order (jit.codegen.reduce): each thread's registers in turn, then halving."""
    axis = op.attrs["axis"]
    xs = [np.moveaxis(a, axis, -1) for a in args]
    n = xs[0].shape[-1]
    split = op.attrs.get("split")
    if split is not None and n > 1 and n % (split[0] * split[1] * split[2]) == 0:
        order = reduction_order(n, *split)  # [threads, registers]
        xs = [x[..., order] for x in xs]
        accs = [x[..., 0] for x in xs]
        for r in range(1, order.shape[1]):
            combined = m.run_region(op.regions[0], accs + [x[..., r] for x in xs])
            accs = [np.broadcast_to(c, a.shape).astype(a.dtype) for c, a in zip(combined, accs)]
        xs, n = accs, order.shape[0]
    while n > 1:
        h = (n + 1) // 2
        left = [x[..., :n - h] for x in xs]
        right = [x[..., h:n] for x in xs]
        combined = m.run_region(op.regions[0], left + right)
        xs = [np.concatenate([np.broadcast_to(c, lft.shape).astype(x.dtype), x[..., n - h:h]], axis=-1)
              for c, lft, x in zip(combined, left, xs)]
        n = h
    return [x[..., 0].copy() for x in xs]


def _scan(m, op, args):
    axis = op.attrs["axis"]
    reverse = bool(op.attrs["reverse"])
    xs = [np.moveaxis(a, axis, -1).copy() for a in args]
    n = xs[0].shape[-1]
    steps = range(n - 2, -1, -1) if reverse else range(1, n)
    for pos in steps:
        prev = pos + 1 if reverse else pos - 1
        out = m.run_region(op.regions[0], [x[..., prev] for x in xs] + [x[..., pos] for x in xs])
        for x, value in zip(xs, out):
            x[..., pos] = value
    return [np.moveaxis(x, -1, axis).copy() for x in xs]


def _sort(m, op, args):
    """The compiled code's network: bitonic for powers of two, odd-even transposition otherwise."""
    x = args[0].copy()
    descending = bool(op.attrs["descending"])
    n = x.shape[-1]

    def compare_swap(i: np.ndarray, j: np.ndarray, flip: np.ndarray | None) -> None:
        a, b = x[..., i], x[..., j]
        with np.errstate(invalid="ignore"):
            swap = (a < b) if descending else (a > b)
        if flip is not None:
            swap = swap ^ flip
        x[..., i], x[..., j] = np.where(swap, b, a), np.where(swap, a, b)

    if n & (n - 1) == 0:
        size = 2
        while size <= n:
            stride = size // 2
            while stride >= 1:
                p = np.arange(n // 2)
                shift = int(math.log2(stride))
                i = ((p >> shift) << (shift + 1)) + (p & (stride - 1))
                flip = (i & size) != 0 if size < n else None
                compare_swap(i, i + stride, flip)
                stride //= 2
            size *= 2
    else:
        for r in range(n):
            i = np.arange(r & 1, n - 1, 2)
            compare_swap(i, i + 1, None)
    return [x]


def _histogram(m, op, args):
    x, mask = args
    bins = op.attrs["num_bins"]
    wide = x.astype(np.int64).ravel()
    hit = (wide >= 0) & (wide < bins) & np.broadcast_to(mask, x.shape).ravel()
    return [np.bincount(wide[hit], minlength=bins)[:bins].astype(np.int32)]


def _dot(m, op, args):
    a, b, acc = args
    precision = op.attrs["input_precision"]
    acc_dt = op.operands[2].type.dtype
    if acc_dt.is_floating():
        compute = np.float64 if acc_dt.is_fp64() else np.float32
    else:
        compute = np.int32 if acc_dt.primitive_bitwidth <= 32 else np.int64

    def pack(x, value):
        if value.type.dtype.is_fp32() and precision == "tf32":
            return N.tf32(x)
        return x.astype(compute)

    pa, pb = pack(a, op.operands[0]), pack(b, op.operands[1])
    c = acc.astype(compute).copy()
    with np.errstate(all="ignore"):
        for k in range(pa.shape[-1]):
            left, right = pa[..., :, k:k + 1], pb[..., k:k + 1, :]
            if acc_dt.is_floating():
                c = N.fma64(left, right, c) if acc_dt.is_fp64() else N.round_narrow(N.fma32(left, right, c), acc_dt)
            else:
                c = (c + left * right).astype(compute)
    return [c.astype(N.register_dtype(acc_dt))]


# -- memory

def _access(m: Machine, op: Operation, kind: str, ptr: np.ndarray, active: np.ndarray, writes: bool | None = None):
    """Resolve and check an access; `writes=False` marks an atomic that only reads (hooks see 'atomic_read')."""
    dt = op.operands[0].type.dtype.element_ty
    try:
        reg = m.memory.resolve(ptr, active, dt.itemsize, m.provenance.buffer(op.operands[0]))
        if reg is None:
            return None, None, dt
        idx = m.memory.indices(reg, ptr, active, dt)
        if (kind != "load" if writes is None else writes) and not reg.writable:
            raise AccessError("read-only", f"buffer '{reg.name}' is read-only (flags.writeable is False), so the "
                              "kernel cannot write it; pass a writable array", int(np.flatnonzero(active)[0]))
    except AccessError as e:
        raise OutOfBoundsError(f"{e.kind} {kind} in kernel '{m.kernel_name}' at {m.where(op)}, program id {m.pid}: "
                               f"{e} (tile element {_tile_index(ptr.shape, e.lane)} of shape "
                               f"{list(ptr.shape)})") from None
    if m.hooks.active:
        m.hooks.access(op, "atomic_read" if kind == "atomic" and writes is False else kind, reg, idx, active, dt)
    return reg, idx, dt


def _tile_index(shape, lane: int):
    return tuple(int(i) for i in np.unravel_index(lane, shape)) if shape else ()


def _load(m, op, args):
    ptr, mask, other = args
    active = np.broadcast_to(mask, ptr.shape)
    reg, idx, dt = _access(m, op, "load", ptr, active)
    if reg is None:
        return [np.broadcast_to(other, ptr.shape).astype(_reg(op)).copy()]
    return [np.where(active, m.memory.load(reg, idx, active, dt), other).astype(_reg(op))]


def _store(m, op, args, kind: str = "store"):
    """A store, or an atomic store (kind "atomic": the sanitizer sees an atomic write), in lane order."""
    ptr, value, mask = args
    active = np.broadcast_to(mask, ptr.shape)
    reg, idx, dt = _access(m, op, kind, ptr, active)
    if reg is None:
        return None
    value = np.broadcast_to(value, ptr.shape)
    order = m.lane_order(ptr.shape)
    if order is not None:
        idx, active, value = (a.reshape(-1)[order] for a in np.broadcast_arrays(idx, active, value))
    m.memory.store(reg, idx, active, value, dt)
    return None


def _rmw(kind: str, dt) -> Callable:
    if dt.is_floating():
        def fadd(old, v):
            with np.errstate(all="ignore"):
                return N.round_narrow(np.float32(old) + np.float32(v), dt) if N.is_narrow(dt) else old + v
        table = {"add": fadd, "xchg": lambda old, v: v,
                 "max": lambda old, v: old if np.isnan(v) else v if np.isnan(old) or v > old else old,
                 "min": lambda old, v: old if np.isnan(v) else v if np.isnan(old) or v < old else old}
        return table[kind]
    table = {"add": lambda old, v: old + v, "and": lambda old, v: old & v, "or": lambda old, v: old | v,
             "xor": lambda old, v: old ^ v, "xchg": lambda old, v: v, "max": max, "min": min}
    return table[kind]


def _atomic(m, op, args):
    ptr, value, mask = args
    active = np.broadcast_to(mask, ptr.shape)
    reg, idx, dt = _access(m, op, "atomic", ptr, active)
    out = np.zeros(ptr.shape, _reg(op))
    if reg is None:
        return [out]
    fn = _rmw(op.attrs["kind"], dt)
    values = np.broadcast_to(value, ptr.shape)
    order = m.lane_order(ptr.shape)
    lanes = zip(*np.nonzero(active)) if ptr.ndim else [()]
    if order is not None:
        lanes = [np.unravel_index(int(i), ptr.shape) for i in order if active.reshape(-1)[i]]
    with np.errstate(all="ignore"):
        for lane in lanes:
            if ptr.ndim == 0 and not active:
                break
            old = m.memory.read_one(reg, int(idx[lane]), dt)
            m.memory.write_one(reg, int(idx[lane]), fn(old, values[lane]), dt)
            out[lane] = old
    return [out]


def _atomic_cas(m, op, args):
    ptr, cmp, value = args
    active = np.ones(ptr.shape, np.bool_)
    reg, idx, dt = _access(m, op, "atomic", ptr, active)
    out = np.zeros(ptr.shape, _reg(op))
    cmps, values = np.broadcast_to(cmp, ptr.shape), np.broadcast_to(value, ptr.shape)
    for lane in np.ndindex(ptr.shape):
        old = m.memory.read_one(reg, int(idx[lane]), dt)
        if N.to_bits(np.asarray([old]), dt)[0] == N.to_bits(np.asarray([cmps[lane]]), dt)[0]:
            m.memory.write_one(reg, int(idx[lane]), values[lane], dt)
        out[lane] = old
    return [out]


def _atomic_load(m, op, args):
    """One atomic load per active lane; with one program running at a time it reads what a plain load reads."""
    ptr, mask = args
    active = np.broadcast_to(mask, ptr.shape)
    reg, idx, dt = _access(m, op, "atomic", ptr, active, writes=False)
    if reg is None:
        return [np.zeros(ptr.shape, _reg(op))]
    return [np.where(active, m.memory.load(reg, idx, active, dt), 0).astype(_reg(op))]


def _atomic_store(m, op, args):
    return _store(m, op, args, "atomic")


def _atomic_poll(m, op, args):
    """Programs run one at a time here, so nothing can change memory while a poll waits: each lane's first
    load decides. A lane that does not match without a timeout would wait forever, which is an error."""
    ptr, expected, timeout = args
    active = np.ones(ptr.shape, np.bool_)
    reg, idx, dt = _access(m, op, "atomic", ptr, active, writes=False)
    seen = m.memory.load(reg, idx, active, dt)
    matched = np.asarray(seen == np.broadcast_to(expected, ptr.shape))
    if int(timeout) < 0 and not matched.all():
        lane = int(np.flatnonzero(~matched.ravel())[0])
        raise KernelError(f"atomic_poll in kernel '{m.kernel_name}' at {m.where(op)}, program id {m.pid} would wait "
                          f"forever: tile element {_tile_index(ptr.shape, lane)} holds {np.ravel(seen)[lane]}, not "
                          f"the expected {np.ravel(np.broadcast_to(expected, ptr.shape))[lane]}, and no timeout_ns "
                          "was given; the interpreter runs one program at a time, so no other program can write it "
                          "while this one waits (run compiled, where programs run concurrently, or pass timeout_ns)")
    return [matched.astype(np.bool_)]


def _map_elementwise(m, op, args):
    """The region once per group of `pack` consecutive row-major elements, in element order."""
    pack = op.attrs["pack"]
    shape = op.results[0].type.shape
    flat = [np.broadcast_to(a, shape).reshape(-1) for a in args]
    outs = [np.zeros(math.prod(shape), _reg_of(r)) for r in op.results]
    for start in range(0, math.prod(shape), pack):
        scalars = [np.asarray(a[start + j]) for a in flat for j in range(pack)]
        values = m.run_region(op.regions[0], scalars)
        for r, out in enumerate(outs):
            for j in range(pack):
                out[start + j] = values[r * pack + j]
    return [out.reshape(shape) for out in outs]


# -- control flow

def _for(m, op, args):
    lb, ub, step, *carried = args
    body = op.regions[0]
    iv_dtype = _reg_of(op.operands[0])
    for i in range(int(lb), int(ub), int(step)) if int(step) else ():
        carried = m.run_region(body, [np.asarray(i).astype(iv_dtype)] + carried)
    return carried


def _if(m, op, args):
    region = op.regions[0] if bool(args[0]) else op.regions[1]
    return m.run_region(region, [])


def _while(m, op, args):
    before, after = op.regions
    carried = list(args)
    while True:
        cond, *values = m.run_region(before, carried)
        if not bool(cond):
            return values
        carried = m.run_region(after, values)


def _print(m, op, args):
    parts = [str(a.item()) if a.ndim == 0 else np.array2string(a) for a in args]
    print(f"pid ({m.pid[0]}, {m.pid[1]}, {m.pid[2]}) {op.attrs.get('prefix', '')}" +
          (" " + " ".join(parts) if parts else ""), flush=True, file=sys.stdout)


def _assert(m, op, args):
    cond = np.asarray(args[0])
    if not cond.all():
        lane = int(np.flatnonzero(~cond.ravel())[0])
        raise DeviceAssertionError(f"device assertion failed in kernel '{m.kernel_name}' at {m.where(op)}, "
                                   f"program id {m.pid}, element {lane}: {op.attrs.get('message', '')}")


def _barrier(m, op, args):
    if m.hooks.active:
        m.hooks.barrier(op)


def _reg_of(value: Value) -> np.dtype:
    return N.register_dtype(value.type.dtype)


_TERMINATORS = frozenset(name for name, info in OPS.items() if info.terminator)

HANDLERS: dict[str, Handler] = {
    **{name: _elementwise(name) for name in ELEMENTWISE},
    OP.ARITH_CONSTANT: _constant,
    OP.TILE_ARANGE: _arange,
    OP.TILE_PROGRAM_ID: _program_id,
    OP.TILE_NUM_PROGRAMS: _num_programs,
    OP.TILE_SPLAT: _splat,
    OP.TILE_BROADCAST: _broadcast,
    OP.TILE_EXPAND_DIMS: _expand_dims,
    OP.TILE_RESHAPE: _reshape,
    OP.TILE_PERMUTE: _permute,
    OP.TILE_JOIN: _join,
    OP.TILE_SPLIT: _split,
    OP.TILE_CAT: _cat,
    OP.TILE_FLIP: _flip,
    OP.TILE_GATHER: _gather,
    OP.TILE_REDUCE: _reduce,
    OP.TILE_SCAN: _scan,
    OP.TILE_SORT: _sort,
    OP.TILE_HISTOGRAM: _histogram,
    OP.TILE_DOT: _dot,
    OP.TILE_LOAD: _load,
    OP.TILE_STORE: _store,
    OP.TILE_ATOMIC: _atomic,
    OP.TILE_ATOMIC_CAS: _atomic_cas,
    OP.TILE_ATOMIC_LOAD: _atomic_load,
    OP.TILE_ATOMIC_STORE: _atomic_store,
    OP.TILE_ATOMIC_POLL: _atomic_poll,
    OP.TILE_MAP_ELEMENTWISE: _map_elementwise,
    OP.SCF_FOR: _for,
    OP.SCF_IF: _if,
    OP.SCF_WHILE: _while,
    OP.TILE_PRINT: _print,
    OP.TILE_ASSERT: _assert,
    OP.TILE_BARRIER: _barrier,
}

from dsl import dtypes as _T  # noqa: E402

_F64 = _T.float64
