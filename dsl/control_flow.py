"""Run-time control flow for the frontend: if / for / while become scf ops with carried values.

Kept apart from the expression visitor in dsl/frontend.py: this is where compile-time and run-time
values meet (a branch may leave a constant or a tensor behind; a loop carries whatever its body
rebinds), so the rules for merging and carrying them live in one place.
"""

from __future__ import annotations

import ast
import builtins
import warnings
from collections.abc import Sequence

from dsl import dtypes as T
from dsl import language
from dsl.core import tensor, unwrap
from dsl.errors import UnsupportedLanguageConstruct
from dsl.ir.core import Block, Loc, TileType
from dsl.ir.ops import OP

_UNSET = object()


class ControlFlow:
    """Mixin of FunctionCompiler: needs its builder, semantic, scope, visit, visit_body, assign and error."""

    def visit_If(self, node: ast.If):
        cond = self.visit(node.test)
        if not isinstance(cond, tensor):
            self.visit_body(node.body if cond else node.orelse)
            return
        cond = self.condition(cond, node.test)
        before = dict(self.scope)
        then_block, then_scope, _ = self.branch(node.body, before)
        else_block, else_scope, _ = self.branch(node.orelse, before)
        names = [n for n in then_scope if n in else_scope and
                 (then_scope[n] is not before.get(n, _UNSET) or else_scope[n] is not before.get(n, _UNSET))]
        merged = self.merge_if(cond, then_block, then_scope, else_block, else_scope, names, node)
        self.scope = {n: v for n, v in before.items()}
        self.scope.update(merged)

    def visit_if_returning(self, node: ast.If, rest: Sequence[ast.stmt]):
        """An `if` with a `return` inside: the statements after it join the branches that don't return."""
        then_body = list(node.body) if _always_returns(node.body) else list(node.body) + list(rest)
        else_body = list(node.orelse) if _always_returns(node.orelse) else list(node.orelse) + list(rest)
        cond = self.visit(node.test)
        if not isinstance(cond, tensor):
            return self.visit_body(then_body if cond else else_body)
        cond = self.condition(cond, node.test)
        before = dict(self.scope)
        then_block, _, then_ret = self.branch(then_body, before)
        else_block, _, else_ret = self.branch(else_body, before)
        then_vals, else_vals = _as_tuple(then_ret), _as_tuple(else_ret)
        if then_ret is None and else_ret is None:
            self.finish_if(cond, then_block, [], else_block, [], node)
            return None
        if len(then_vals) != len(else_vals):
            raise self.error(node, "the branches of this if return different numbers of values")
        names = [f"#ret{i}" for i in range(len(then_vals))]
        merged = self.merge_if(cond, then_block, dict(zip(names, then_vals)), else_block,
                               dict(zip(names, else_vals)), names, node)
        values = tuple(merged[n] for n in names)
        return values if isinstance(then_ret, tuple) else values[0]

    def condition(self, cond: tensor, node: ast.AST) -> tensor:
        """A scalar condition; a one-element block is unsplatted with a warning, as Triton does."""
        if cond.shape and cond.numel == 1:
            warnings.warn_explicit(f"If conditional called with multidimensional Tensor instead of scalar; please "
                                   f"use \"if ({ast.unparse(node)}).item()\" instead", UserWarning, self.src.file,
                                   getattr(node, "lineno", self.src.first_line))
            cond = self.semantic.reshape(cond, ())
        if cond.shape:
            raise self.error(node, "the truth value of a block with more than one element is ambiguous; "
                                   "an `if` needs a scalar condition (use tl.where for blocks)")
        return self.semantic.truthy(cond)

    def branch(self, stmts: Sequence[ast.stmt], before: dict) -> tuple[Block, dict, object]:
        block = Block()
        self.scope = dict(before)
        with self.builder.at(block):
            ret = self.visit_body(stmts)
        return block, self.scope, ret

    def merge_if(self, cond, then_block, then_scope, else_block, else_scope, names, node) -> dict:
        """Values that differ between branches become results of scf.if."""
        merged, result_names, then_vals, else_vals, structured = {}, [], [], [], []
        for n in names:
            a, b = then_scope[n], else_scope[n]
            if not isinstance(a, tensor) and not isinstance(b, tensor):
                if a is b or (type(a) is type(b) and _same_constant(a, b)):
                    merged[n] = a
                    continue
            if any(hasattr(v, "flatten") and not isinstance(v, tensor) for v in (a, b)):  # aggregates
                if type(a) is not type(b):
                    kind = type(a if hasattr(a, "flatten") and not isinstance(a, tensor) else b).__name__
                    raise self.error(node, f"{n.lstrip('#')} is a {kind} in one branch and a different value in the "
                                           "other; both branches must give it the same structure")
                parts_a, rebuild = a.flatten()
                parts_b = b.flatten()[0]
                if len(parts_b) != len(parts_a):
                    raise self.error(node, f"{n.lstrip('#')} has {len(parts_a)} run-time parts in one branch and "
                                           f"{len(parts_b)} in the other; both branches must give it the same "
                                           "structure")
                structured.append((n, len(result_names), len(parts_a), rebuild))
                for k, (pa, pb) in enumerate(zip(parts_a, parts_b)):
                    pa_t, pb_t = self.unify(pa, pb, then_block, else_block, f"{n}.{k}", node)
                    result_names.append(None)
                    then_vals.append(pa_t)
                    else_vals.append(pb_t)
                continue
            a_t, b_t = self.unify(a, b, then_block, else_block, n, node)
            result_names.append(n)
            then_vals.append(a_t)
            else_vals.append(b_t)
        results = self.finish_if(cond, then_block, then_vals, else_block, else_vals, node)
        merged.update((n, r) for n, r in zip(result_names, results) if n is not None)
        for n, start, count, rebuild in structured:
            merged[n] = rebuild(list(results[start:start + count]))
        return merged

    def unify(self, a, b, then_block, else_block, name, node) -> tuple[tensor, tensor]:
        """Make both branch values tensors of one type; literals take the other side's dtype."""
        with self.builder.at(then_block):
            a_t = self.to_carried(a, b)
        with self.builder.at(else_block):
            b_t = self.to_carried(b, a_t)
        with self.builder.at(then_block):
            if a_t.type != b_t.type and not isinstance(a, tensor):
                a_t = self.to_carried(a, b_t)
        if a_t.type != b_t.type:
            raise self.error(node, f"{name.lstrip('#')} is {a_t.type} in one branch and {b_t.type} in the other; "
                                   "both branches must give it the same type")
        return a_t, b_t

    def to_carried(self, value, like) -> tensor:
        if isinstance(value, tensor):
            return value
        if isinstance(value, (tuple, list)) or value is None or not isinstance(value, (int, float, bool)):
            raise TypeError(f"a value of type {type(value).__name__} cannot change inside run-time control flow")
        t = self.semantic.to_tensor(value)
        if isinstance(like, tensor) and like.shape == () and like.dtype != t.dtype:
            t = self.semantic.cast(t, like.dtype)
        elif isinstance(like, tensor) and like.shape:
            t = self.semantic.full(like.shape, value, like.dtype)
        return t

    def finish_if(self, cond, then_block, then_vals, else_block, else_vals, node) -> list[tensor]:
        for block, vals in ((then_block, then_vals), (else_block, else_vals)):
            with self.builder.at(block):
                self.builder.create(OP.SCF_YIELD, [v.handle for v in vals], [])
        self.builder.loc = Loc(node.lineno, node.col_offset)
        op = self.builder.create(OP.SCF_IF, [cond.handle], [v.type for v in then_vals], {}, [then_block, else_block])
        return [tensor(r) for r in op.results]

    def visit_For(self, node: ast.For):
        if node.orelse:
            raise self.error(node, "for ... else is not supported in a kernel", UnsupportedLanguageConstruct)
        if contains_return(node):
            raise self.error(node, "a kernel cannot `return` inside a loop", UnsupportedLanguageConstruct)
        iterator = self.visit(node.iter)
        if isinstance(iterator, language.static_range):
            bounds = [unwrap(iterator.start), unwrap(iterator.end), unwrap(iterator.step)]
            if any(isinstance(b, tensor) for b in bounds):
                raise self.error(node.iter, "tl.static_range needs compile-time (constexpr) bounds")
            wrong = [b for b in bounds if isinstance(b, bool) or not hasattr(b, "__index__")]
            if wrong:
                raise self.error(node.iter, f"tl.static_range bounds must be ints, got {wrong[0]!r}")
            for i in builtins.range(*bounds):
                self.assign(node.target, i)
                self.visit_body(node.body)
            return
        if isinstance(iterator, (tuple, list)):
            for item in iterator:
                self.assign(node.target, item)
                self.visit_body(node.body)
            return
        if not isinstance(iterator, language.range):
            raise self.error(node.iter, "a kernel loop iterates over range(...), tl.range(...) or "
                                        "tl.static_range(...)")
        if not isinstance(node.target, ast.Name):
            raise self.error(node.target, "the loop variable must be a single name")
        self.runtime_for(node, iterator)

    def runtime_for(self, node: ast.For, it) -> None:
        s = self.semantic
        bounds = [s.to_tensor(b) for b in (it.start, it.end, it.step)]
        for b, what in zip(bounds, ("start", "end", "step")):
            if b.shape or not b.dtype.is_int():
                raise self.error(node.iter, f"the loop {what} must be an integer scalar, got {b.type}")
        if not isinstance(unwrap(it.step), tensor) and unwrap(it.step) == 0:
            raise self.error(node.iter, "range() step must not be zero")
        iv_type = T.int64 if any(b.dtype.primitive_bitwidth == 64 for b in bounds) else T.int32
        bounds = [s.cast(b, iv_type) for b in bounds]
        carried = [n for n in _assigned_names(node.body) if n in self.scope and n != node.target.id]
        inits, layout = self.pack_carried(carried)
        body = Block([TileType(iv_type)] + [v.type for v in inits])
        before = dict(self.scope)
        self.scope.update(self.unpack_carried(layout, body.args[1:]))
        self.scope[node.target.id] = tensor(body.args[0])
        with self.builder.at(body):
            self.visit_body(node.body)
            yields = self.carried_values(layout, inits, node)
            self.builder.create(OP.SCF_YIELD, [v.handle for v in yields], [])
        self.builder.loc = Loc(node.lineno, node.col_offset)
        op = self.builder.create(OP.SCF_FOR, [b.handle for b in bounds] + [v.handle for v in inits],
                                 [v.type for v in inits], self.loop_hints(node, it), [body])
        self.scope = before
        self.scope.update(self.unpack_carried(layout, op.results))

    def loop_hints(self, node: ast.For, it) -> dict:
        """tl.range's num_stages, kept on the loop: Triton software-pipelines the loads of a loop without tl.dot
        only when it is given, and the profiler models the GPU build that way."""
        stages = unwrap(it.num_stages)
        if stages is None:
            return {}
        if isinstance(stages, bool) or not hasattr(stages, "__index__") or stages < 0:
            raise self.error(node.iter, f"tl.range num_stages must be a constexpr int >= 0, got {stages!r}")
        return {"num_stages": int(stages)}

    def pack_carried(self, names) -> tuple[list[tensor], list]:
        """Loop-carried values as a flat list of tensors; aggregates (block pointers) carry their parts."""
        flat, layout = [], []
        for n in names:
            value = self.scope[n]
            if hasattr(value, "flatten"):
                parts, rebuild = value.flatten()
                parts = [self.to_carried(p, p) for p in parts]
            else:
                parts, rebuild = [self.to_carried(value, value)], None
            layout.append((n, len(parts), rebuild))
            flat.extend(parts)
        return flat, layout

    def unpack_carried(self, layout, values) -> dict[str, object]:
        """Inverse of pack_carried over IR values (block arguments or op results)."""
        scope, i = {}, 0
        for name, count, rebuild in layout:
            parts = [tensor(v) for v in values[i:i + count]]
            scope[name] = rebuild(parts) if rebuild is not None else parts[0]
            i += count
        return scope

    def carried_values(self, layout, inits, node) -> list[tensor]:
        """The values to yield at the end of an iteration, checked against the types they entered with."""
        out = []
        for name, _count, rebuild in layout:
            value = self.scope.get(name, _UNSET)
            if value is _UNSET:
                raise self.error(node, f"{name} is no longer defined at the end of the loop body")
            if rebuild is not None:
                if not hasattr(value, "flatten"):
                    raise self.error(node, f"{name} changes kind inside the loop")
                parts = value.flatten()[0]
            else:
                parts = [value]
            for part in parts:
                init = inits[len(out)]
                v = self.to_carried(part, init) if not isinstance(part, tensor) else part
                if v.type != init.type:
                    raise self.error(node, f"loop-carried variable {name} has type {init.type} before the loop but "
                                           f"{v.type} at the end of an iteration; it must keep one type")
                out.append(v)
        return out

    def visit_While(self, node: ast.While):
        if node.orelse:
            raise self.error(node, "while ... else is not supported in a kernel", UnsupportedLanguageConstruct)
        if contains_return(node):
            raise self.error(node, "a kernel cannot `return` inside a loop", UnsupportedLanguageConstruct)
        carried = [n for n in _assigned_names(node.body) if n in self.scope]
        inits, layout = self.pack_carried(carried)
        before_block = Block([v.type for v in inits])
        after_block = Block([v.type for v in inits])
        outer = dict(self.scope)
        self.scope.update(self.unpack_carried(layout, before_block.args))
        with self.builder.at(before_block):
            cond = self.visit(node.test)
            if not isinstance(cond, tensor):
                cond = self.semantic.to_tensor(bool(cond))
            cond = self.condition(cond, node.test)
            self.builder.create(OP.SCF_CONDITION, [cond.handle] + [a for a in before_block.args], [])
        self.scope = dict(outer)
        self.scope.update(self.unpack_carried(layout, after_block.args))
        with self.builder.at(after_block):
            self.visit_body(node.body)
            yields = self.carried_values(layout, inits, node)
            self.builder.create(OP.SCF_YIELD, [v.handle for v in yields], [])
        self.builder.loc = Loc(node.lineno, node.col_offset)
        op = self.builder.create(OP.SCF_WHILE, [v.handle for v in inits], [v.type for v in inits], {},
                                 [before_block, after_block])
        self.scope = outer
        self.scope.update(self.unpack_carried(layout, op.results))

    def visit_Break(self, node):
        raise self.error(node, "break is not supported in a kernel loop; use a while loop with a flag",
                         UnsupportedLanguageConstruct)

    def visit_Continue(self, node):
        raise self.error(node, "continue is not supported in a kernel loop; guard the body with an if",
                         UnsupportedLanguageConstruct)


def _same_constant(a, b) -> bool:
    try:
        return bool(a == b)
    except Exception:
        return False


def _as_tuple(value) -> tuple:
    if value is None:
        return ()
    return value if isinstance(value, tuple) else (value,)


def contains_return(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Return) for n in ast.walk(node))


def _always_returns(stmts: Sequence[ast.stmt]) -> bool:
    for stmt in stmts:
        if isinstance(stmt, ast.Return):
            return True
        if isinstance(stmt, ast.If) and _always_returns(stmt.body) and _always_returns(stmt.orelse):
            return True
    return False


def _assigned_names(stmts: Sequence[ast.stmt]) -> list[str]:
    """Names a loop body (re)binds, in first-assignment order."""
    names: list[str] = []

    def add_target(t):
        if isinstance(t, ast.Name):
            if t.id not in names:
                names.append(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                add_target(e)

    for stmt in stmts:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    add_target(t)
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                add_target(node.target)
            elif isinstance(node, ast.For):
                add_target(node.target)
    return names
