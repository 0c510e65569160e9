"""The Python-ast frontend: walks a @jit function's syntax tree and emits typed tile IR.

Compile-time values (constexpr parameters, Python literals, dtypes, modules) are ordinary Python
objects that fold as the walk goes; tensors are IR values. Control flow on compile-time
conditions folds away; on run-time scalars it becomes scf.if / scf.for / scf.while, whose carried
values are the names the body assigns. Nested @jit calls are inlined. Every error is re-raised as a
CompilationError pointing at the user's line.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import linecache
import operator as _op
import os
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType

from dsl import dtypes as T
from dsl import language
from dsl.aggregate import BoundJitMethod, home_block, is_aggregate
from dsl.control_flow import ControlFlow, contains_return
from dsl.core import constexpr, tensor, unwrap
from dsl.errors import CompilationError, UnsupportedLanguageConstruct
from dsl.ir.builder import Builder
from dsl.ir.core import Block, Function, Loc, TileType
from dsl.semantic import Semantic
from dsl.types import const


@dataclass
class ParsedSource:
    """A jit function's source, parsed once: the def node and where it sits in its file."""

    tree: ast.FunctionDef
    lines: list[str]
    first_line: int  # file line of the source's first line
    file: str
    name: str

    @staticmethod
    def of(fn) -> ParsedSource:
        try:
            lines, first = _source_lines(fn)
        except (OSError, TypeError) as e:
            raise CompilationError(f"cannot read the source of {fn.__name__}: @jit functions must be "
                                   f"defined in a Python file ({e})") from None
        return ParsedSource.from_lines(lines, first, inspect.getsourcefile(fn) or "<unknown>", fn.__name__)

    @staticmethod
    def from_lines(lines: list[str], first: int, file: str, name: str) -> ParsedSource:
        """Parse source lines (decorators and def) that start at file line `first`."""
        module = ast.parse(textwrap.dedent("".join(lines)))
        tree = next(n for n in module.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        indent = len(lines[0]) - len(lines[0].lstrip())
        ast.increment_lineno(tree, first - 1)
        for node in ast.walk(tree):
            if hasattr(node, "col_offset"):
                node.col_offset += indent
        return ParsedSource(tree, [line.rstrip("\n") for line in lines], first, file, name)


def _source_lines(fn) -> tuple[list[str], int]:
    """The function's lines, decorators included, and the file line of the first. The block is cut where
    the indentation returns to the def's and checked by parsing it; inspect.getsourcelines (the fallback)
    tokenizes, and building tokenize's patterns costs a fresh process ~10 ms before its first launch, even
    when the kernel then comes from the disk cache."""
    file = inspect.getsourcefile(fn)
    code = getattr(fn, "__code__", None)
    if file and code is not None and os.path.exists(file):
        linecache.checkcache(file)  # re-read an edited file, as inspect does
        lines = linecache.getlines(file)
        block = _indented_block(lines, code.co_firstlineno - 1)
        if block and _defines(block, fn.__name__):
            return block, code.co_firstlineno
    return inspect.getsourcelines(fn)


def _indented_block(lines: list[str], start: int) -> list[str]:
    """Lines from `start` (decorators, then the def) to the last one indented deeper than the def."""
    def_line = next((i for i in range(start, len(lines)) if lines[i].lstrip().startswith(("def ", "async def "))),
                    None)
    if not 0 <= start < len(lines) or def_line is None:
        return []
    indent = len(lines[def_line]) - len(lines[def_line].lstrip())
    end = def_line + 1
    for i in range(def_line + 1, len(lines)):
        text = lines[i].strip()
        if text and not text.startswith("#"):
            if len(lines[i]) - len(lines[i].lstrip()) <= indent:
                break
            end = i + 1
    return lines[start:end]


def _defines(block: list[str], name: str) -> bool:
    try:
        body = ast.parse(textwrap.dedent("".join(block))).body
    except SyntaxError:
        return False
    return len(body) == 1 and isinstance(body[0], (ast.FunctionDef, ast.AsyncFunctionDef)) and body[0].name == name


# Python builtins that only look at a value, so kernels may apply them to tensors (as Triton allows)
_INTROSPECTION_BUILTINS = (builtins.isinstance, builtins.hasattr, builtins.getattr, builtins.type)


def _is_tensor_attribute(name: str) -> bool:
    return name in language.MEMBERS or isinstance(getattr(tensor, name, None), (property, type(_is_tensor_attribute)))


def is_constexpr_annotation(annotation) -> bool:
    if annotation is inspect.Parameter.empty:
        return False
    if annotation is constexpr or isinstance(annotation, constexpr):
        return True
    return isinstance(annotation, str) and annotation.split(".")[-1] == "constexpr"


def compile_kernel(jit_fn, signature: dict[str, TileType | object]) -> Function:
    """Build the IR of a kernel. `signature` maps each parameter to a TileType (runtime) or a constexpr value."""
    runtime = [(name, _const_qualified(jit_fn, name, t)) for name, t in signature.items() if isinstance(t, TileType)]
    body = Block()
    args = {name: tensor(body.add_arg(t, name)) for name, t in runtime}
    builder = Builder(body)
    source = jit_fn.parsed
    func = Function(source.name, [name for name, _ in runtime], body, source.file)
    compiler = FunctionCompiler(jit_fn, builder)
    scope = {name: (args[name] if isinstance(t, TileType) else t) for name, t in signature.items()}
    compiler.run(scope)
    return func


def _const_qualified(jit_fn, name: str, t: TileType) -> TileType:
    """A pointer parameter annotated `tl.const` gets a const pointer type, so a store through it is refused."""
    param = inspect.signature(jit_fn.fn).parameters.get(name)
    annotation = param.annotation if param is not None else None
    is_const = annotation is const or (isinstance(annotation, str) and annotation.split(".")[-1] == "const")
    if not is_const or not t.dtype.is_ptr():
        return t
    return TileType(T.pointer_type(t.dtype.element_ty, t.dtype.address_space, const=True), t.shape)


class FunctionCompiler(ControlFlow, ast.NodeVisitor):
    """Compiles the body of one jit function into the builder's current block (kernels and inlined callees)."""

    def __init__(self, jit_fn, builder: Builder, semantic: Semantic | None = None, kernel_name: str | None = None):
        self.jit_fn = jit_fn
        self.src: ParsedSource = jit_fn.parsed
        self.builder = builder
        self.semantic = semantic or Semantic(builder, call_jit=self.call_jit)
        self.kernel_name = kernel_name or self.src.name
        self.globals = jit_fn.fn.__globals__
        closure = inspect.getclosurevars(jit_fn.fn).nonlocals if jit_fn.fn.__closure__ else {}
        self.closure = closure
        self.scope: dict[str, object] = {}
        self.inlining = [jit_fn]  # the calls being inlined (the semantic's call_jit is the kernel's compiler's)

    # -- entry points
    def run(self, scope: dict[str, object]):
        """Compile the body with `scope` bound to the parameters; returns the returned value."""
        token = self.semantic.activate()
        try:
            self.scope = dict(scope)
            return self.visit_body(self.src.tree.body)
        finally:
            self.semantic.deactivate(token)

    def call_jit(self, jit_fn, args: Sequence, kwargs: dict | None = None):
        """Inline a @jit function call; returns its value (tuples allowed)."""
        sig = inspect.signature(jit_fn.fn)
        try:
            bound = sig.bind(*args, **(kwargs or {}))
        except TypeError as e:
            raise TypeError(f"bad arguments for {jit_fn.fn.__name__}: {e}") from None
        bound.apply_defaults()
        scope = {}
        for name, value in bound.arguments.items():
            param = sig.parameters[name]
            if is_constexpr_annotation(param.annotation) and isinstance(value, tensor):
                raise TypeError(f"argument {name!r} of {jit_fn.fn.__name__} is a tl.constexpr; "
                                "it cannot take a tensor")
            scope[name] = unwrap(value)
        if jit_fn in self.inlining:
            chain = " -> ".join(f.fn.__name__ for f in [*self.inlining[self.inlining.index(jit_fn):], jit_fn])
            raise TypeError(f"{jit_fn.fn.__name__} calls itself ({chain}); @jit functions are inlined, so they "
                            "cannot recurse")
        callee = FunctionCompiler(jit_fn, self.builder, self.semantic, self.kernel_name)
        saved = self.builder.loc
        self.inlining.append(jit_fn)
        try:
            callee.scope = scope
            return callee.visit_body(callee.src.tree.body)
        finally:
            self.inlining.pop()
            self.builder.loc = saved

    # -- errors
    def error(self, node: ast.AST, reason: str, cls=CompilationError) -> CompilationError:
        line = getattr(node, "lineno", self.src.first_line)
        return cls(reason, file=self.src.file, line=line, col=getattr(node, "col_offset", 0),
                   source_lines=self.src.lines, first_line=self.src.first_line, kernel=self.kernel_name)

    def visit(self, node: ast.AST):
        if hasattr(node, "lineno"):
            self.builder.loc = Loc(node.lineno, node.col_offset)
        try:
            return super().visit(node)
        except CompilationError as e:
            if e.line:
                raise
            raise self.error(node, e.reason, type(e)) from e.__cause__
        except RecursionError:
            raise self.error(node, "the kernel is nested too deeply to compile") from None
        except Exception as e:  # every other failure becomes a located compile error
            reason = str(e) or type(e).__name__
            if isinstance(e, NameError | AttributeError | TypeError | ValueError | IndexError | KeyError):
                reason = f"{type(e).__name__}: {reason}" if not str(e).startswith(type(e).__name__) else reason
            raise self.error(node, reason) from e  # chained, as Triton does: tests read __cause__

    def generic_visit(self, node: ast.AST):
        raise self.error(node, f"unsupported syntax in a kernel: {type(node).__name__}",
                         UnsupportedLanguageConstruct)

    # -- statements
    def visit_body(self, stmts: Sequence[ast.stmt]):
        """Run statements in order; returns the function's return value (None if it falls off the end)."""
        for i, stmt in enumerate(stmts):
            if isinstance(stmt, ast.Return):
                return self.visit_return(stmt)
            if isinstance(stmt, ast.If) and contains_return(stmt):
                return self.visit_if_returning(stmt, stmts[i + 1:])
            self.visit(stmt)
        return None

    def visit_return(self, node: ast.Return):
        self.builder.loc = Loc(node.lineno, node.col_offset)
        return None if node.value is None else self.visit(node.value)

    def visit_Pass(self, node):
        return None

    def visit_Expr(self, node):
        if isinstance(node.value, ast.IfExp):  # `f() if c else g()` as a statement: one side runs, as in Triton
            value = node.value
            branch = ast.If(test=value.test, body=[ast.Expr(value.body)], orelse=[ast.Expr(value.orelse)])
            self.visit(ast.copy_location(branch, node))
            return
        self.visit(node.value)

    def visit_Assign(self, node: ast.Assign):
        if len(node.targets) != 1:
            raise self.error(node, "only one target per assignment is supported (a = b = c is not)")
        self.assign(node.targets[0], self.visit(node.value))

    def visit_AnnAssign(self, node: ast.AnnAssign):
        if node.value is None:
            return
        value = self.visit(node.value)
        annotation = self.visit(node.annotation)
        if annotation is constexpr and isinstance(value, tensor):
            raise self.error(node, f"{ast.unparse(node.target)} is annotated tl.constexpr but its value "
                                   "is only known at run time")
        if isinstance(annotation, T.dtype) and not isinstance(annotation, type):
            value = self.semantic.cast(value, annotation)
        self.assign(node.target, value)

    def visit_AugAssign(self, node: ast.AugAssign):
        if not isinstance(node.target, ast.Name):
            raise self.error(node, "augmented assignment to an attribute or item is not supported")
        current = self.lookup(node.target.id, node.target)
        self.assign(node.target, self.apply_binop(node.op, current, self.visit(node.value)))

    def assign(self, target: ast.AST, value) -> None:
        if isinstance(target, ast.Name):
            self.scope[target.id] = unwrap(value) if isinstance(value, constexpr) else value
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, tensor) or not isinstance(value, (tuple, list)):
                raise self.error(target, f"cannot unpack {type(value).__name__} into {len(target.elts)} names")
            if len(value) != len(target.elts):
                raise self.error(target, f"cannot unpack {len(value)} values into {len(target.elts)} names")
            for t, v in zip(target.elts, value):
                self.assign(t, v)
        elif isinstance(target, (ast.Attribute, ast.Subscript)) and is_aggregate(obj := self.visit(target.value)):
            home = home_block(obj)
            field = target.attr if isinstance(target, ast.Attribute) else ast.unparse(target.slice)
            if home is not None and home is not self.builder.block:
                raise self.error(target, f"{type(obj).__name__} field {field} is assigned inside run-time control "
                                         "flow (if / for / while) but the object was made outside it; make a new "
                                         f"one instead (x = tl.aggregate_replace(x, {field}=...))")
            if isinstance(target, ast.Attribute):
                setattr(obj, target.attr, value)
            else:
                obj[self.visit(target.slice)] = value  # the class's own __setitem__
        else:
            raise self.error(target, "only names and tuples can be assigned to in a kernel "
                                     "(no item or attribute assignment)")

    def visit_Assert(self, node: ast.Assert):
        cond = self.visit(node.test)
        msg = "" if node.msg is None else self.visit(node.msg)
        msg = str(unwrap(msg)) if not isinstance(msg, tensor) else ""
        if isinstance(cond, tensor):
            language.device_assert(cond, msg or ast.unparse(node.test))
        elif not cond:
            raise self.error(node, f"assertion failed at compile time: {msg or ast.unparse(node.test)}")

    # -- expressions
    def visit_Constant(self, node: ast.Constant):
        return node.value

    def visit_Name(self, node: ast.Name):
        return self.lookup(node.id, node)

    def lookup(self, name: str, node: ast.AST):
        if name in self.scope:
            return self.scope[name]
        if name in self.closure:
            return self.check_global(name, self.closure[name], node)
        if name in self.globals:
            return self.check_global(name, self.globals[name], node)
        if name in _BUILTINS:
            return _BUILTINS[name]
        raise NameError(f"{name!r} is not defined")

    def check_global(self, name: str, value, node: ast.AST):
        if isinstance(value, constexpr):
            return value.value
        if isinstance(value, (ModuleType, type, T.dtype)) or callable(value) or value is None:
            return value
        raise NameError(f"cannot read global {name!r} ({type(value).__name__}) from inside a kernel: kernels may "
                        f"only use globals created as tl.constexpr (e.g. {name} = tl.constexpr({value!r}))")

    def visit_Attribute(self, node: ast.Attribute):
        base = self.visit(node.value)
        if isinstance(base, (bool, int, float)) and not hasattr(base, node.attr) and _is_tensor_attribute(node.attr):
            base = self.semantic.to_tensor(base)  # `acc = 0; acc.to(tl.int64)`, `value.dtype`: as Triton does
        try:
            return unwrap(getattr(base, node.attr))
        except AttributeError:
            if isinstance(base, ModuleType):
                raise AttributeError(f"module {base.__name__!r} has no attribute {node.attr!r}"
                                     + (" (not a triton.language name wavetile knows)"
                                        if base.__name__.startswith("dsl") else "")) from None
            raise

    def visit_Tuple(self, node: ast.Tuple):
        return tuple(self.visit(e) for e in node.elts)

    def visit_List(self, node: ast.List):
        return [self.visit(e) for e in node.elts]

    def visit_Slice(self, node: ast.Slice):
        parts = [None if p is None else self.visit(p) for p in (node.lower, node.upper, node.step)]
        return slice(*parts)

    def visit_Subscript(self, node: ast.Subscript):
        base = self.visit(node.value)
        index = self.visit(node.slice)
        if isinstance(base, tensor):
            return self.semantic.subscript(base, index)
        if isinstance(index, tensor):
            raise TypeError("a tuple or list cannot be indexed with a run-time value")
        return base[index]

    def visit_BinOp(self, node: ast.BinOp):
        return self.apply_binop(node.op, self.visit(node.left), self.visit(node.right))

    def apply_binop(self, op: ast.operator, lhs, rhs):
        fn = _BINOPS.get(type(op))
        if fn is None:
            raise TypeError(f"operator {type(op).__name__} is not supported in a kernel")
        if isinstance(op, ast.MatMult):
            return language.dot(lhs, rhs)
        if not isinstance(lhs, tensor) and not isinstance(rhs, tensor):
            return fn(lhs, rhs)  # compile-time arithmetic, Python semantics
        return fn(lhs if isinstance(lhs, tensor) else lhs, rhs)

    def visit_UnaryOp(self, node: ast.UnaryOp):
        value = self.visit(node.operand)
        if isinstance(node.op, ast.Not):
            return self.semantic.logical_not(value) if isinstance(value, tensor) else not value
        if isinstance(node.op, ast.USub):
            return -value
        if isinstance(node.op, ast.UAdd):
            return +value
        return ~value

    def visit_BoolOp(self, node: ast.BoolOp):
        is_and = isinstance(node.op, ast.And)
        result = self.visit(node.values[0])
        for expr in node.values[1:]:
            if not isinstance(result, tensor):
                if bool(result) != is_and:  # short-circuit at compile time
                    return result
                result = self.visit(expr)
                continue
            rhs = self.visit(expr)
            result = self.semantic.logical("and" if is_and else "or", result, rhs)
        return result

    def visit_Compare(self, node: ast.Compare):
        if len(node.ops) != 1:
            raise self.error(node, "chained comparisons (a < b < c) are not supported in a kernel",
                             UnsupportedLanguageConstruct)
        lhs, rhs = self.visit(node.left), self.visit(node.comparators[0])
        op = node.ops[0]
        if isinstance(op, (ast.Is, ast.IsNot, ast.In, ast.NotIn)):
            if isinstance(lhs, tensor) or isinstance(rhs, tensor):
                if isinstance(op, (ast.Is, ast.IsNot)) and (lhs is None or rhs is None):
                    return isinstance(op, ast.IsNot)
                raise TypeError(f"`{type(op).__name__}` compares compile-time values only")
            return _COMPARES[type(op)](lhs, rhs)
        if not isinstance(lhs, tensor) and not isinstance(rhs, tensor):
            return _COMPARES[type(op)](lhs, rhs)
        pred = {ast.Lt: "lt", ast.LtE: "le", ast.Gt: "gt", ast.GtE: "ge", ast.Eq: "eq", ast.NotEq: "ne"}[type(op)]
        return self.semantic.compare(pred, lhs, rhs)

    def visit_IfExp(self, node: ast.IfExp):
        cond = self.visit(node.test)
        if not isinstance(cond, tensor):
            return self.visit(node.body if cond else node.orelse)
        return self.semantic.where(cond, self.visit(node.body), self.visit(node.orelse))

    def visit_JoinedStr(self, node: ast.JoinedStr):
        parts = []
        for value in node.values:
            v = self.visit(value)
            if isinstance(v, tensor):
                raise TypeError("an f-string in a kernel can only format compile-time values")
            parts.append(str(v))
        return "".join(parts)

    def visit_FormattedValue(self, node: ast.FormattedValue):
        value = self.visit(node.value)
        if isinstance(value, tensor):
            return value
        spec = "" if node.format_spec is None else self.visit(node.format_spec)
        return format(value, spec)

    def visit_Call(self, node: ast.Call):
        fn = self.visit(node.func)
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.extend(self.visit(a.value))
            else:
                args.append(self.visit(a))
        kwargs = {}
        for k in node.keywords:
            if k.arg is None:
                kwargs.update(self.visit(k.value))
            else:
                kwargs[k.arg] = self.visit(k.value)
        return self.call(fn, args, kwargs, node)

    def call(self, fn, args, kwargs, node):
        if getattr(fn, "is_wavetile_jit", False):
            return self.call_jit(fn, args, kwargs)
        if isinstance(fn, BoundJitMethod):
            return self.call_jit(fn.function, [fn.instance, *args], kwargs)
        if inspect.ismethod(fn) and is_aggregate(fn.__self__):
            return fn(*args, **kwargs)  # a plain (builtin-style) method of an aggregate
        if fn is builtins.print:
            prefix = " ".join(str(a) for a in args if not isinstance(a, tensor))
            return language.device_print(prefix, *[a for a in args if isinstance(a, tensor)])
        if fn in (builtins.min, builtins.max) and any(isinstance(a, tensor) for a in args):
            combine = language.minimum if fn is builtins.min else language.maximum
            result = args[0]
            for a in args[1:]:
                result = combine(result, a)
            return result
        if fn is builtins.abs and args and isinstance(args[0], tensor):
            return language.abs(args[0])
        if _is_language_callable(fn) or isinstance(fn, type) or fn in _INTROSPECTION_BUILTINS:
            return fn(*args, **kwargs)
        if any(isinstance(a, tensor) for a in (*args, *kwargs.values())):
            name = getattr(fn, "__name__", repr(fn))
            raise TypeError(f"{name} is not a @jit function or a triton.language builtin, so it cannot "
                            "take tensors; decorate it with @jit")
        return fn(*args, **kwargs)  # a compile-time (constexpr) function

    def visit_Lambda(self, node):
        raise self.error(node, "lambda is not supported in a kernel; define a @jit function",
                         UnsupportedLanguageConstruct)

    def visit_With(self, node):
        raise self.error(node, "with is not supported in a kernel", UnsupportedLanguageConstruct)

    def visit_FunctionDef(self, node):
        raise self.error(node, "functions cannot be defined inside a kernel; define a @jit function at "
                               "module level", UnsupportedLanguageConstruct)


def _is_language_callable(fn) -> bool:
    module = getattr(fn, "__module__", "") or ""
    if module == "dsl" or module.startswith("dsl."):
        return True
    owner = getattr(fn, "__self__", None)
    return isinstance(owner, tensor)



_BINOPS = {ast.Add: _op.add, ast.Sub: _op.sub, ast.Mult: _op.mul, ast.Div: _op.truediv,
           ast.FloorDiv: _op.floordiv, ast.Mod: _op.mod, ast.Pow: _op.pow, ast.LShift: _op.lshift,
           ast.RShift: _op.rshift, ast.BitAnd: _op.and_, ast.BitOr: _op.or_, ast.BitXor: _op.xor,
           ast.MatMult: _op.matmul}
_COMPARES = {ast.Lt: _op.lt, ast.LtE: _op.le, ast.Gt: _op.gt, ast.GtE: _op.ge, ast.Eq: _op.eq,
             ast.NotEq: _op.ne, ast.Is: _op.is_, ast.IsNot: _op.is_not, ast.In: lambda a, b: a in b,
             ast.NotIn: lambda a, b: a not in b}
_BUILTINS = {name: getattr(builtins, name) for name in
             ("range", "len", "min", "max", "abs", "int", "float", "bool", "str", "tuple", "list", "isinstance",
              "getattr", "hasattr", "print", "enumerate", "zip", "reversed", "sum", "any", "all", "round",
              "divmod", "pow", "type", "ValueError", "TypeError", "AssertionError")}
_BUILTINS["range"] = language.range
