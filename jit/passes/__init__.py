"""IR-to-IR passes, run in the order `run_passes` lists them."""

from dsl.ir.core import Function
from jit.passes.assign_reduction_order import assign_reduction_order
from jit.passes.assign_vector_widths import assign_vector_widths
from jit.passes.carry_pointer_bases import carry_pointer_bases
from jit.passes.combine_dot_add import combine_dot_add
from jit.passes.eliminate_common_subexpressions import eliminate_common_subexpressions
from jit.passes.eliminate_dead_code import eliminate_dead_code
from jit.passes.fold_constants import fold_constants
from jit.passes.mark_staged_permutes import mark_staged_permutes


def run_passes(func: Function, *, num_warps: int = 4, divisible: frozenset[str] = frozenset(),
               model_gpu: bool = False) -> None:
    """num_warps and divisible (arguments that are multiples of 16) decide the GPU's reduction order, so sums
    round as on the GPU; model_gpu keeps the IR as a GPU compiler would run it (instrumented builds count its
    instructions), skipping rewrites made only for CPU speed."""
    assign_vector_widths(func, divisible)
    assign_reduction_order(func, num_warps)
    fold_constants(func)
    combine_dot_add(func)
    if not model_gpu:
        carry_pointer_bases(func)
    eliminate_common_subexpressions(func)
    eliminate_dead_code(func)
    mark_staged_permutes(func)


__all__ = ["run_passes", "assign_reduction_order", "assign_vector_widths", "carry_pointer_bases", "fold_constants",
           "eliminate_common_subexpressions", "eliminate_dead_code", "combine_dot_add", "mark_staged_permutes"]
