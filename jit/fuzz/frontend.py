"""Frontend robustness fuzzing: mutate valid kernels (their AST and their text) and compile the result.

Every mutated kernel that Python itself accepts must end in a `CompilationError` that names a source
line, or in IR that verifies (the frontend, verifier and passes run; LLVM does not, to keep inputs
cheap). Anything else (an internal exception, a CompilationError without a location) is a finding.
"""

from __future__ import annotations

import ast
import copy
import inspect
import linecache
import os
import random
import re
import signal
import tempfile
from collections import Counter
from dataclasses import dataclass, field

from dsl import dtypes as T
from dsl.errors import CompilationError
from dsl.frontend import compile_kernel, is_constexpr_annotation
from dsl.ir.core import TileType
from dsl.ir.verifier import verify

SEEDS: list[str] = [
    '''
@jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
''',
    '''
@jit
def softmax_kernel(out_ptr, in_ptr, stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * stride + offs, mask=offs < n_cols, other=-float("inf"))
    x = x - tl.max(x, axis=0)
    num = tl.exp(x)
    tl.store(out_ptr + row * stride + offs, num / tl.sum(num, axis=0), mask=offs < n_cols)
''',
    '''
@jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        ka = (k + rk)[None, :]
        kb = (k + rk)[:, None]
        a = tl.load(a_ptr + rm[:, None] * K + ka, mask=(rm[:, None] < M) & (ka < K), other=0.0)
        b = tl.load(b_ptr + kb * N + rn[None, :], mask=(kb < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))
''',
    '''
@jit
def _combine(a, b):
    return a + b * 2


@jit
def control_kernel(x_ptr, out_ptr, cnt_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=0.0)
    i = 0
    while i < 3:
        x = x * 1.5
        i += 1
    if pid % 2 == 0:
        x = tl.where(x > 0, x, -x)
    else:
        x = tl.minimum(x, 2.0)
    s = tl.reduce(x, 0, _combine)
    c = tl.cumsum(x, axis=0)
    for j in tl.static_range(2):
        x = x + j
    tl.atomic_add(cnt_ptr + 0, s)
    tl.store(out_ptr + offs, (x + c).to(tl.float32), mask=m)
''',
    '''
@jit
def cast_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    h = x.to(tl.float16)
    q = (x * 100).to(tl.int32)
    r = (q // 7) % 5 + (q >> 2) ^ (q & 3)
    v, idx = tl.max(x, axis=0, return_indices=True)
    y = tl.sort(x) + r.to(tl.float32) + h.to(tl.float32) + v + idx
    tl.device_assert(y == y, "nan")
    tl.store(out_ptr + offs, y, mask=m)
''',
]

CONSTEXPR_DEFAULT = 16
_NAMES = ["x", "offs", "mask", "pid", "tl", "n", "BLOCK", "acc", "k", "i", "j", "None", "out_ptr", "undefined_name"]
_EXPRS = ["0", "1", "-1", "3", "2**40", "1.5", "float('nan')", "'text'", "None", "True", "(1, 2)", "[1, 2]",
          "tl.arange(0, 3)", "tl.arange(0, 16)", "tl.zeros((16, 16), dtype=tl.float16)", "tl.program_id(5)",
          "tl.full([4], 1, tl.int8)", "x[None, :]", "x[:, None]", "tl.load(x_ptr)", "lambda: 1", "{1: 2}",
          "tl.float32", "tl.constexpr(3)", "tl.dot(x, x)", "tl.sum(x, axis=3)", "tl.reshape(x, (3, 5))",
          "x.to(tl.int1)", "x.to(tl.pointer_type(tl.float32))", "tl.static_range(4)", "tl.where(x, x, x)",
          "(yield)", "[i for i in range(3)]", "print", "tl", "tl.math", "x.shape", "x.dtype", "x.T",
          "tl.atomic_add(x, 1)", "tl.cat(x, x)", "tl.join(x, x)", "tl.split(x)", "tl.histogram(x, 4)",
          "tl.gather(x, x, 0)", "tl.max(x)", "tl.cdiv(x, 0)", "x // 0", "1 // 0", "x @ x", "not x", "-x",
          "x if x else x", "tl.static_assert(False)", "tl.device_print('p', x)", "x is None", "x in x"]
_STMTS = ["break", "continue", "return", "return x", "pass", "x = 1", "del x", "global x", "assert x",
          "raise ValueError()", "with x: pass", "try:\n    pass\nexcept Exception:\n    pass", "import os",
          "x, y = 1", "x += tl.arange(0, 8)", "async def f(): pass", "while True:\n    pass", "for q in x: pass",
          "if x: return 1", "tl.store(out_ptr, 1)", "x: tl.constexpr = 3", "nonlocal_name = undefined()",
          "def inner(a):\n    return a", "class C: pass", "x[0] = 1", "x.y = 1", "print(x)", "breakpoint()"]


@dataclass
class Outcome:
    counts: Counter = field(default_factory=Counter)
    internal: list[tuple[str, str]] = field(default_factory=list)  # (exception text, source)
    last_error: str = ""

    @property
    def inputs(self) -> int:
        return sum(v for k, v in self.counts.items() if k != "rejected by Python")


def _random_expr(rng: random.Random) -> ast.expr:
    return ast.parse(rng.choice(_EXPRS), mode="eval").body


def mutate_ast(source: str, rng: random.Random) -> str:
    """One to three random edits of the kernel's AST: replace an expression, an operator, a constant,
    a statement or a keyword; insert or delete a statement."""
    tree = ast.parse(source)
    for _ in range(rng.randint(1, 3)):
        nodes = [n for n in ast.walk(tree)]
        kind = rng.choice(["expr", "op", "const", "stmt", "insert", "delete", "keyword", "args"])
        if kind == "expr":
            exprs = [(p, f, n) for p in nodes for f, n in ast.iter_fields(p) if isinstance(n, ast.expr)]
            if exprs:
                parent, name, _ = rng.choice(exprs)
                setattr(parent, name, _random_expr(rng))
        elif kind == "op":
            ops = [n for n in nodes if isinstance(n, (ast.BinOp, ast.Compare, ast.UnaryOp, ast.AugAssign, ast.BoolOp))]
            if ops:
                node = rng.choice(ops)
                if isinstance(node, (ast.BinOp, ast.AugAssign)):
                    node.op = rng.choice([ast.Add(), ast.Sub(), ast.Mult(), ast.Div(), ast.FloorDiv(), ast.Mod(),
                                          ast.Pow(), ast.LShift(), ast.RShift(), ast.BitAnd(), ast.BitOr(),
                                          ast.BitXor(), ast.MatMult()])
                elif isinstance(node, ast.Compare):
                    node.ops = [rng.choice([ast.Lt(), ast.Eq(), ast.Is(), ast.In(), ast.NotIn(), ast.GtE()])
                                for _ in node.ops]
                elif isinstance(node, ast.UnaryOp):
                    node.op = rng.choice([ast.Not(), ast.Invert(), ast.USub(), ast.UAdd()])
                else:
                    node.op = rng.choice([ast.And(), ast.Or()])
        elif kind == "const":
            consts = [n for n in nodes if isinstance(n, ast.Constant)]
            if consts:
                rng.choice(consts).value = rng.choice([0, -1, 3, 7, 2**31, 2**64, 1.5, -0.0, "s", None, True, 1e300])
        elif kind in ("stmt", "insert", "delete"):
            inner = [n for n in nodes if not isinstance(n, ast.Module)]  # module-level code is not a kernel
            bodies = [n.body for n in inner if isinstance(getattr(n, "body", None), list) and n.body] + \
                     [n.orelse for n in inner if isinstance(getattr(n, "orelse", None), list) and n.orelse]
            if bodies:
                body = rng.choice(bodies)
                pos = rng.randrange(len(body))
                new = ast.parse(rng.choice(_STMTS)).body
                if kind == "stmt":
                    body[pos:pos + 1] = new
                elif kind == "insert":
                    body[pos:pos] = new
                elif len(body) > 1:
                    del body[pos]
        elif kind == "keyword":
            calls = [n for n in nodes if isinstance(n, ast.Call) and n.keywords]
            if calls:
                kw = rng.choice(rng.choice(calls).keywords)
                kw.arg = rng.choice(["mask", "other", "axis", "dtype", "bogus", "input_precision", "keep_dims"])
        else:
            calls = [n for n in nodes if isinstance(n, ast.Call)]
            if calls:
                call = rng.choice(calls)
                if call.args and rng.random() < 0.5:
                    del call.args[rng.randrange(len(call.args))]
                else:
                    call.args.append(_random_expr(rng))
    ast.fix_missing_locations(tree)
    return ast.unparse(tree)


def mutate_text(source: str, rng: random.Random) -> str:
    """Edits of the text: delete, duplicate or swap lines, delete or insert characters and tokens."""
    lines = source.split("\n")
    kind = rng.choice(["del_line", "dup_line", "swap", "del_char", "ins_token", "replace_name"])
    body = [i for i, line in enumerate(lines) if line.startswith("    ")]
    if not body:
        return source
    i = rng.choice(body)
    if kind == "del_line":
        del lines[i]
    elif kind == "dup_line":
        lines.insert(i, lines[i])
    elif kind == "swap":
        j = rng.choice(body)
        lines[i], lines[j] = lines[j], lines[i]
    elif kind == "del_char" and lines[i].strip():
        k = rng.randrange(4, len(lines[i])) if len(lines[i]) > 4 else 0
        lines[i] = lines[i][:k] + lines[i][k + 1:]
    elif kind == "ins_token":
        k = rng.randrange(4, len(lines[i]) + 1) if len(lines[i]) > 4 else len(lines[i])
        lines[i] = lines[i][:k] + rng.choice([" + 1", "[0]", ".T", " * x", "(", ")", ",", " 0", ".to(tl.int8)",
                                              "[:, None]", " if x else 0", ", axis=0"]) + lines[i][k:]
    else:
        names = [n for n in _NAMES if n in lines[i]]
        if names:
            lines[i] = lines[i].replace(rng.choice(names), rng.choice(_NAMES), 1)
    return "\n".join(lines)


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


_DIR = tempfile.mkdtemp(prefix="wavetile_frontend_fuzz_")


def _signature(fn) -> dict:
    sig = {}
    for p in inspect.signature(fn.fn).parameters.values():
        if is_constexpr_annotation(p.annotation):
            sig[p.name] = CONSTEXPR_DEFAULT
        elif p.name.endswith("ptr") or p.name.startswith(("in", "out", "x", "y")):
            sig[p.name] = TileType(T.pointer_type(T.float32))
        else:
            sig[p.name] = TileType(T.int32)
    return sig


def compile_one(source: str, index: int, outcome: Outcome, timeout_s: int = 5) -> None:
    """Compile the kernel (the last @jit function) in `source` and record what happened."""
    path = os.path.join(_DIR, f"m{index}.py")
    text = "import dsl as tl\nfrom jit import jit\n" + source + "\n"
    try:
        code = compile(text, path, "exec")
    except (SyntaxError, ValueError):
        outcome.counts["rejected by Python"] += 1
        return
    with open(path, "w") as f:
        f.write(text)
    linecache.checkcache(path)
    namespace: dict = {"__name__": f"_fuzz_{index}"}
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(timeout_s)
    try:
        try:
            exec(code, namespace)
            fn = [v for v in namespace.values() if getattr(v, "is_wavetile_jit", False)][-1]
            signature = _signature(fn)
        except Exception:
            outcome.counts["rejected by Python"] += 1
            return
        from jit.passes import run_passes

        func = compile_kernel(fn, signature)
        verify(func)
        run_passes(func)
        verify(func)
        outcome.counts["compiled"] += 1
    except CompilationError as e:
        cause = internal_cause(e)
        if cause:
            outcome.counts["internal: located CompilationError hiding " + cause.split(":")[0]] += 1
            outcome.internal.append((cause + "\n" + str(e), source))
        elif e.line > 0:
            outcome.counts["CompilationError with a location"] += 1
            outcome.last_error = e.reason
        else:
            outcome.counts["internal: CompilationError without a location"] += 1
            outcome.internal.append((str(e), source))
    except _Timeout:
        outcome.counts["timeout"] += 1
    except RecursionError as e:
        outcome.counts["internal: RecursionError"] += 1
        outcome.internal.append((repr(e), source))
    except Exception as e:
        outcome.counts[f"internal: {type(e).__name__}"] += 1
        outcome.internal.append((f"{type(e).__name__}: {e}", source))
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        os.unlink(path)


_PACKAGES = tuple(os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), p)
                  + os.sep for p in ("dsl", "jit"))
_INTERNAL = (AttributeError, KeyError, IndexError, AssertionError, UnboundLocalError, NotImplementedError, TypeError,
             StopIteration, RuntimeError)


_BINDING = re.compile(r"unexpected keyword argument|missing \d+ required|takes (from )?\d+ (to \d+ )?positional|"
                      r"got multiple values for argument|positional arguments? but")


_INTERNAL_NAMES = re.compile(r"'(Value|Operation|Block|Builder|Semantic|TileType|FunctionCompiler|ParsedSource)'")


def internal_cause(error: CompilationError) -> str | None:
    """The frontend turns every exception into a located CompilationError; this digs out the original one
    and calls it internal when the compiler's own code failed (not at an explicit `raise`)."""
    original = error.__context__
    while isinstance(original, CompilationError) and original.__context__ is not None:
        original = original.__context__
    if original is None or isinstance(original, CompilationError) or not isinstance(original, _INTERNAL):
        return None
    if isinstance(original, TypeError) and _BINDING.search(str(original)):
        return None  # the user called a language function with wrong arguments: Python's own message
    tb = original.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return None
    filename = tb.tb_frame.f_code.co_filename
    line = linecache.getline(filename, tb.tb_lineno).strip()
    if not filename.startswith(_PACKAGES) or line.startswith("raise"):
        return None
    user_python = (os.path.join("dsl", "frontend.py"), os.path.join("dsl", "core.py"))  # evaluate user values
    if filename.endswith(user_python) and not _INTERNAL_NAMES.search(str(original)):
        return None  # the frontend evaluating the user's own Python (getattr, calls, indexing) failed
    where = f"{os.path.relpath(filename, os.path.dirname(_PACKAGES[0]))}:{tb.tb_lineno}"
    return f"{type(original).__name__}: {original} at {where}: {line}"


def fuzz(count: int, seed: int = 0, outcome: Outcome | None = None) -> Outcome:
    """Compile `count` mutated kernels (the ones Python itself rejects are not counted)."""
    outcome = outcome or Outcome()
    rng = random.Random(seed)
    index = 0
    while outcome.inputs < count:
        base = rng.choice(SEEDS)
        mutated = mutate_ast(base, rng) if rng.random() < 0.6 else mutate_text(base, rng)
        if rng.random() < 0.3:
            try:
                mutated = mutate_ast(mutated, rng)
            except SyntaxError:
                pass
        compile_one(mutated, seed * 1_000_000 + index, outcome)
        index += 1
    return outcome


def copy_tree(tree: ast.AST) -> ast.AST:
    return copy.deepcopy(tree)
