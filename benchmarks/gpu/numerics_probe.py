"""Probe the GPU's numerics with real Triton on an NVIDIA GPU, and save them as data for wavetile's tests.

Run on a machine with a CUDA GPU, torch and triton: python benchmarks/gpu/numerics_probe.py OUT.json
It records what tl.dot does to fp32 operands under each input_precision, narrow-float conversions
(overflow, NaN, ties), integer edge cases (division by zero, INT_MIN // -1, wide shifts),
float-to-int conversion of out-of-range values, tl.sum's rounding on order-sensitive data,
tl.randint's stream, and the error of tl.exp. Inputs are fixed by a seed so wavetile can replay them.
"""

import json
import sys

import numpy as np
import torch
import triton
import triton.language as tl

dev = "cuda"
rng = np.random.default_rng(1234)


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, N: tl.constexpr, PREC: tl.constexpr):
    r = tl.arange(0, N)
    a = tl.load(a_ptr + r[:, None] * N + r[None, :])
    b = tl.load(b_ptr + r[:, None] * N + r[None, :])
    tl.store(c_ptr + r[:, None] * N + r[None, :], tl.dot(a, b, input_precision=PREC))


def probe_dot():
    n = 32
    a = rng.standard_normal((n, n)).astype(np.float32)
    eye = np.eye(n, dtype=np.float32)
    out = {"a": a.tolist()}
    for prec in ("tf32", "tf32x3", "ieee"):
        c = torch.empty((n, n), device=dev, dtype=torch.float32)
        dot_kernel[(1,)](torch.tensor(a, device=dev), torch.tensor(eye, device=dev), c, N=n, PREC=prec)
        out[f"a_times_identity_{prec}"] = c.cpu().numpy().tolist()
    b = rng.standard_normal((n, n)).astype(np.float32)
    for prec in ("tf32", "tf32x3", "ieee"):
        c = torch.empty((n, n), device=dev, dtype=torch.float32)
        dot_kernel[(1,)](torch.tensor(a, device=dev), torch.tensor(b, device=dev), c, N=n, PREC=prec)
        out[f"a_times_b_{prec}"] = c.cpu().numpy().tolist()
    out["b"] = b.tolist()
    return out


@triton.jit
def cast_kernel(x_ptr, h_ptr, bf_ptr, e4_ptr, e5_ptr, i_ptr, u_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    m = r < n
    x = tl.load(x_ptr + r, mask=m)
    tl.store(h_ptr + r, x.to(tl.float16).to(tl.uint16, bitcast=True), mask=m)
    tl.store(bf_ptr + r, x.to(tl.bfloat16).to(tl.uint16, bitcast=True), mask=m)
    tl.store(e4_ptr + r, x.to(tl.float8e4nv).to(tl.uint8, bitcast=True), mask=m)
    tl.store(e5_ptr + r, x.to(tl.float8e5).to(tl.uint8, bitcast=True), mask=m)
    tl.store(i_ptr + r, x.to(tl.int32), mask=m)
    tl.store(u_ptr + r, x.to(tl.uint32), mask=m)


def probe_casts():
    special = [0.0, -0.0, 1.0, -1.0, 65504.0, 65520.0, 70000.0, 1e9, -1e9, 3e38, 448.0, 464.0, 500.0, 57344.0,
               61440.0, 1e5, float("inf"), float("-inf"), float("nan"), 1e-8, 6e-8, 2.9e-8, 1 + 2**-11, 1 + 3 * 2**-11,
               2.5, -2.5, 4294967296.0, 3e9, -3e9, 2147483647.0, 2147483648.0]
    x = np.array(special + list(rng.standard_normal(200) * 10 ** rng.uniform(-6, 6, 200)), dtype=np.float32)
    n = x.size
    block = triton.next_power_of_2(n)
    xt = torch.tensor(x, device=dev)
    outs = [torch.empty(n, device=dev, dtype=d) for d in
            (torch.int16, torch.int16, torch.uint8, torch.uint8, torch.int32, torch.int64)]
    outs[5] = torch.empty(n, device=dev, dtype=torch.int32)
    cast_kernel[(1,)](xt, *outs, n, BLOCK=block)
    names = ["fp16_bits", "bf16_bits", "fp8e4nv_bits", "fp8e5_bits", "int32", "uint32_as_int32"]
    result = {"x": [repr(float(v)) for v in x]}
    for name, o in zip(names, outs):
        v = o.cpu().numpy()
        if name.endswith("bits") and v.dtype == np.int16:
            v = v.view(np.uint16)
        result[name] = v.astype(np.int64).tolist()
    return result


@triton.jit
def int_kernel(a_ptr, b_ptr, div_ptr, rem_ptr, shl_ptr, shr_ptr, ushr_ptr, n, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    m = r < n
    a = tl.load(a_ptr + r, mask=m)
    b = tl.load(b_ptr + r, mask=m)
    tl.store(div_ptr + r, a // b, mask=m)
    tl.store(rem_ptr + r, a % b, mask=m)
    tl.store(shl_ptr + r, a << b, mask=m)
    tl.store(shr_ptr + r, a >> b, mask=m)
    tl.store(ushr_ptr + r, (a.to(tl.uint32, bitcast=True) >> b.to(tl.uint32, bitcast=True)).to(tl.int32, bitcast=True),
             mask=m)


def probe_ints():
    pairs = [(7, 0), (-7, 0), (0, 0), (-2**31, -1), (-2**31, 0), (7, 2), (-7, 2), (7, -2), (-7, -2), (1, 31),
             (1, 32), (1, 33), (-8, 32), (-8, 40), (5, -1), (-8, 1), (2**31 - 1, 1)]
    a = np.array([p[0] for p in pairs], np.int32)
    b = np.array([p[1] for p in pairs], np.int32)
    n = a.size
    outs = [torch.empty(n, device=dev, dtype=torch.int32) for _ in range(5)]
    int_kernel[(1,)](torch.tensor(a, device=dev), torch.tensor(b, device=dev), *outs, n, BLOCK=32)
    result = {"a": a.tolist(), "b": b.tolist()}
    for name, o in zip(["floordiv", "mod", "shl", "shr", "ushr"], outs):
        result[name] = o.cpu().numpy().tolist()
    return result


@triton.jit
def sum_kernel(x_ptr, out_ptr, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(out_ptr + tl.program_id(0), tl.sum(tl.load(x_ptr + tl.program_id(0) * N + r), axis=0))


def probe_sum():
    rows, n = 64, 1024
    x = (rng.standard_normal((rows, n)) * 10 ** rng.uniform(-3, 3, (rows, n))).astype(np.float32)
    out = {"x": x.tolist()}
    for warps in (1, 4, 8):
        o = torch.empty(rows, device=dev, dtype=torch.float32)
        sum_kernel[(rows,)](torch.tensor(x, device=dev), o, N=n, num_warps=warps)
        out[f"sum_num_warps_{warps}"] = o.cpu().numpy().tolist()
    return out


@triton.jit
def rand_kernel(out_ptr, f_ptr, seed, N: tl.constexpr):
    r = tl.arange(0, N)
    tl.store(out_ptr + r, tl.randint(seed, r).to(tl.int32, bitcast=True))
    tl.store(f_ptr + r, tl.rand(seed, r))


@triton.jit
def exp_kernel(x_ptr, y_ptr, N: tl.constexpr):
    r = tl.program_id(0) * N + tl.arange(0, N)
    x = tl.load(x_ptr + r)
    tl.store(y_ptr + r, tl.exp(x))


def probe_rand_exp():
    seed = 123456789
    o = torch.empty(1024, device=dev, dtype=torch.int32)
    f = torch.empty(1024, device=dev, dtype=torch.float32)
    rand_kernel[(1,)](o, f, seed, N=1024)
    x = rng.uniform(-80, 80, 1 << 20).astype(np.float32)
    y = torch.empty_like(torch.tensor(x, device=dev))
    exp_kernel[(x.size // 1024,)](torch.tensor(x, device=dev), y, N=1024)
    ref = np.exp(x.astype(np.float64))
    got = y.cpu().numpy().astype(np.float64)
    ulp = np.abs(got - ref) / np.spacing(ref.astype(np.float32)).astype(np.float64)
    return {"seed": seed, "randint": o.cpu().numpy().astype(np.int64).tolist(), "rand": f.cpu().numpy().tolist(),
            "exp_max_ulp": float(ulp.max()), "exp_mean_ulp": float(ulp.mean())}


def main():
    data = {"device": torch.cuda.get_device_name(), "triton": triton.__version__, "torch": torch.__version__,
            "dot": probe_dot(), "casts": probe_casts(), "ints": probe_ints(), "sum": probe_sum(),
            "rand_exp": probe_rand_exp()}
    with open(sys.argv[1], "w") as f:
        json.dump(data, f)
    print("saved", sys.argv[1], "exp max ulp", data["rand_exp"]["exp_max_ulp"])


if __name__ == "__main__":
    main()
