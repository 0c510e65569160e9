"""Eager mode: the kernel's own Python runs once per program, and every `tl` operation computes at once.

`kernel[grid](..., interpret="eager")` or WAVETILE_INTERPRET=eager. The language's operations go through
`dsl.semantic`'s `Semantic` object (a context variable); here it is an `EagerSemantic` whose builder
evaluates each op as it is created, with the IR interpreter's own handlers (jit.interp.machine), so the
numerics are the interpreter's. Tensors are `EagerTensor`s: they print their values, and `if`, `while`,
`range()` and `int()` on them use the value, so `print(x)` and `breakpoint()` work inside a kernel.
Ops created inside a region (the combine function of `tl.reduce`) are recorded, not run; the interpreter
runs the region when the reduce itself is created.
"""

from __future__ import annotations

import sys

import numpy as np

from dsl import semantic as sem
from dsl.core import tensor
from dsl.ir.builder import Builder
from dsl.ir.core import Block, Loc, Operation, TileType
from jit.interp import numerics as N
from jit.interp.machine import HANDLERS, Machine


class EagerTensor(tensor):
    """A tensor with a value (None inside a region being recorded)."""

    @property
    def value(self) -> np.ndarray | None:
        machine = _machine()
        return None if machine is None else machine.env.get(self.handle)

    def numpy(self) -> np.ndarray:
        value = self.value
        if value is None:
            raise TypeError("this tensor has no value yet (it is an argument of a combine function)")
        return np.array(value)

    def __bool__(self):
        return bool(self.numpy())

    def __index__(self):
        return int(self.numpy())

    __int__ = __index__

    def __float__(self):
        return float(self.numpy())

    def __repr__(self) -> str:
        value = self.value
        return f"tensor({self.type}, {np.array2string(np.asarray(value)) if value is not None else '<symbolic>'})"

    __str__ = __repr__


def _promote(result):
    if type(result) is tensor:
        result.__class__ = EagerTensor
    elif isinstance(result, (tuple, list)):
        for item in result:
            _promote(item)
    return result


class EagerBuilder(Builder):
    """Creates ops like the frontend's builder; ops at the top level are evaluated at once."""

    def __init__(self, root: Block, machine: Machine, source_file: str):
        super().__init__(root)
        self.root, self.machine, self.source_file = root, machine, source_file

    def create(self, name, operands, result_types, attrs=None, regions=None) -> Operation:
        op = Operation(name, operands, result_types, attrs, regions, self._loc())
        if self.block is not self.root:
            return self.block.append(op)
        m = self.machine
        results = HANDLERS[name](m, op, [m.env[v] for v in operands])
        for value, array in zip(op.results, results or []):
            m.env[value] = array
        if m.hooks.active:
            m.hooks.value(op, [m.env[v] for v in operands], results or [])
        return op

    def _loc(self) -> Loc | None:
        frame = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_filename == self.source_file:
                return Loc(frame.f_lineno, 0)
            frame = frame.f_back
        return self.loc


class EagerSemantic(sem.Semantic):
    """The language's semantics, with every tensor it returns made an EagerTensor."""

    eager = True

    def __getattribute__(self, name):
        attr = object.__getattribute__(self, name)
        if name.startswith("_") or not callable(attr) or name in ("activate", "deactivate"):
            return attr
        return lambda *args, **kwargs: _promote(attr(*args, **kwargs))

    def map_elementwise(self, scalar_fn, args, pack=1):
        """The scalar function runs as Python once per group of `pack` elements (its `if`s need values, which
        a recorded region would not have); the results are written straight into the machine's values."""
        if isinstance(pack, bool) or not isinstance(pack, int) or pack < 1:
            raise ValueError(f"map_elementwise: pack must be a positive integer, got {pack!r}")
        args = self.broadcast(*(self.to_tensor(a) for a in args))
        shape = args[0].shape
        flat = [np.broadcast_to(a.numpy(), shape).reshape(-1) for a in args]
        numel = flat[0].size
        if numel % pack:
            raise ValueError(f"map_elementwise: pack={pack} does not divide the {numel} elements of shape "
                             f"{list(shape)}")
        columns, dtypes = None, None
        for start in range(0, numel, pack):
            scalars = [self.full((), a[start + j].item(), t.dtype) for a, t in zip(flat, args) for j in range(pack)]
            out = scalar_fn(scalars)
            out = [self.to_tensor(o) for o in (out if isinstance(out, (tuple, list)) else [out])]
            if columns is None:
                dtypes = [o.dtype for o in out[::pack]]
                columns = [np.zeros(numel, N.register_dtype(d)) for d in dtypes]
            for r, column in enumerate(columns):
                for j in range(pack):
                    column[start + j] = out[r * pack + j].numpy()
        machine = _machine()
        results = []
        for dtype, column in zip(dtypes, columns):
            result = self.full(shape, 0, dtype)
            machine.env[result.handle] = column.reshape(shape)
            results.append(result)
        return results


_ACTIVE: list[Machine] = []


def _machine() -> Machine | None:
    return _ACTIVE[-1] if _ACTIVE else None


def run(jit_fn, signature: dict, runtime: list, grid: tuple[int, int, int], order: np.ndarray | None,
        hooks=None) -> None:
    """Run every program of the grid by calling the kernel's Python function."""
    from jit.interpreter import register_args

    root = Block()
    handles = {name: root.add_arg(type, name) for name, _, type in runtime}
    values, buffers = register_args(runtime)
    machine = Machine(None, [], buffers, jit_fn.__name__, hooks)
    semantic = EagerSemantic(EagerBuilder(root, machine, jit_fn.fn.__code__.co_filename))
    gx, gy, gz = grid
    machine.grid = grid
    total = gx * gy * gz
    _ACTIVE.append(machine)
    try:
        for k in range(total):
            linear = int(order[k]) if order is not None else k
            machine.pid = (linear % gx, (linear // gx) % gy, linear // (gx * gy))
            machine.env = dict(zip(handles.values(), values))
            machine.hooks.begin_program(machine.pid)
            args = [(_promote(tensor(handles[name])) if isinstance(t, TileType) else t)
                    for name, t in signature.items()]
            token = semantic.activate()
            try:
                jit_fn.fn(*args)
            finally:
                semantic.deactivate(token)
            machine.hooks.end_program(machine.pid)
        machine.hooks.end_launch()
    finally:
        _ACTIVE.pop()
