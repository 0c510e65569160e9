"""Appends ops at an insertion point; the frontend and the passes build IR only through it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from dsl.ir.core import Block, Loc, Operation, TileType, Value
from dsl.ir.ops import OP


class Builder:
    def __init__(self, block: Block):
        self.block = block
        self.loc: Loc | None = None

    def create(self, name: str, operands: list[Value], result_types: list[TileType],
               attrs: dict | None = None, regions: list[Block] | None = None) -> Operation:
        return self.block.append(Operation(name, operands, result_types, attrs, regions, self.loc))

    def value(self, name: str, operands: list[Value], result_type: TileType, **attrs) -> Value:
        """Create a single-result op and return its value."""
        return self.create(name, operands, [result_type], attrs).result

    def constant(self, value, type: TileType) -> Value:
        return self.value(OP.ARITH_CONSTANT, [], type, value=value)

    @contextmanager
    def at(self, block: Block) -> Iterator[Builder]:
        """Temporarily insert into another block (a region being built)."""
        saved, self.block = self.block, block
        try:
            yield self
        finally:
            self.block = saved

    @contextmanager
    def located(self, loc: Loc | None) -> Iterator[Builder]:
        saved, self.loc = self.loc, loc
        try:
            yield self
        finally:
            self.loc = saved
