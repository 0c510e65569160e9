"""The typed tile IR: data structures, the op table, builder, verifier, and the text form."""

from dsl.ir.builder import Builder
from dsl.ir.core import Block, Function, Loc, Operation, TileType, Value
from dsl.ir.ops import OPS, OpInfo, VerifyError
from dsl.ir.verifier import verify

__all__ = ["Block", "Builder", "Function", "Loc", "OPS", "OpInfo", "Operation", "TileType", "Value",
           "VerifyError", "verify"]

from dsl.ir.parser import IRParseError, parse_function  # noqa: E402
from dsl.ir.printer import print_function  # noqa: E402

__all__ += ["IRParseError", "parse_function", "print_function"]
