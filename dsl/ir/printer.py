"""Prints the tile IR in its generic text form, the inverse of `dsl.ir.parser.parse_function`.

The output is canonical (values numbered in order of definition, attributes sorted, floats as repr),
so two functions print the same text exactly when they are structurally equal; tests and pass
debugging compare IR by comparing text.
"""

from __future__ import annotations

import json
import math
import numbers
import re
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # the IR's classes print themselves through this module
    from dsl.ir.core import Block, Function, Operation, Value

# Names the parser's lexer accepts bare; anything else is written as a JSON string.
IDENT = re.compile(r"[^\W\d]\w*")
ATTR_KEY = re.compile(r"[A-Za-z_]\w*")
INDENT = "  "


def print_function(func: Function) -> str:
    """The function's text: a `func` header, then one line per op (plus region headers), then `}`.

    `source_file` prints as the function attribute `source`, so `attrs` should not use that key."""
    if len(func.arg_names) != len(func.args):
        raise ValueError(f"function {func.name!r} has {len(func.args)} arguments but "
                         f"{len(func.arg_names)} argument names")
    names: dict[Value, str] = {}
    for arg_name, arg in zip(func.arg_names, func.args, strict=True):
        if not IDENT.fullmatch(arg_name) or f"%{arg_name}" in names.values():
            raise ValueError(f"argument name {arg_name!r} is not a unique identifier")
        names[arg] = f"%{arg_name}"
    _number_block(func.body, names, [0])

    args = ", ".join(f"{names[a]}: {a.type}" for a in func.args)
    header = f"func @{_symbol(func.name)}({args})"
    attrs = dict(func.attrs)
    if func.source_file:
        attrs["source"] = func.source_file
    if attrs:
        header += " attributes " + _attr_dict(attrs)
    lines = [header + " {"]
    for op in func.body.ops:
        _print_op(op, names, 1, lines)
    lines.append("}")
    return "\n".join(lines)


def print_op(op: Operation, names: dict[Value, str] | None = None, indent: int = 0) -> str:
    """One op (with its regions) as text. Without `names`, the values it defines are numbered from %0
    and values defined elsewhere print as `%?` (plus their name hint), which the parser rejects."""
    if names is None:
        names = {}
        counter = [0]
        _number_op(op, names, counter)
    lines: list[str] = []
    _print_op(op, names, indent, lines)
    return "\n".join(lines)


def format_attr_value(value: object) -> str:
    """One attribute value in the text form; tuples and lists print as `[a, b]` (and parse back as tuples)."""
    if value is None:
        return "none"
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        f = float(value)
        if math.isnan(f):
            return "nan"
        if math.isinf(f):
            return "inf" if f > 0 else "-inf"
        return repr(f)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(format_attr_value(v) for v in value) + "]"
    raise TypeError(f"attribute value {value!r} of type {type(value).__name__} has no text form")


def _number_block(block: Block, names: dict[Value, str], counter: list[int]) -> None:
    for op in block.ops:
        _number_op(op, names, counter)


def _number_op(op: Operation, names: dict[Value, str], counter: list[int]) -> None:
    """Number in text order: an op's results come before the block arguments of its regions."""
    for value in op.results:
        names[value] = f"%{counter[0]}"
        counter[0] += 1
    for region in op.regions:
        for value in region.args:
            names[value] = f"%{counter[0]}"
            counter[0] += 1
        _number_block(region, names, counter)


def _name(value: Value, names: dict[Value, str]) -> str:
    name = names.get(value)
    return name if name is not None else "%?" + value.name_hint


def _print_op(op: Operation, names: dict[Value, str], depth: int, lines: list[str]) -> None:
    pad = INDENT * depth
    line = pad
    if op.results:
        line += ", ".join(_name(r, names) for r in op.results) + " = "
    line += f"{op.name}({', '.join(_name(v, names) for v in op.operands)})"
    if op.attrs:
        line += " " + _attr_dict(op.attrs)
    if op.results:
        line += " : " + ", ".join(str(r.type) for r in op.results)
    if op.regions:
        line += " ("
        for i, region in enumerate(op.regions):
            line += ", {" if i else "{"
            lines.append(line)
            args = ", ".join(f"{_name(a, names)}: {a.type}" for a in region.args)
            lines.append(f"{pad}^({args}):")
            for inner in region.ops:
                _print_op(inner, names, depth + 1, lines)
            line = pad + "}"
        line += ")"
    if op.loc is not None:
        line += f" loc({op.loc.line}:{op.loc.col})"
    lines.append(line)


def _attr_dict(attrs: dict) -> str:
    for key in attrs:
        if not isinstance(key, str):
            raise TypeError(f"attribute name {key!r} is not a string")
    items = (f"{_attr_key(k)} = {format_attr_value(attrs[k])}" for k in sorted(attrs))
    return "{" + ", ".join(items) + "}"


def _attr_key(key: str) -> str:
    return key if ATTR_KEY.fullmatch(key) else json.dumps(key)


def _symbol(name: str) -> str:
    return name if IDENT.fullmatch(name) else json.dumps(name)
