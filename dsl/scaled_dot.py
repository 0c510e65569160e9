"""`tl.dot_scaled`: microscaled (OCP MX) matrix products, as Triton defines them, built from tl ops.

Operands are e2m1 (two 4-bit values per uint8, the low nibble first, packed along K unless
`*_k_pack=False`), e4m3, e5m2 (uint8 or fp8 tensors), bf16 or fp16. A scale is uint8 E8M0, one per
group of K elements (`[M, K // group]` for lhs, `[N, K // group]` for rhs); it multiplies the operand
by 2^(s - 127), read as Triton does by placing s in the exponent field of an f32 (so s = 0 gives 0
and s = 255 gives inf). The decoded, scaled operands are multiplied in exact fp32 (`ieee`) and
added to `acc`; the result has `out_dtype`.
"""

from __future__ import annotations

from dsl import dtypes as T
from dsl.core import _swap_last, tensor, unwrap

FORMATS = {"e4m3": T.float8e4nv, "e5m2": T.float8e5, "bf16": T.bfloat16, "fp16": T.float16, "e2m1": None}


def dot_scaled(lhs, lhs_scale, lhs_format, rhs, rhs_scale, rhs_format, acc=None, fast_math=False,
               lhs_k_pack=True, rhs_k_pack=True, out_dtype=T.float32) -> tensor:
    from dsl import language as tl

    lhs, rhs = tl.to_tensor(lhs), tl.to_tensor(rhs)
    if lhs.type.rank not in (2, 3) or lhs.type.rank != rhs.type.rank:
        raise ValueError(f"dot_scaled: both inputs must be 2-D or 3-D, got {list(lhs.shape)} and {list(rhs.shape)}")
    a = _decode(lhs, unwrap(lhs_format), "lhs", axis=-1 if unwrap(lhs_k_pack) else -2, k_pack=unwrap(lhs_k_pack))
    b = _decode(rhs, unwrap(rhs_format), "rhs", axis=-2 if unwrap(rhs_k_pack) else -1, k_pack=unwrap(rhs_k_pack))
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"dot_scaled: reduction dimension should pack the same number of elements; "
                         f"(lhs: {list(lhs.shape)} vs rhs: {list(rhs.shape)})")
    lhs_scale, rhs_scale = unwrap(lhs_scale), unwrap(rhs_scale)
    if lhs_scale is not None:
        a = a * _expand_scale(tl.to_tensor(lhs_scale), a.shape[-1])
    if rhs_scale is not None:
        scale = _expand_scale(tl.to_tensor(rhs_scale), b.shape[-2])  # [.., N, K]
        b = b * tl.permute(scale, _swap_last(scale.type.rank))
    if acc is not None:
        acc = tl.to_tensor(acc).to(T.float32)
    out = tl.dot(a, b, acc, input_precision="ieee")
    out_dtype = unwrap(out_dtype)
    return out if out_dtype == T.float32 else out.to(out_dtype)


def _decode(x: tensor, fmt: str, which: str, axis: int, k_pack: bool) -> tensor:
    """The operand as fp32 values (e2m1 unpacked along `axis`)."""
    if fmt not in FORMATS:
        raise ValueError(f"dot_scaled: NYI: {which}_format {fmt} (one of {', '.join(FORMATS)})")
    if not k_pack and fmt != "e2m1":
        raise ValueError("dot_scaled: only mxfp4 inputs can be packed along a dimension different than K")
    if fmt == "e2m1":
        if x.dtype != T.uint8:
            raise TypeError(f"dot_scaled: e2m1 format must be packed as uint8. Got {x.dtype}")
        return _unpack_e2m1(x, axis % x.type.rank)
    target = FORMATS[fmt]
    if x.dtype != target:
        storage = T.uint8 if target.primitive_bitwidth == 8 else T.uint16
        if x.dtype != storage:
            raise TypeError(f"dot_scaled: unexpected dtype for {fmt}. Got {x.dtype}")
        x = x.to(target, bitcast=True)
    return x.to(T.float32)


def _unpack_e2m1(x: tensor, axis: int) -> tensor:
    """Two E2M1 values per byte (low nibble first) -> fp32, doubling `axis`."""
    from dsl import language as tl

    low, high = _e2m1_value(x & 0xF), _e2m1_value(x >> 4)
    pair = tl.join(low, high)  # [..., 2]: the two values of a byte side by side
    rank = x.type.rank
    order = [d for d in range(rank) if d <= axis] + [rank] + [d for d in range(rank) if d > axis]
    shape = list(x.shape)
    shape[axis] *= 2
    return tl.reshape(tl.permute(pair, order), shape)


def _e2m1_value(code: tensor) -> tensor:
    """fp32 value of 4-bit E2M1 codes: sign, 2 exponent bits (bias 1), 1 mantissa bit; no inf or NaN."""
    from dsl import language as tl

    exponent, mantissa = (code >> 1) & 3, (code & 1).to(T.float32)
    subnormal = mantissa * 0.5
    power = tl.where(exponent == 1, 1.0, tl.where(exponent == 2, 2.0, 4.0))
    magnitude = tl.where(exponent == 0, subnormal, (1.0 + mantissa * 0.5) * power)
    return tl.where((code & 8) != 0, -magnitude, magnitude)


def _expand_scale(scale: tensor, k: int) -> tensor:
    """E8M0 scales [..., K / group] -> fp32 factors [..., K], each repeated over its group."""
    from dsl import language as tl

    if scale.dtype not in (T.uint8, T.int8):
        raise TypeError(f"dot_scaled: scales are uint8 E8M0 codes, got {scale.dtype}")
    factor = ((scale.to(T.uint8, bitcast=True).to(T.int32)) << 23).to(T.float32, bitcast=True)
    groups = scale.shape[-1]
    if k % groups:
        raise ValueError(f"dot_scaled: K={k} is not a multiple of the {groups} scale groups")
    shape = list(scale.shape)
    spread = tl.broadcast_to(tl.expand_dims(factor, scale.type.rank), shape + [k // groups])
    return tl.reshape(spread, shape[:-1] + [k])

