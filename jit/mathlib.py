"""The math library (exp, log, sin, ...), written once for every executor.

Each function is an algorithm over `FloatArithmetic`, a small set of IEEE operations (add, fma,
compares, selects, bit casts, ...). The code generator runs it on `jit.codegen.mathlib.FloatOps`,
which emits LLVM IR; the interpreter and eager mode run it on `jit.interp.float_ops.NumpyArithmetic`,
which computes with numpy arrays of the same format. Both backends round every operation the same way
(fma included: numpy has none, so the numpy backend computes it exactly), so interpreted results are
the compiled ones bit for bit (tests/jit/test_mathlib_executors.py checks every function on all fp32
special values and random inputs).

Why not `llvm.exp.f32` and friends: the x86 backend lowers them to one scalar libm call per element,
which stops the loop vectoriser (measured in research/cpu_codegen.md). So every algorithm here is
branch-free arithmetic: range reduction, a minimax polynomial, exponent manipulation through bit casts,
and selects for special values. The only intrinsics used are ones LLVM vectorises (fma, fabs, floor,
rint, sqrt, copysign).

`fma` is used throughout, both for accuracy and because several range reductions rely on a fused
multiply-add being exact. Every x86-64-v3 (AVX2) and AArch64 host has it; on a target without FMA,
LLVM would lower it to a libm `fma` call (still correct, but scalar).

Polynomial coefficients are minimax fits (Remez exchange in mpmath, 60 digits) rounded to the target
format; the comment above each table gives the fitted function, the interval, and the approximation
error of the rounded coefficients. Where the leading coefficient's rounding would dominate, it is
split into a high and a low part.

Measured accuracy: max error in ulps from the correctly rounded result. f32 unary functions were
run on all 2^32 inputs; f64 and pow on ~10^7 random inputs spread over the domain plus special
values. tests/jit/codegen/test_mathlib.py checks these bounds on ~10^6 inputs per function.

    fn       f32   f64   notes
    exp      1     1     overflow -> inf; results in the subnormal range are rounded once
    exp2     1     1
    log      1     1     subnormal inputs are exact-scaled first
    log2     1     1
    sin/cos  1     1     |x| <= 2^48 (f32), 2^40 (f64); NaN beyond, see `sin`
    tanh     1     2
    erf      1     2
    pow      1     2     C99 special cases; f32 computes in f64, f64 uses a double-double log
    sqrt     0     0     correctly rounded
    rsqrt    1     1     1/sqrt(x): two correctly rounded operations
    cbrt     1     1     f32 in f64: all 2^32 inputs equal numpy's f64 cbrt rounded to f32

Cost is a few dozen vector instructions per element: a 1M-element f32 exp loop takes ~0.7 ms on
one core of the 2-core AVX2 (znver3) host, numpy.exp ~2.4 ms (tests print the current figures).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

Value = Any
"""A backend's value: an LLVM register or a numpy array (float or integer of the format's width, or bool)."""


class FloatArithmetic:
    """The operations the algorithms use, on one float format (f32 or f64) of one backend.

    A backend defines the primitives (the methods that raise NotImplementedError); the helpers
    built from them are shared here, so both backends run the same sequence of operations. Float
    methods accept Python numbers as operands (constants of the format), integer methods (prefixed
    `i`, plus the shifts) constants of the same-width integer type.
    """

    is64: bool

    # -- primitives, one IEEE operation each (rounded to nearest even)
    def add(self, x, y): raise NotImplementedError
    def sub(self, x, y): raise NotImplementedError
    def mul(self, x, y): raise NotImplementedError
    def div(self, x, y): raise NotImplementedError
    def neg(self, x): raise NotImplementedError
    def fma(self, x, y, z): raise NotImplementedError  # x*y+z, one rounding
    def abs(self, x): raise NotImplementedError
    def rint(self, x): raise NotImplementedError  # to the nearest integer, ties to even
    def floor(self, x): raise NotImplementedError
    def trunc(self, x): raise NotImplementedError
    def sqrt(self, x): raise NotImplementedError
    def copysign(self, mag, sign): raise NotImplementedError
    def cmp(self, op: str, x, y): raise NotImplementedError  # ordered: false when an operand is NaN
    def ult(self, x, y): raise NotImplementedError  # unordered x < y: true when an operand is NaN
    def select(self, cond, x, y): raise NotImplementedError  # cond ? x : y on floats
    def iselect(self, cond, x, y): raise NotImplementedError  # the same on integers
    def and_(self, p, q): raise NotImplementedError  # on conditions
    def or_(self, p, q): raise NotImplementedError
    def not_(self, p): raise NotImplementedError
    def bits(self, x): raise NotImplementedError  # float -> same-width integer, bit for bit
    def from_bits(self, n): raise NotImplementedError
    def iadd(self, x, y): raise NotImplementedError  # integer ops wrap around
    def isub(self, x, y): raise NotImplementedError
    def iand(self, x, y): raise NotImplementedError
    def ior(self, x, y): raise NotImplementedError
    def ixor(self, x, y): raise NotImplementedError
    def shl(self, x, y): raise NotImplementedError
    def lshr(self, x, y): raise NotImplementedError
    def ashr(self, x, y): raise NotImplementedError
    def icmp(self, op: str, x, y): raise NotImplementedError  # signed
    def sitofp(self, n): raise NotImplementedError
    def wide(self) -> FloatArithmetic: raise NotImplementedError  # the f64 arithmetic of an f32 one
    def widen(self, x): raise NotImplementedError  # f32 -> f64, exact
    def narrow(self, x): raise NotImplementedError  # f64 -> f32, rounded

    # -- helpers
    def horner(self, x, coeffs: Sequence[float]):
        """coeffs[0] + coeffs[1] x + ... evaluated with fmas."""
        acc = coeffs[-1]
        for c in reversed(coeffs[:-1]):
            acc = self.fma(acc, x, c)
        return acc

    def lt(self, x, y):
        return self.cmp("<", x, y)

    def gt(self, x, y):
        return self.cmp(">", x, y)

    def ge(self, x, y):
        return self.cmp(">=", x, y)

    def eq(self, x, y):
        return self.cmp("==", x, y)

    def clamp(self, x, lo: float, hi: float):
        """min(max(x, lo), hi) that lets NaN through (an ordered compare is false for NaN)."""
        x = self.select(self.gt(x, hi), hi, x)
        return self.select(self.lt(x, lo), lo, x)


class _Consts:
    """The per-format constants the algorithms share; `C[ops.is64]` picks the set."""

    def __init__(self, **kw: float) -> None:
        self.__dict__.update(kw)


_C32 = _Consts(
    mant=23, bias=127, min_normal=2.0**-126,
    round_magic=12582912.0,  # 1.5 * 2^23: adding it rounds |v| < 2^22 to an integer, in the low bits
    log2e=1.4426950408889634, log2e_hi=1.4426950216293335, log2e_lo=1.925963033500011e-08,
    ln2_hi=0.6931471824645996, ln2_lo=-1.9046542121259336e-09,
    # pi/2 = pio2_1 + pio2_2 + pio2_3 to ~72 bits, each part an f32
    two_over_pi=0.6366197723675814,
    pio2_1=1.5707963705062866, pio2_2=-4.371138828673793e-08, pio2_3=-1.7151245100058819e-15,
    exp_hi=89.0, exp_lo=-104.0,  # exp(x) overflows / underflows to 0 beyond these
    tanh_clamp=10.0, erf_clamp=3.95,
    sqrt_half_bits=0x3F3504F3,
)
_C64 = _Consts(
    mant=52, bias=1023, min_normal=2.0**-1022,
    round_magic=6755399441055744.0,  # 1.5 * 2^52
    log2e=1.4426950408889634, log2e_hi=1.4426950408889634, log2e_lo=2.0355273740931033e-17,
    ln2_hi=0.6931471805599453, ln2_lo=2.3190468138462996e-17,
    # ln2 to 42 bits, so that e * ln2_hi is exact for every exponent e of a double
    ln2_hi42=0.6931471805598903, ln2_lo42=5.497923018708371e-14,
    two_thirds_hi=0.6666666666666666, two_thirds_lo=3.700743415417188e-17,
    two_over_pi=0.6366197723675814,
    pio2_1=1.5707963267948966, pio2_2=6.123233995736766e-17, pio2_3=-1.4973849048591698e-33,
    exp_hi=710.0, exp_lo=-746.0,
    tanh_clamp=20.0, erf_clamp=6.0,
    sqrt_half_bits=0x3FE6A09E667F3BCD,
)


def _c(o: FloatArithmetic) -> _Consts:
    return _C64 if o.is64 else _C32


# ----------------------------------------------------------------------------------------------------
# coefficient tables

# e^r = 1 + r + sum c[j-2] r^j, j = 2..6, |r| <= 0.3467: relative error 2^-28.0
_EXP_F32 = (0.4999999403953552, 0.1666652113199234, 0.04166838899254799, 0.008368735201656818,
            0.0013814560370519757)
# e^r = 1 + r + sum c[j-2] r^j, j = 2..12, |r| <= 0.3467: relative error 2^-60.3
_EXP_F64 = (0.5, 0.16666666666666682, 0.041666666666666095, 0.008333333333316999, 0.0013888888889116112,
            0.00019841269896471084, 2.4801586926028793e-05, 2.755723477283178e-06, 2.7557582133583063e-07,
            2.5112068498101042e-08, 2.0826598326060823e-09)
# expm1(r) = r + sum c[j-2] r^j, j = 2..7, |r| <= 0.3467: relative error 2^-28.8
_EXPM1_F32 = (0.5, 0.1666666567325592, 0.041666362434625626, 0.008333389647305012, 0.0013940654462203383,
              0.0001984588016057387)
# expm1(r) = r + sum c[j-2] r^j, j = 2..12, |r| <= 0.3467: relative error 2^-60.0
_EXPM1_F64 = (0.5, 0.16666666666666677, 0.04166666666666651, 0.008333333333321667, 0.0013888888888962528,
              0.00019841269886037232, 2.480158717233075e-05, 2.755724429461186e-06, 2.7557402732952384e-07,
              2.5109009109059158e-08, 2.0875328765574746e-09)
# log1p(f) = f + sum c[j-2] f^j, j = 2..10, sqrt(1/2)-1 <= f < sqrt(2)-1: relative error 2^-27.6
_LOG1P_F32 = (-0.49999988079071045, 0.33333325386047363, -0.25001585483551025, 0.2000197470188141,
              -0.16609054803848267, 0.14181776344776154, -0.13243193924427032, 0.12904855608940125,
              -0.07621778547763824)
# 2 atanh(s) = 2s + 2s^3/3 + sum c[j] s^(2j+5), j = 0..6, |s| <= 0.1716: relative error 2^-65.8
_LOG_TAIL_F64 = (0.4000000000000225, 0.2857142857010153, 0.22222222519598764, 0.18181784393449493,
                 0.15386756206990285, 0.1325684198083472, 0.1319612081261842)
# sin(r) = r + sum c[j] r^(2j+3), |r| <= 0.9: relative error 2^-26.1
_SIN_F32 = (-0.16666638851165771, 0.008331308141350746, -0.0001941341470228508)
# cos(r) = 1 + sum c[j] r^(2j+2), |r| <= 0.9: relative error 2^-26.3
_COS_F32 = (-0.5, 0.041666559875011444, -0.0013885042862966657, 2.425067577860318e-05)
# sin(r) = r + sum c[j] r^(2j+3), |r| <= 0.7864: relative error 2^-56.9
_SIN_F64 = (-0.1666666666666663, 0.008333333333321974, -0.00019841269829469458, 2.7557313578284112e-06,
            -2.5050740801868846e-08, 1.5895815017619895e-10)
# cos(r) = 1 - r^2/2 + sum c[j] r^(2j+4), |r| <= 0.7864: relative error 2^-59.0
_COS_F64 = (0.041666666666666595, -0.001388888888887285, 2.4801587288719523e-05, -2.755731414014054e-07,
            2.087569539335753e-09, -1.1358248139181646e-11)
# erf(x) = (c[0] + c0_lo) x + sum c[j] x^(2j+1), |x| <= 1: relative error 2^-28.9
_ERF_SMALL_F32 = (1.1283791065216064, -0.3761262595653534, 0.1128358542919159, -0.026853812858462334,
                  0.005188327748328447, -0.0008010193705558777, 7.853861461626366e-05)
_ERF_SMALL_F32_C0_LO = 5.920510659507272e-08
# log(erfc(x)) + x^2 = c0_lo + sum c[j] (x - 2.475)^j, 1 <= x <= 3.95: error times erfc/erf 2^-29.8
_ERFC_F32 = (-1.5479652881622314, -0.3555200397968292, 0.05692946910858154, -0.010958807542920113,
             0.0024861276615411043, -0.00017992756329476833, 0.00018637914035934955)
_ERFC_F32_C0_LO = -1.361651502662653e-08
_ERF_SPLIT_F32, _ERFC_X0_F32 = 1.0, 2.475
# tanh(x) = x + sum c[j] x^(2j+3), |x| <= 0.625: relative error 2^-26.8
_TANH_SMALL_F32 = (-0.3333328068256378, 0.13331441581249237, -0.05373971536755562, 0.0206390880048275,
                   -0.005704987328499556)
_TANH_SPLIT_F32 = 0.625
# erf(x) = (c[0] + c0_lo) x + sum c[j] x^(2j+1), |x| <= 0.75: relative error 2^-59.3
_ERF_SMALL_F64 = (1.1283791670955126, -0.37612638903183715, 0.11283791670952481, -0.026866170644402474,
                  0.005223977615122193, -0.0008548326169084145, 0.00012055288776930847, -1.4924176630222404e-05,
                  1.6430388118521709e-06, -1.5937599283442683e-07, 1.1463755491888436e-08)
_ERF_SMALL_F64_C0_LO = 1.445287801592818e-17
# log(erfc(x)) + x^2 = c0_lo + sum c[j] (x - 3.375)^j, 0.75 <= x <= 6: error times erfc/erf 2^-55.5
_ERFC_F64 = (-1.8286450458265995, -0.27466328747233315, 0.03529144403600622, -0.00568650400345194,
             0.0009717404047413014, -0.00016692998395716042, 2.8059785639108996e-05, -4.5239073046826385e-06,
             6.814964203409841e-07, -9.425115855792233e-08, 1.1331361192897703e-08, 9.384005057764675e-10,
             9.947542040632071e-10, 2.2520267995508922e-10, -2.627987258611755e-10, -2.208818186498808e-10,
             -9.583474101934031e-11, -2.388510961173223e-11, -3.4884765090401314e-12, -2.3092352936785847e-13,
             -2.738326097813454e-16)
_ERFC_F64_C0_LO = 3.145098516209999e-17
_ERF_SPLIT_F64, _ERFC_X0_F64 = 0.75, 3.375

_INF = float("inf")
_NAN = float("nan")


# ----------------------------------------------------------------------------------------------------
# exponentials


def _scale(o: FloatArithmetic, p, n):
    """p * 2^n for integer n (same-width int) with |n| up to about 2 * bias: two exact power-of-two
    multiplies, so huge n overflows to inf and very negative n rounds once into the subnormals."""
    c = _c(o)
    n1 = o.ashr(n, 1)
    n2 = o.isub(n, n1)
    s1 = o.from_bits(o.shl(o.iadd(n1, c.bias), c.mant))
    s2 = o.from_bits(o.shl(o.iadd(n2, c.bias), c.mant))
    return o.mul(o.mul(p, s1), s2)


def _exp_poly(o: FloatArithmetic, r):
    """e^r for |r| <= ln2/2, as 1 + (r + r^2 q(r)) so that the big terms are added last."""
    q = o.horner(r, _EXP_F64 if o.is64 else _EXP_F32)
    return o.add(o.fma(o.mul(r, r), q, r), 1.0)


def _reduce_ln2(o: FloatArithmetic, x):
    """x = n ln2 + r with |r| <= ln2/2 (Cody-Waite, exact first step thanks to the fma).

    Returns (kf, r): kf = x log2e + round_magic, whose low mantissa bits hold n, so no float->int
    conversion (poison for NaN) is needed. Needs |x| < 2^21.
    """
    c = _c(o)
    kf = o.fma(x, c.log2e, c.round_magic)
    nf = o.sub(kf, c.round_magic)
    r = o.fma(nf, -c.ln2_hi, x)
    r = o.fma(nf, -c.ln2_lo, r)
    return kf, r


def _magic_int(o: FloatArithmetic, kf):
    return o.isub(o.bits(kf), o.bits(_c(o).round_magic))


def _exp_dd(o: FloatArithmetic, x, x_lo=None):
    """e^(x + x_lo), x_lo a tiny correction (or None). NaN propagates through the arithmetic."""
    c = _c(o)
    if x_lo is not None:  # a clamped x saturates anyway; its low word could be anything
        inside = o.and_(o.gt(x, c.exp_lo), o.lt(x, c.exp_hi))
        x_lo = o.select(inside, x_lo, 0.0)
    x = o.clamp(x, c.exp_lo, c.exp_hi)
    kf, r = _reduce_ln2(o, x)
    p = _exp_poly(o, r)
    if x_lo is not None:
        p = o.fma(p, x_lo, p)
    return _scale(o, p, _magic_int(o, kf))


def exp(o: FloatArithmetic, x):
    """e^x. Overflow gives +inf, underflow 0 through correctly scaled subnormals, exp(NaN) = NaN.

    Max error 1 ulp (f32: all inputs; f64: sampled).
    """
    return _exp_dd(o, x)


def exp2(o: FloatArithmetic, x):
    """2^x: n = rint(x) exactly, then e^((x - n) ln2) with the product kept as a double-word. Max 1 ulp."""
    c = _c(o)
    x = o.clamp(x, c.exp_lo * 1.5, c.exp_hi * 1.5)  # beyond +-1.45 * bias both saturate anyway
    kf = o.add(x, c.round_magic)  # the add rounds x to the nearest integer
    t = o.sub(x, o.sub(kf, c.round_magic))  # exact, |t| <= 1/2
    r = o.mul(t, c.ln2_hi)
    r_lo = o.fma(t, c.ln2_lo, o.fma(t, c.ln2_hi, o.neg(r)))
    p = _exp_poly(o, r)
    p = o.fma(p, r_lo, p)
    return _scale(o, p, _magic_int(o, kf))


def _expm1_core(o: FloatArithmetic, x):
    """e^x - 1 for 0 <= x <= 2 tanh_clamp (what tanh asks for).

    2^n (expm1(r) + 1) - 1 = fma(2^n, expm1(r), 2^n - 1) with one rounding (2^n - 1 is exact while n
    <= mantissa bits; beyond, the -1 is below half an ulp of the result).
    """
    kf, r = _reduce_ln2(o, x)
    em = o.fma(o.mul(r, r), o.horner(r, _EXPM1_F64 if o.is64 else _EXPM1_F32), r)
    c = _c(o)
    s = o.from_bits(o.shl(o.iadd(_magic_int(o, kf), c.bias), c.mant))
    return o.fma(s, em, o.sub(s, 1.0))


def tanh(o: FloatArithmetic, x):
    """tanh(x), odd, saturating to +-1. Max error 1 ulp (f32), 2 ulp (f64).

    t / (t + 2) with t = expm1(2|x|): its relative error is expm1's, damped by 2/(t+2), plus the
    roundings of t + 2 and of the division. For f32 that is too much near 0, where an odd minimax
    polynomial takes over (|x| < 0.625). For f64 a polynomial would need ~18 terms, so instead the
    two roundings are corrected (exact remainder of the division, two-sum for t + 2).
    """
    c = _c(o)
    ax = o.abs(x)
    ax = o.select(o.gt(ax, c.tanh_clamp), c.tanh_clamp, ax)  # tanh rounds to 1 beyond; NaN passes
    t = _expm1_core(o, o.add(ax, ax))
    d, d_lo = _two_sum(o, t, 2.0)
    y = o.div(t, d)
    if o.is64:
        # fold in the roundings of d and of the division: y + (t - y (d + d_lo)) / (t + 2), with
        # 1 / (t + 2) = (1 - y) / 2, which is accurate enough while y is not close to 1
        rem = o.sub(o.fma(o.neg(y), d, t), o.mul(y, d_lo))
        y = o.select(o.lt(y, 0.75), o.fma(rem, o.mul(o.sub(1.0, y), 0.5), y), y)
    else:
        z = o.mul(ax, ax)
        small = o.fma(o.mul(ax, z), o.horner(z, _TANH_SMALL_F32), ax)
        y = o.select(o.lt(ax, _TANH_SPLIT_F32), small, y)
    return o.copysign(y, x)


# ----------------------------------------------------------------------------------------------------
# logarithms


def _log_specials(o: FloatArithmetic, x, y):
    """log(+0 or -0) = -inf, log(x < 0) = NaN, log(+inf) = +inf, log(NaN) = NaN."""
    y = o.select(o.eq(x, _INF), _INF, y)
    y = o.select(o.eq(x, 0.0), -_INF, y)
    return o.select(o.ult(x, 0.0), _NAN, y)  # true for x < 0 and for NaN


def _split_exponent(o: FloatArithmetic, x):
    """x = 2^e * m with sqrt(1/2) <= m < sqrt(2), for positive finite x (subnormals included).

    Subnormals are first scaled by 2^mant (exact). Returns (e as float, f = m - 1, exact).
    """
    c = _c(o)
    tiny = o.lt(x, c.min_normal)
    xs = o.select(tiny, o.mul(x, 2.0**c.mant), x)
    u = o.isub(o.bits(xs), c.sqrt_half_bits)
    e = o.isub(o.ashr(u, c.mant), o.iselect(tiny, c.mant, 0))
    m = o.from_bits(o.iadd(o.iand(u, (1 << c.mant) - 1), c.sqrt_half_bits))
    return o.sitofp(e), o.sub(m, 1.0)


def _log1p_poly_f32(o: FloatArithmetic, f):
    """log(1 + f) = f + t for the reduced f; returns t (small next to f)."""
    return o.mul(o.mul(f, f), o.horner(f, _LOG1P_F32))


def _fast_two_sum(o: FloatArithmetic, a, b):
    """(s, e) with s + e = a + b exactly, for |a| >= |b|."""
    s = o.add(a, b)
    return s, o.sub(b, o.sub(s, a))


def _two_sum(o: FloatArithmetic, a, b):
    """(s, e) with s + e = a + b exactly, any magnitudes (Knuth)."""
    s = o.add(a, b)
    bb = o.sub(s, a)
    return s, o.add(o.sub(a, o.sub(s, bb)), o.sub(b, bb))


def _log1p_dd_f64(o: FloatArithmetic, f):
    """log(1 + f) as a double-double (h, l), |f| <= 0.42, relative error about 2^-64.

    2 atanh(s) with s = f / (2 + f): s is kept as a double-double, the 2s^3/3 term too, and only the
    small tail s^5 T(s^2) (under 2^-12 of the result) is a plain double.
    """
    d = o.add(f, 2.0)
    d_lo = o.sub(f, o.sub(d, 2.0))  # exact: the rounding error of 2 + f
    s = o.div(f, d)
    s_lo = o.div(o.sub(o.fma(o.neg(s), d, f), o.mul(s, d_lo)), d)  # (f - s (d + d_lo)) / d
    z = o.mul(s, s)
    z_lo = o.fma(s, s, o.neg(z))
    z_lo = o.fma(o.add(s, s), s_lo, z_lo)
    s3 = o.mul(z, s)
    s3_lo = o.fma(z, s, o.neg(s3))
    s3_lo = o.fma(z_lo, s, o.fma(z, s_lo, s3_lo))
    c = _C64
    t3 = o.mul(s3, c.two_thirds_hi)
    t3_lo = o.fma(s3, c.two_thirds_hi, o.neg(t3))
    t3_lo = o.fma(s3, c.two_thirds_lo, o.fma(s3_lo, c.two_thirds_hi, t3_lo))
    tail = o.mul(o.mul(s3, z), o.horner(z, _LOG_TAIL_F64))
    h, l = _fast_two_sum(o, o.add(s, s), t3)
    l = o.add(l, o.add(o.add(s_lo, s_lo), o.add(t3_lo, tail)))
    return _fast_two_sum(o, h, l)


def _log_dd_f64(o: FloatArithmetic, x):
    """log(x) for positive finite x as a double-double (hi, lo)."""
    c = _C64
    e, f = _split_exponent(o, x)
    h, l = _log1p_dd_f64(o, f)
    hi, lo = _two_sum(o, o.mul(e, c.ln2_hi42), h)  # e * ln2_hi42 is exact
    lo = o.add(lo, o.fma(e, c.ln2_lo42, l))
    return _fast_two_sum(o, hi, lo)


def _log_f64(o: FloatArithmetic, x):
    """log(x) for positive finite x, plain double (error ~1 ulp): 2 atanh(s) with s = f / (2 + f) in
    one double, e * ln2 split so that its big part is exact."""
    c = _C64
    e, f = _split_exponent(o, x)
    s = o.div(f, o.add(f, 2.0))
    z = o.mul(s, s)
    tail = o.mul(o.mul(s, z), o.fma(z, o.horner(z, _LOG_TAIL_F64), c.two_thirds_hi))
    return o.fma(e, c.ln2_hi42, o.add(o.add(s, s), o.fma(e, c.ln2_lo42, tail)))


def log(o: FloatArithmetic, x):
    """Natural logarithm; subnormal inputs are exact-scaled first. Max error 1 ulp."""
    if o.is64:
        y, _ = _log_dd_f64(o, x)
    else:
        c = _C32
        e, f = _split_exponent(o, x)
        t = _log1p_poly_f32(o, f)
        y = o.fma(e, c.ln2_hi, o.add(f, o.fma(e, c.ln2_lo, t)))
    return _log_specials(o, x, y)


def log2(o: FloatArithmetic, x):
    """Base-2 logarithm: e + log(m) * log2(e), the product kept in extra precision. Max error 1 ulp."""
    c = _c(o)
    e, f = _split_exponent(o, x)
    if o.is64:
        h, l = _log1p_dd_f64(o, f)
        p = o.mul(h, c.log2e_hi)
        p_lo = o.fma(h, c.log2e_hi, o.neg(p))
        p_lo = o.fma(l, c.log2e_hi, o.fma(h, c.log2e_lo, p_lo))
        s, s_lo = _two_sum(o, e, p)
        y = o.add(s, o.add(s_lo, p_lo))
    else:
        t = _log1p_poly_f32(o, f)
        y = o.add(e, o.fma(f, c.log2e_hi, o.fma(t, c.log2e_hi, o.mul(f, c.log2e_lo))))
    return _log_specials(o, x, y)


# ----------------------------------------------------------------------------------------------------
# trigonometry


def _trig_reduce(o: FloatArithmetic, x):
    """x = n pi/2 + (r + r_lo) in double precision: Cody-Waite with a 3-part pi/2 and fmas.

    n x pio2_1 is exact inside the fma and so is x - n pio2_1 (both are multiples of 2^-52 and the
    difference is below 2); n pio2_2 is split exactly with an fma and subtracted with a two-sum, so
    r + r_lo carries ~100 bits minus the cancellation. Returns (r, r_lo, n mod 4 as a float); the
    quadrant is taken in float arithmetic (n - 4 floor(n/4)), so nothing here can be poison.
    """
    c = _C64
    nf = o.rint(o.mul(x, c.two_over_pi))
    r1 = o.fma(nf, -c.pio2_1, x)
    p2 = o.mul(nf, c.pio2_2)
    p2_lo = o.fma(nf, c.pio2_2, o.neg(p2))
    r, r_lo = _two_sum(o, r1, o.neg(p2))
    r_lo = o.sub(r_lo, o.fma(nf, c.pio2_3, p2_lo))
    qf = o.sub(nf, o.mul(o.floor(o.mul(nf, 0.25)), 4.0))
    return r, r_lo, qf


# |x| up to which the reduction keeps |r| inside the polynomials' interval (the rounding of x 2/pi is
# what limits it); beyond, sin and cos return NaN rather than a meaningless value
_TRIG_LIMIT_F32 = 2.0**48
_TRIG_LIMIT_F64 = 2.0**40


def _sincos(o: FloatArithmetic, x, *, cosine: bool):
    """sin or cos: reduce in double precision, evaluate both polynomials on r, pick one by quadrant.

    f32 inputs are reduced in f64 too (x widens exactly), then r + r_lo is rounded back to a float
    pair; that is cheaper than an f32 reduction accurate enough, and good for |x| up to 2^48.
    """
    x = o.select(o.gt(o.abs(x), _TRIG_LIMIT_F64 if o.is64 else _TRIG_LIMIT_F32), _NAN, x)
    if o.is64:
        r, r_lo, qf = _trig_reduce(o, x)
    else:
        w = o.wide()
        rd, rd_lo, qd = _trig_reduce(w, o.widen(x))
        r = o.narrow(rd)
        r_lo = o.narrow(w.add(w.sub(rd, o.widen(r)), rd_lo))
        qf = o.narrow(qd)
    q = o.iand(o.bits(o.add(qf, _c(o).round_magic)), 3)  # n mod 4 in the low bits
    z = o.mul(r, r)
    # sin(r + r_lo) ~ r + (r^3 S(r^2) + r_lo); cos(r + r_lo) ~ 1 + (r^2 C(r^2) - r r_lo)
    if o.is64:
        s = o.add(r, o.fma(o.mul(r, z), o.horner(z, _SIN_F64), r_lo))
        cs_tail = o.fma(o.mul(z, z), o.horner(z, _COS_F64), o.neg(o.mul(r, r_lo)))
        cs = o.add(o.fma(z, -0.5, cs_tail), 1.0)
    else:
        s = o.add(r, o.fma(o.mul(r, z), o.horner(z, _SIN_F32), r_lo))
        cs = o.add(o.fma(z, o.horner(z, _COS_F32), o.neg(o.mul(r, r_lo))), 1.0)
    if cosine:
        q = o.iadd(q, 1)  # cos(x) = sin(x + pi/2)
    odd = o.icmp("!=", o.iand(q, 1), 0)
    y = o.select(odd, cs, s)
    sign = o.shl(o.iand(q, 2), (63 if o.is64 else 31) - 1)  # quadrants 2, 3 negate
    return o.from_bits(o.ixor(o.bits(y), sign))


def sin(o: FloatArithmetic, x):
    """sin(x), max error 1 ulp for |x| <= 2^48 (f32) / 2^40 (f64); sin(+-inf) = NaN, sin(-0) = -0.

    The Cody-Waite reduction is exact enough only while x 2/pi rounds to within a few hundredths of
    an integer; for larger |x| (f32 values past 2.8e14, f64 past 1.1e12) the result is NaN, since no
    Payne-Hanek reduction is done. (An angle that large has no fractional part worth the name.)
    """
    return o.select(o.eq(x, 0.0), x, _sincos(o, x, cosine=False))  # the reduction turns -0 into +0


def cos(o: FloatArithmetic, x):
    """cos(x), same reduction, range and bounds as `sin`."""
    return _sincos(o, x, cosine=True)


# ----------------------------------------------------------------------------------------------------
# erf, sqrt, pow


def erf(o: FloatArithmetic, x):
    """Error function, odd, saturating to +-1.

    Near 0, x P(x^2) with the leading coefficient 2/sqrt(pi) as a double-word. Beyond the split point,
    1 - erfc(|x|) with erfc(x) = exp(-x^2 + Q(x)), where Q approximates log(erfc(x)) + x^2 (smooth and
    slowly varying, so the polynomial is well-conditioned). Max error 1 ulp (f32), 2 ulp (f64).
    """
    c = _c(o)
    if o.is64:
        small_c, small_lo, large_c, large_lo, split, x0 = (
            _ERF_SMALL_F64, _ERF_SMALL_F64_C0_LO, _ERFC_F64, _ERFC_F64_C0_LO, _ERF_SPLIT_F64, _ERFC_X0_F64)
    else:
        small_c, small_lo, large_c, large_lo, split, x0 = (
            _ERF_SMALL_F32, _ERF_SMALL_F32_C0_LO, _ERFC_F32, _ERFC_F32_C0_LO, _ERF_SPLIT_F32, _ERFC_X0_F32)
    ax = o.abs(x)
    ax = o.select(o.gt(ax, c.erf_clamp), c.erf_clamp, ax)  # erf rounds to 1 from here on
    z = o.mul(ax, ax)
    tail = o.fma(z, o.horner(z, small_c[1:]), small_lo)
    small = o.fma(ax, small_c[0], o.mul(ax, tail))
    q = o.fma(o.sub(ax, x0), o.horner(o.sub(ax, x0), large_c[1:]), large_lo)
    a = o.add(o.fma(o.neg(ax), ax, large_c[0]), q)
    large = o.sub(1.0, _exp_dd(o, a))
    y = o.select(o.lt(ax, split), small, large)
    return o.copysign(y, x)


def sqrt(o: FloatArithmetic, x):
    """llvm.sqrt: correctly rounded, vectorises to sqrtps/sqrtpd. sqrt(-0) = -0, sqrt(x < 0) = NaN."""
    return o.sqrt(x)


def rsqrt(o: FloatArithmetic, x):
    """1 / sqrt(x): two correctly rounded operations, max error 1 ulp. rsqrt(+-0) = +-inf."""
    return o.div(1.0, o.sqrt(x))


def cbrt(o: FloatArithmetic, x):
    """Cube root, odd, exact on +-0, +-inf and NaN. Max error 1 ulp.

    y = 2^(log2|x| / 3) is within ~2^-43 of the root (log2's error scaled by |log2 x| <= 1075), and one
    Newton step y - (y - |x| / y^2) / 3 squares that error away; in this form no intermediate overflows
    near the largest finite x, and only the rounding of |x| / y^2 is left. f32 runs it all in f64 and
    rounds once.
    """
    if not o.is64:
        return o.narrow(cbrt(o.wide(), o.widen(x)))
    ax = o.abs(x)
    y = exp2(o, o.div(log2(o, ax), 3.0))
    y = o.sub(y, o.div(o.sub(y, o.div(ax, o.mul(y, y))), 3.0))
    root = o.select(o.lt(ax, _INF), o.copysign(y, x), x)  # inf and NaN are their own roots
    return o.select(o.eq(ax, 0.0), x, root)


def _pow_specials(o: FloatArithmetic, x, y, core):
    """Apply C99 pow's special cases to core = e^(y log|x|) (which already gives the right answer for
    x = 0, inf and y = +-inf with |x| != 1).

    pow(x, +-0) = 1 and pow(+1, y) = 1 even for NaN; pow(-1, +-inf) = 1; x < 0 finite with y not an
    integer is NaN; a negative x (or -0, -inf) with an odd integer y negates the result.
    """
    ay = o.abs(y)
    y_int = o.eq(o.floor(y), y)  # true for +-inf as well, which count as even
    half = o.mul(y, 0.5)
    y_odd = o.and_(y_int, o.cmp("!=", o.floor(half), half))
    x_neg = o.icmp("<", o.bits(x), 0)  # sign bit: -0 and -inf included
    r = o.select(o.and_(y_odd, x_neg), o.neg(core), core)
    ax = o.abs(x)
    neg_finite = o.and_(o.lt(x, 0.0), o.lt(ax, _INF))
    r = o.select(o.and_(neg_finite, o.not_(y_int)), _NAN, r)
    r = o.select(o.and_(o.eq(ax, 1.0), o.eq(ay, _INF)), 1.0, r)
    return o.select(o.or_(o.eq(x, 1.0), o.eq(y, 0.0)), 1.0, r)


def pow(o: FloatArithmetic, x, y):
    """x^y with C99 special cases. Max error 1 ulp (f32), 2 ulp (f64).

    f32: e^(y log|x|) evaluated in f64 (whose relative error, ~2^-50 even for results near the
    overflow threshold, is far below an f32 ulp), then rounded once. f64: log|x| as a double-double
    (error ~2^-64), y log|x| as a double-word, and an exp that takes the low word as a correction.
    """
    if not o.is64:
        w = o.wide()
        xd, yd = o.widen(x), o.widen(y)
        lg = _log_specials(w, w.abs(xd), _log_f64(w, w.abs(xd)))
        core = _exp_dd(w, w.mul(yd, lg))
        return o.narrow(_pow_specials(w, xd, yd, core))
    ax = o.abs(x)
    hi, lo = _log_dd_f64(o, ax)
    finite = o.and_(o.gt(ax, 0.0), o.lt(ax, _INF))
    hi = _log_specials(o, ax, hi)
    lo = o.select(finite, lo, 0.0)
    t = o.mul(y, hi)
    t_lo = o.fma(y, lo, o.fma(y, hi, o.neg(t)))
    t_lo = o.select(o.lt(o.abs(t), _INF), t_lo, 0.0)
    return _pow_specials(o, x, y, _exp_dd(o, t, t_lo))


UNARY = {"exp": exp, "exp2": exp2, "log": log, "log2": log2, "sin": sin, "cos": cos, "tanh": tanh, "erf": erf,
         "sqrt": sqrt, "rsqrt": rsqrt, "cbrt": cbrt}
"""Every one-argument function by name (pow takes two): the `math.*` ops of dsl/ir/ops.py that are not
plain IEEE operations."""
