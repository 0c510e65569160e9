"""IR-to-IR passes, run in the order `run_passes` lists them."""

from dsl.ir.core import Function
from jit.passes.combine_dot_add import combine_dot_add
from jit.passes.eliminate_common_subexpressions import eliminate_common_subexpressions
from jit.passes.eliminate_dead_code import eliminate_dead_code
from jit.passes.fold_constants import fold_constants


def run_passes(func: Function) -> None:
    fold_constants(func)
    combine_dot_add(func)
    eliminate_common_subexpressions(func)
    eliminate_dead_code(func)


__all__ = ["run_passes", "fold_constants", "eliminate_common_subexpressions", "eliminate_dead_code", "combine_dot_add"]
