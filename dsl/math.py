"""`tl.math`: the math functions under their triton.language.math names."""

from dsl.language import (  # noqa: F401
    abs,
    ceil,
    cos,
    div_rn,
    erf,
    exp,
    exp2,
    fdiv,
    floor,
    fma,
    log,
    log2,
    rsqrt,
    sigmoid,
    sin,
    sqrt,
    sqrt_rn,
    tanh,
    umulhi,
)
from dsl.language import max as max  # noqa: F401
from dsl.language import min as min  # noqa: F401
from dsl.libdevice import isinf, isnan, pow, rint, trunc  # noqa: F401
