"""Parses the text form of the tile IR (see grammar.lark) back into a verified `Function`.

The grammar is generic: it knows nothing about individual ops. This module checks op names
against `OPS`, resolves `%names` with SSA scoping (a region's values are not visible after it),
and leaves arity, attribute and type rules to `verify`, so there is one source of truth for them.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path

from lark import Lark, Token, Tree
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken
from lark.lexer import PatternStr

from dsl.ir.core import Block, Function, Loc, Operation, TileType, Value
from dsl.ir.ops import OPS
from dsl.ir.printer import IDENT
from dsl.ir.verifier import verify

_VALUE_NAME = re.compile(r"%(?:[^\W\d]\w*|\d+)")


class IRParseError(ValueError):
    """The text is not well-formed IR; `line` and `column` (1-based) point at the offending token."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None, context: str = ""):
        self.message = message
        self.line = line
        self.column = column
        where = f"line {line}, column {column}: " if line is not None else ""
        super().__init__(where + message + (f"\n{context}" if context else ""))


def parse_function(text: str) -> Function:
    """Parse one `func` and verify it; raises IRParseError for malformed text and VerifyError
    (from `verify`) for text that parses but breaks a rule of the op table."""
    try:
        tree = _lark().parse(text)
    except UnexpectedInput as e:
        raise IRParseError(_describe(e), e.line, e.column, _context(text, e.line, e.column)) from None
    func = _FunctionBuilder(text).build(tree)
    verify(func)
    return func


@functools.cache
def _lark() -> Lark:
    grammar = (Path(__file__).parent / "grammar.lark").read_text()
    return Lark(grammar, parser="lalr", maybe_placeholders=False)


def _describe(e: UnexpectedInput) -> str:
    if isinstance(e, UnexpectedEOF) or (isinstance(e, UnexpectedToken) and e.token.type == "$END"):
        return "unexpected end of input"
    if isinstance(e, UnexpectedToken):
        expected = ", ".join(sorted(_terminal_text(t) for t in e.expected))
        return f"unexpected {e.token.value!r}, expected one of: {expected}"
    if isinstance(e, UnexpectedCharacters):
        return f"unexpected character {e.char!r}"
    return str(e)


def _terminal_text(name: str) -> str:
    """How errors name a terminal: the literal for punctuation and keywords, else 'value', 'type'..."""
    try:
        pattern = _lark().get_terminal(name).pattern
    except KeyError:
        return name.lower()
    if isinstance(pattern, PatternStr):
        return repr(pattern.value)
    return name.lower().replace("_", " ")


def _context(text: str, line: int | None, column: int | None) -> str:
    if line is None or column is None or line < 1:
        return ""
    lines = text.split("\n")
    if line > len(lines):
        return ""
    return f"  {lines[line - 1]}\n  {' ' * (column - 1)}^"


class _FunctionBuilder:
    """Walks the parse tree in text order, building ops and resolving names through a stack of scopes."""

    def __init__(self, text: str):
        self.text = text
        self.scopes: list[dict[str, Value]] = []
        self.defined: set[str] = set()  # SSA names are unique in the whole function, as printed

    def error(self, message: str, token: Token) -> IRParseError:
        return IRParseError(message, token.line, token.column, _context(self.text, token.line, token.column))

    def build(self, tree: Tree) -> Function:
        symbol, *rest = tree.children
        name = self.symbol(symbol)
        body = Block()
        self.scopes.append({})
        arg_names = []
        for arg in _subtrees(rest, "arg"):
            name_tok, type_tok = arg.children
            if not IDENT.fullmatch(name_tok[1:]):
                message = f"function arguments are named by identifiers, not {name_tok.value}"
                raise self.error(message, name_tok)
            value = body.add_arg(self.type(type_tok), name_hint=name_tok[1:])
            self.define(name_tok, value)
            arg_names.append(name_tok[1:])
        attrs_tree = next(_subtrees(rest, "func_attrs"))
        attrs = self.attr_dict(attrs_tree.children[0]) if attrs_tree.children else {}
        source = attrs.pop("source", "")
        if not isinstance(source, str):
            attrs["source"], source = source, ""
        for op_tree in _subtrees(rest, "op"):
            body.append(self.op(op_tree))
        return Function(name, arg_names, body, source, attrs)

    def symbol(self, token: Token) -> str:
        name = token[1:]
        if name.startswith('"'):
            return self.string(token, name)
        if not IDENT.fullmatch(name):
            raise self.error(f"bad function name {token.value!r}", token)
        return name

    def define(self, token: Token, value: Value) -> None:
        if not _VALUE_NAME.fullmatch(token):
            raise self.error(f"bad value name {token.value!r} (use %identifier or %number)", token)
        if token.value in self.defined:
            raise self.error(f"redefinition of {token.value}", token)
        self.defined.add(token.value)
        self.scopes[-1][token.value] = value
        if not token[1].isdigit():
            value.name_hint = token[1:]

    def lookup(self, token: Token) -> Value:
        for scope in reversed(self.scopes):
            if token.value in scope:
                return scope[token.value]
        raise self.error(f"use of undefined value {token.value}", token)

    def type(self, token: Token) -> TileType:
        try:
            parsed = TileType.parse(token.value)
        except ValueError as e:
            raise self.error(f"bad type {token.value!r}: {e}", token) from None
        if str(parsed) != token.value:
            raise self.error(f"bad type {token.value!r} (the canonical spelling is {str(parsed)!r})", token)
        return parsed

    def op(self, tree: Tree) -> Operation:
        results, name, operands, attrs, types, regions, loc = tree.children
        if name.value not in OPS:
            raise self.error(f"unknown op {name.value!r}", name)
        operand_values = [self.lookup(t) for t in operands.children]
        attr_values = self.attr_dict(attrs.children[0]) if attrs.children else {}
        result_types = [self.type(t) for t in types.children]
        if len(result_types) != len(results.children):
            raise self.error(f"{name.value} names {len(results.children)} results but lists "
                             f"{len(result_types)} result types", name)
        blocks = [self.region(r) for r in regions.children]
        location = Loc(int(loc.children[0]), int(loc.children[1])) if loc.children else None
        op = Operation(name.value, operand_values, result_types, attr_values, blocks, location)
        for token, value in zip(results.children, op.results, strict=True):
            self.define(token, value)
        return op

    def region(self, tree: Tree) -> Block:
        block = Block()
        self.scopes.append({})
        for arg in _subtrees(tree.children, "arg"):
            name_tok, type_tok = arg.children
            self.define(name_tok, block.add_arg(self.type(type_tok)))
        for op_tree in _subtrees(tree.children, "op"):
            block.append(self.op(op_tree))
        self.scopes.pop()
        return block

    def attr_dict(self, tree: Tree) -> dict:
        attrs: dict = {}
        for attr in tree.children:
            key_tok, value = attr.children
            key = self.string(key_tok, key_tok.value) if key_tok.type == "STRING" else key_tok.value
            if key in attrs:
                raise self.error(f"duplicate attribute {key!r}", key_tok)
            attrs[key] = self.attr_value(value)
        return attrs

    def attr_value(self, tree: Tree) -> object:
        kind = tree.data
        if kind == "true":
            return True
        if kind == "false":
            return False
        if kind == "none":
            return None
        if kind == "list_":
            return tuple(self.attr_value(v) for v in tree.children)
        token = tree.children[0]
        if kind == "int_":
            return int(token)
        if kind == "float_":
            return float(token)
        return self.string(token, token.value)

    def string(self, token: Token, literal: str) -> str:
        try:
            return json.loads(literal)
        except json.JSONDecodeError as e:
            raise self.error(f"bad string literal {literal}: {e.msg}", token) from None


def _subtrees(children: list, data: str):
    return (c for c in children if isinstance(c, Tree) and c.data == data)
