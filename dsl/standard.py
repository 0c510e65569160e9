"""`tl.standard`: Triton's standard library module (triton.language.standard), whose functions wavetile
implements in dsl.language; this module gives them under that module's names, so
`tl.standard.sum(x, 0)` is `tl.sum(x, 0)`."""

from __future__ import annotations

from dsl import core, math  # noqa: F401  (triton.language.standard has both)
from dsl.core import unwrap
from dsl.language import (  # noqa: F401
    _first_k,
    argmax,
    argmin,
    bitonic_merge,
    cdiv,
    cumprod,
    cumsum,
    flip,
    interleave,
    ravel,
    reduce_or,
    sigmoid,
    softmax,
    sort,
    swizzle2d,
    topk,
    xor_sum,
    zeros,
    zeros_like,
)
from dsl.language import max as max  # noqa: F401
from dsl.language import min as min  # noqa: F401
from dsl.language import sum as sum  # noqa: F401


def sort_impl(x, k=None, dim=None, descending=0):
    """Triton's shared body of sort and topk: `x` sorted along its last dim, cut to the first `k`
    (the k largest when descending, the k smallest otherwise)."""
    ordered = sort(x, dim, descending=descending)
    k = unwrap(k)
    return ordered if k is None else _first_k(ordered, int(k))


def _log2(i) -> int:
    """floor(log2(i)) for i >= 1 (0 below): Triton's compile-time helper, which libraries call."""
    i = int(unwrap(i))
    return i.bit_length() - 1 if i > 1 else 0


def _is_power_of_two(i) -> bool:
    i = int(unwrap(i))
    return i > 0 and i & (i - 1) == 0
