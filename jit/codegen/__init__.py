"""LLVM code generation: a verified tile IR function -> an LLVM module implementing jit.abi."""

from jit.codegen.lower import CodegenOptions, LoweredModule, lower

__all__ = ["CodegenOptions", "LoweredModule", "lower"]
