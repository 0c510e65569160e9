"""Random well-typed kernels as source text, for differential testing of the compiler against the interpreter.

A kernel is a short SSA-like program over tiles of one 2-D shape (R x C, powers of two): loads of
several dtypes under a tail mask, then random steps (elementwise arithmetic, comparisons and `where`,
casts, min/max, reductions broadcast back, cumsum, dot, `if` on the program id, `for` loops), then
stores of the last values. Every step keeps operands in one dtype (casting first), so the program
is well typed by construction. Everything must match bit for bit, math functions included (both
executors run jit.mathlib); `Kernel.ulp` keeps a per-output bound for tools that want one.

The choices come from a `Chooser`: `RandomChooser` (seeded, for the soak script) or a hypothesis
adapter (in the tests), so failing kernels shrink.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

FLOATS = ("float32", "float16", "bfloat16")
INTS = ("int32", "int8", "uint32", "int64")
DTYPES = FLOATS + INTS
NUMPY = {"float32": "float32", "float16": "float16", "bfloat16": "bfloat16", "int32": "int32", "int8": "int8",
         "uint32": "uint32", "int64": "int64"}
# the math functions a kernel may store (compiled and interpreted agree on them bit for bit)
MATH_FUNCTIONS = ("cos", "erf", "exp", "exp2", "log", "log2", "sin", "sqrt", "tanh")


class Chooser:
    def int(self, lo: int, hi: int) -> int:  # inclusive
        raise NotImplementedError

    def pick(self, options):
        return options[self.int(0, len(options) - 1)]

    def coin(self, p_percent: int = 50) -> bool:
        return self.int(0, 99) < p_percent


class RandomChooser(Chooser):
    def __init__(self, seed: int):
        self.rng = random.Random(seed)

    def int(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)


@dataclass
class Kernel:
    source: str
    inputs: list[str]  # dtype of each input buffer
    outputs: list[str]  # dtype of each output buffer
    ulp: list[int]  # per output: 0 = bit exact, else the ulp bound
    rows: int
    cols: int
    programs: int
    n: int  # valid elements (the rest are masked off)
    seed: int
    lines: list[str] = field(default_factory=list)


@dataclass
class _Var:
    name: str
    dtype: str


class _Gen:
    def __init__(self, ch: Chooser):
        self.ch = ch
        self.vars: list[_Var] = []
        self.body: list[str] = []
        self.count = 0
        self.indent = "    "

    def new(self, expr: str, dtype: str) -> _Var:
        v = _Var(f"v{self.count}", dtype)
        self.count += 1
        self.body.append(f"{self.indent}{v.name} = {expr}")
        self.vars.append(v)
        return v

    def pick_var(self, dtype: str | None = None) -> _Var:
        pool = [v for v in self.vars if dtype is None or v.dtype == dtype] or self.vars
        return pool[self.ch.int(max(0, len(pool) - 6), len(pool) - 1)]  # favour recent values

    def as_dtype(self, v: _Var, dtype: str) -> str:
        return v.name if v.dtype == dtype else f"{v.name}.to(tl.{dtype})"

    def literal(self, dtype: str) -> str:
        if dtype in FLOATS:
            return self.ch.pick(["0.5", "1.5", "-2.0", "3.0", "0.1", "-0.75"])
        return str(self.ch.pick([1, 2, 3, 7, -5, 13] if dtype != "uint32" else [1, 2, 3, 7, 13]))


def _step_binary(g: _Gen) -> None:
    a = g.pick_var()
    b = g.pick_var()
    dt = a.dtype
    if dt in FLOATS:
        op = g.ch.pick(["+", "-", "*", "/"])
    else:
        op = g.ch.pick(["+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>"])
    rhs = g.as_dtype(b, dt) if g.ch.coin(75) else f"tl.full([R, C], {g.literal(dt)}, tl.{dt})"
    if op in ("<<", ">>"):
        rhs = f"({rhs} & 31).to(tl.{dt})" if dt != "int8" else f"({rhs} & 7).to(tl.{dt})"
    g.new(f"({a.name} {op} {rhs}).to(tl.{dt})", dt)


def _step_where(g: _Gen) -> None:
    a, b, c = g.pick_var(), g.pick_var(), g.pick_var()
    pred = g.ch.pick(["<", "<=", ">", ">=", "==", "!="])
    g.new(f"tl.where({a.name} {pred} {g.as_dtype(b, a.dtype)}, {g.as_dtype(c, a.dtype)}, {a.name})", a.dtype)


def _step_cast(g: _Gen) -> None:
    a = g.pick_var()
    to = g.ch.pick(DTYPES)
    g.new(f"{a.name}.to(tl.{to})", to)


def _step_minmax(g: _Gen) -> None:
    a, b = g.pick_var(), g.pick_var()
    fn = g.ch.pick(["tl.minimum", "tl.maximum"])
    nan = ", propagate_nan=tl.PropagateNan.ALL" if a.dtype in FLOATS and g.ch.coin() else ""
    g.new(f"{fn}({a.name}, {g.as_dtype(b, a.dtype)}{nan})", a.dtype)


def _step_unary(g: _Gen) -> None:
    a = g.pick_var()
    if a.dtype in FLOATS:
        fn = g.ch.pick(["-{}", "tl.abs({})", "tl.floor({}.to(tl.float32))", "tl.ceil({}.to(tl.float32))",
                        "tl.fma({0}, {0}, {0})"])
    else:
        fn = g.ch.pick(["-{}", "~{}", "tl.abs({})"] if a.dtype != "uint32" else ["~{}"])
    g.new(f"({fn.format(a.name)}).to(tl.{a.dtype})", a.dtype)


def _step_reduce(g: _Gen) -> None:
    a = g.pick_var()
    axis = g.ch.int(0, 1)
    fn = g.ch.pick(["tl.sum", "tl.max", "tl.min"])
    index = "[None, :]" if axis == 0 else "[:, None]"
    if fn == "tl.sum" and a.dtype in ("float16", "bfloat16", "int8"):
        inner = f"{fn}({a.name}, axis={axis}).to(tl.{a.dtype})"
    else:
        inner = f"{fn}({a.name}, axis={axis})"
    g.new(f"tl.broadcast_to(({inner}){index}, (R, C)).to(tl.{a.dtype})", a.dtype)


def _step_scan(g: _Gen) -> None:
    a = g.pick_var()
    if a.dtype in ("int8", "float16", "bfloat16"):
        return
    axis = g.ch.int(0, 1)
    g.new(f"tl.cumsum({a.name}, axis={axis}).to(tl.{a.dtype})", a.dtype)


def _step_dot(g: _Gen) -> None:
    a, b = g.pick_var(), g.pick_var()
    dt = g.ch.pick(["float32", "float16", "bfloat16"])
    prec = g.ch.pick(["tf32", "ieee"]) if dt == "float32" else "ieee"
    g.new(f"tl.dot({g.as_dtype(a, dt)}, {g.as_dtype(b, dt)}, input_precision=\"{prec}\").to(tl.{dt})", dt)


def _step_if(g: _Gen) -> None:
    a = g.pick_var()
    b = g.pick_var()
    name = f"v{g.count}"
    g.count += 1
    g.body.append(f"{g.indent}if pid % 2 == {g.ch.int(0, 1)}:")
    g.body.append(f"{g.indent}    {name} = ({a.name} + {g.as_dtype(b, a.dtype)}).to(tl.{a.dtype})")
    g.body.append(f"{g.indent}else:")
    g.body.append(f"{g.indent}    {name} = ({a.name} * {g.as_dtype(b, a.dtype)}).to(tl.{a.dtype})")
    g.vars.append(_Var(name, a.dtype))


def _step_for(g: _Gen) -> None:
    a = g.pick_var()
    b = g.pick_var()
    name = f"v{g.count}"
    g.count += 1
    trips = g.ch.int(0, 3)
    g.body.append(f"{g.indent}{name} = {a.name}")
    g.body.append(f"{g.indent}for j in range({trips}):")
    op = g.ch.pick(["+", "-", "*"])
    g.body.append(f"{g.indent}    {name} = ({name} {op} {g.as_dtype(b, a.dtype)}).to(tl.{a.dtype})")
    g.vars.append(_Var(name, a.dtype))


STEPS = [(_step_binary, 30), (_step_where, 8), (_step_cast, 10), (_step_minmax, 6), (_step_unary, 8),
         (_step_reduce, 8), (_step_scan, 4), (_step_dot, 5), (_step_if, 5), (_step_for, 5)]


def generate(ch: Chooser, seed: int = 0, name: str = "fuzzed") -> Kernel:
    g = _Gen(ch)
    rows = ch.pick([1, 2, 4, 16])
    cols = ch.pick([1, 4, 8, 16, 32])
    if ch.coin(40):
        rows, cols = 16, 16  # dot needs both dims >= 16
    programs = ch.int(1, 3)
    total = rows * cols * programs
    n = ch.int(max(1, total - rows * cols + 1), total)
    n_inputs = ch.int(1, 4)
    inputs = [ch.pick(DTYPES) for _ in range(n_inputs)]
    params = [f"in{i}" for i in range(n_inputs)]
    head = ["    pid = tl.program_id(0)",
            "    offs = pid * R * C + tl.arange(0, R)[:, None] * C + tl.arange(0, C)[None, :]",
            "    mask = offs < n"]
    g.body.extend(head)
    for i, dt in enumerate(inputs):
        g.new(f"tl.load(in{i} + offs, mask=mask, other={g.literal(dt)})", dt)
    for _ in range(ch.int(1, 8)):
        total_w = sum(w for _, w in STEPS)
        r = ch.int(0, total_w - 1)
        for fn, w in STEPS:
            if r < w:
                if fn is _step_dot and (rows < 16 or cols != rows):
                    fn = _step_binary
                fn(g)
                break
            r -= w
    outputs, ulp = [], []
    for v in g.vars[-ch.int(1, 2):]:
        outputs.append(v.dtype)
        ulp.append(0)
        g.body.append(f"    tl.store(out{len(outputs) - 1} + offs, {v.name}, mask=mask)")
    if ch.coin(30):
        fn = ch.pick(MATH_FUNCTIONS)
        v = g.pick_var()
        dt = "float32" if v.dtype not in ("float32",) else v.dtype
        arg = g.as_dtype(v, dt)
        if fn in ("log", "log2", "sqrt"):
            arg = f"tl.abs({arg})"
        outputs.append(dt)
        ulp.append(0)
        g.body.append(f"    tl.store(out{len(outputs) - 1} + offs, tl.{fn}({arg}), mask=mask)")
    params += [f"out{i}" for i in range(len(outputs))]
    header = ["@jit", f"def {name}({', '.join(params)}, n, R: tl.constexpr, C: tl.constexpr):"]
    source = "\n".join(["import dsl as tl", "from jit import jit", "", ""] + header + g.body) + "\n"
    return Kernel(source, inputs, outputs, ulp, rows, cols, programs, n, seed)
