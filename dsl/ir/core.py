"""The tile IR's data structures: typed SSA values, operations with regions, blocks and functions.

Every value has a `TileType`: an element dtype and a static shape; a scalar is the shape `()`.
Ops are generic (name, operands, attributes, regions, results); what each name means lives in
one table, `dsl.ir.ops.OPS`, which the verifier, printer, parser, passes and lowerings consult.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

from dsl.dtypes import dtype, parse_ir_type


@dataclass(frozen=True)
class TileType:
    """Element type plus static shape; shape () is a scalar."""

    dtype: dtype
    shape: tuple[int, ...] = ()

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def is_scalar(self) -> bool:
        return not self.shape

    def __hash__(self) -> int:
        # Types key every compile-cache lookup of a launch; hashing the nested dataclasses each time shows up
        # in launch overhead, so the hash is computed once per object (and dropped when pickled, see below).
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash((self.dtype, self.shape))
            object.__setattr__(self, "_hash", h)
        return h

    def __reduce__(self):
        return TileType, (self.dtype, self.shape)

    def with_dtype(self, new: dtype) -> TileType:
        return TileType(new, self.shape)

    def with_shape(self, shape: tuple[int, ...]) -> TileType:
        return TileType(self.dtype, tuple(shape))

    def __str__(self) -> str:
        if not self.shape:
            return self.dtype.ir
        return "tensor<" + "x".join(str(d) for d in self.shape) + "x" + self.dtype.ir + ">"

    @staticmethod
    def parse(text: str) -> TileType:
        if text.startswith("tensor<") and text.endswith(">"):
            *dims, elem = _split_dims(text[len("tensor<"):-1])
            return TileType(parse_ir_type(elem), tuple(int(d) for d in dims))
        return TileType(parse_ir_type(text))


def _split_dims(body: str) -> list[str]:
    """'128x64xptr<f32>' -> ['128', '64', 'ptr<f32>'] (the element type may itself contain 'x')."""
    parts = []
    while body and body[0].isdigit():
        head, _, body = body.partition("x")
        parts.append(head)
    return parts + [body]


@dataclass(frozen=True)
class Loc:
    """A position in the kernel's source file (1-based line, 0-based column)."""

    line: int
    col: int = 0

    def __str__(self) -> str:
        return f"{self.line}:{self.col}"


class Value:
    """An SSA value: the result of an op or an argument of a block."""

    __slots__ = ("type", "owner", "index", "name_hint")

    def __init__(self, type: TileType, owner: Operation | Block | None = None, index: int = 0,
                 name_hint: str = ""):
        self.type = type
        self.owner = owner
        self.index = index
        self.name_hint = name_hint

    @property
    def op(self) -> Operation | None:
        """The defining op, or None for block arguments."""
        return self.owner if isinstance(self.owner, Operation) else None

    def __repr__(self) -> str:
        return f"Value({self.type}, {self.name_hint or id(self)})"


class Operation:
    """One op: `name` is a key of `OPS`; `attrs` hold plain Python data (ints, floats, str, bool, tuples)."""

    __slots__ = ("name", "operands", "results", "attrs", "regions", "loc", "parent")

    def __init__(self, name: str, operands: list[Value], result_types: list[TileType],
                 attrs: dict | None = None, regions: list[Block] | None = None, loc: Loc | None = None):
        self.name = name
        self.operands = list(operands)
        self.results = [Value(t, self, i) for i, t in enumerate(result_types)]
        self.attrs = dict(attrs or {})
        self.regions = list(regions or [])
        self.loc = loc
        self.parent: Block | None = None
        for region in self.regions:
            region.parent = self

    @property
    def result(self) -> Value:
        assert len(self.results) == 1, f"{self.name} has {len(self.results)} results"
        return self.results[0]

    @property
    def info(self):
        from dsl.ir.ops import OPS

        return OPS[self.name]

    def walk(self) -> Iterator[Operation]:
        """This op and every op nested in its regions, in program order."""
        yield self
        for region in self.regions:
            yield from region.walk()

    def __repr__(self) -> str:
        return f"Operation({self.name}, {len(self.operands)} operands, {len(self.results)} results)"


class Block:
    """A straight-line list of ops with typed arguments; each region of an op is one block."""

    __slots__ = ("args", "ops", "parent")

    def __init__(self, arg_types: list[TileType] | None = None):
        self.args = [Value(t, self, i) for i, t in enumerate(arg_types or [])]
        self.ops: list[Operation] = []
        self.parent: Operation | None = None

    def append(self, op: Operation) -> Operation:
        op.parent = self
        self.ops.append(op)
        return op

    def add_arg(self, type: TileType, name_hint: str = "") -> Value:
        value = Value(type, self, len(self.args), name_hint)
        self.args.append(value)
        return value

    @property
    def terminator(self) -> Operation | None:
        return self.ops[-1] if self.ops and self.ops[-1].info.terminator else None

    def walk(self) -> Iterator[Operation]:
        for op in self.ops:
            yield from op.walk()


@dataclass
class Function:
    """A kernel: named arguments and a body block that ends without a terminator (kernels return nothing)."""

    name: str
    arg_names: list[str]
    body: Block
    source_file: str = ""
    attrs: dict = field(default_factory=dict)

    @property
    def args(self) -> list[Value]:
        return self.body.args

    def walk(self) -> Iterator[Operation]:
        return self.body.walk()

    def __str__(self) -> str:
        from dsl.ir.printer import print_function

        return print_function(self)


def uses(block: Block) -> dict[Value, list[Operation]]:
    """Every value's users inside `block` (recursively), in program order."""
    table: dict[Value, list[Operation]] = {}
    for op in block.walk():
        for operand in op.operands:
            table.setdefault(operand, []).append(op)
    return table
