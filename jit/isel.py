"""Ops a GPU's instruction selection merges into another instruction, so the profiler counts none of their own.

Merges NVIDIA's compiler makes as a rule, on which integer-heavy kernels (Philox random numbers, hashes) and
elementwise kernels live:
- a bitwise and / or / xor whose only use is another bitwise op: the pair is one three-input LOP3;
- a boolean and / or / xor of a comparison it alone uses: the compare's ISETP / FSETP combines the two;
- an integer multiply of the same two operands as an umulhi: the low and high halves of one IMAD.WIDE;
- an add or subtract of a multiply whose only use it is: one FFMA / HFMA2 (Triton builds with fp fusion on, and
  ptxas contracts by default) or, on integers and pointer offsets, one IMAD. The add is merged, so the multiply's
  instruction stands for the pair.

`lowering` says what other ops become (H200 SASS of the sweep kernels): widening a bf16 is a shift, widening an
fp16 an HADD2.F32 on the FMA pipe, narrowing fp32 to 16 bits packs two values per F2FP, integers extend with a
shift or select and narrow for free, a bitcast reinterprets a register, an fp32 exp is five instructions, integer
division is a multiply-high and its corrections, and fp64 arithmetic runs on its own pipe, its math functions as
software routines.
"""

from __future__ import annotations

from dsl.dtypes import dtype
from dsl.ir.core import Block, Operation, Value
from dsl.ir.ops import OP, OPS

_LOGIC = frozenset({OP.ARITH_AND, OP.ARITH_OR, OP.ARITH_XOR})
_ADDS = frozenset({OP.ARITH_ADD, OP.ARITH_SUB, OP.TILE_ADDPTR})


def merged_ops(body: Block, users: dict[Value, list[Operation]]) -> set[Operation]:
    """The ops of `body` (recursively) whose work is done by an instruction counted for another op."""
    merged: set[Operation] = set()
    for op in body.walk():  # program order: whether an op absorbed one of its operands is known before its user
        if _is_logic(op) and op.result.type.dtype.is_bool() and any(_sets_predicate(v, op, users) for v in op.operands):
            merged.add(op)  # an ISETP / FSETP combines its result with another predicate: compare and logic op in one
        elif _is_logic(op):
            # a LOP3 takes three inputs: the op absorbs one two-input logic op, the first of its operands that is one
            for value in op.operands:
                inner = value.op
                if (_is_logic(inner) and inner.parent is op.parent and len(users.get(value, [])) == 1
                        and not any(v.op in merged for v in inner.operands)):
                    merged.add(inner)
                    break
        elif op.name == OP.ARITH_UMULHI:
            pair = set(op.operands)
            merged.update(user for user in users.get(op.operands[0], []) if user.name == OP.ARITH_MUL
                          and user.parent is op.parent and set(user.operands) == pair)
        elif op.name in _ADDS and any(_fuses_into(value, op, users, merged) for value in op.operands):
            merged.add(op)
    return merged


def _sets_predicate(value: Value, logic: Operation, users: dict[Value, list[Operation]]) -> bool:
    """Whether `value` is a comparison that `logic` alone uses."""
    compare = value.op
    return (compare is not None and compare.name == OP.ARITH_CMP and compare.parent is logic.parent
            and users.get(value, []) == [logic])


def _fuses_into(value: Value, add: Operation, users: dict[Value, list[Operation]], merged: set[Operation]) -> bool:
    """Whether `value` is a multiply that `add` alone uses, so the two issue as one multiply-add."""
    mul = value.op
    return (mul is not None and mul.name == OP.ARITH_MUL and mul not in merged and mul.parent is add.parent
            and users.get(value, []) == [add])


def _is_logic(op: Operation | None) -> bool:
    return op is not None and op.name in _LOGIC and op.result.type.dtype.is_int()


def lowering(op: str, source: dtype, target: dtype, divisor: str = "runtime") -> dict[str, float] | None:
    """Warp instructions per element, by class, that a GPU lowers an elementwise op on `source` (its first operand's
    type) to `target` into; {} when it needs none, None for one instruction of the op table's class. divisor: of an
    integer division or remainder, "runtime", "constant", "power_of_two" or, for a remainder whose operands a
    division shares, "after_division"."""
    if op == OP.ARITH_BITCAST:
        return {}
    if op == OP.ARITH_CAST:
        return _cast(source, target)
    if op in (OP.ARITH_DIV, OP.ARITH_REM) and source.is_int():
        if source.itemsize == 8 and divisor in ("runtime", "after_division"):
            return _WIDE_DIVISION
        return _INT_DIVISION[op, divisor]
    if target.is_fp32():
        return _FP32_SPECIAL.get(op)
    if target.is_fp64() and OPS[op].cls in _FLOAT_ARITHMETIC:
        return _FP64.get(op, {"fp64": 1})
    return None


# fp32 special functions as Triton 3.6 builds them for the H200 (simulator/data/h200_sass_loops.jsonl's kernels,
# SASS): exp is x * log2(e), then ex2.approx with its range fix-up (a compare and two predicated multiplies
# around MUFU.EX2); exp2 the same without the first multiply. log, log2, sin and cos are libdevice's exact routines:
# as long as 34-37 FMA-pipe instructions an element (benchmarks/gpu/math_functions.py,
# simulator/data/h200_math_functions.json: 0.27-0.29 clocks of a 128-lane unit)
_FP32_SPECIAL = {
    OP.MATH_EXP: {"special": 1, "fp_mul": 3, "compare_select": 1},
    OP.MATH_EXP2: {"special": 1, "fp_mul": 2, "compare_select": 1},
    OP.MATH_LOG: {"fp_fma": 35},
    OP.MATH_LOG2: {"fp_fma": 34},
    OP.MATH_SIN: {"fp_fma": 37},
    OP.MATH_COS: {"fp_fma": 35},
}

# fp64 runs on its own 64-lane pipe; its special functions and division are software routines, as long as this
# many fp64 instructions an element (the same probe: exp2 0.31, exp 0.30, log2 0.79, sin 0.56, cos 0.59, a division
# 0.21 clocks of a unit an element); floating-point arithmetic is one instruction, and so, for want of a
# measurement, are the functions not listed (sqrt, tanh, erf: longer routines on the GPU)
_FLOAT_ARITHMETIC = frozenset({"fp_add", "fp_mul", "fp_fma", "special"})
_FP64 = {
    OP.MATH_EXP: {"fp64": 19}, OP.MATH_EXP2: {"fp64": 20}, OP.MATH_LOG: {"fp64": 51}, OP.MATH_LOG2: {"fp64": 50},
    OP.MATH_SIN: {"fp64": 36}, OP.MATH_COS: {"fp64": 38}, OP.ARITH_DIV: {"fp64": 13},
}


# Integer division has no instruction. By a runtime divisor a thread sets up its reciprocal once, then a 32-bit
# quotient costs 13 instructions an element (multiply-high, multiply-back and corrections), a remainder 11, or 4 after
# the quotient of the same operands; 64-bit ones 18. By a constant: a multiply-high and shifts (4-5), by a power of
# two shifts and the sign's correction (3). Triton 3.6's H200 machine code at one and eight elements a thread:
# benchmarks/gpu/int_ops.py, simulator/data/h200_int_ops.json.
_INT_DIVISION = {
    (OP.ARITH_DIV, "runtime"): {"integer_multiply": 3, "integer": 10},
    (OP.ARITH_REM, "runtime"): {"integer_multiply": 3, "integer": 8},
    (OP.ARITH_REM, "after_division"): {"integer_multiply": 1, "integer": 3},
    (OP.ARITH_DIV, "constant"): {"integer_multiply": 1, "integer": 3},
    (OP.ARITH_REM, "constant"): {"integer_multiply": 2, "integer": 3},
    (OP.ARITH_DIV, "power_of_two"): {"integer": 3},
    (OP.ARITH_REM, "power_of_two"): {"integer": 3},
}
_WIDE_DIVISION = {"integer_multiply": 4, "integer": 14}


def _cast(source: dtype, target: dtype) -> dict[str, float]:
    if source == target:
        return {}
    if source.is_int() and target.is_int():  # booleans too
        # narrowing (or a change of signedness) reads the low register; widening is a shift or a select
        return {} if target.itemsize <= source.itemsize else {"integer": 1}
    if source.is_bf16() and target.name == "fp32":
        return {"integer": 1}  # the bits shifted into the high half
    if source.is_fp16() and target.name == "fp32":
        return {"fp_add": 1}  # HADD2.F32, on the FMA pipe
    if source.name == "fp32" and (target.is_fp16() or target.is_bf16()):
        return {"conversion": 0.5}  # F2FP packs two values
    return {"conversion": 1}
