"""Calibration: measure a real GPU's cost-model parameters with microbenchmarks (§4.3 step 6).

Run on a machine with a CUDA GPU, torch and triton:  python -m simulator.calibrate [out.json]
It prints, and writes as JSON, the values to put into that machine's spec table (presets.py):
dram_efficiency (large copy), l2_reread_bytes_per_s (L2-resident re-reads, L1 bypassed; for reference: the
spec's l2_bytes_per_s is an async copy's, benchmarks/gpu/l2_bandwidth.py and l2_peaks),
dram_chase_cycles and l2_chase_cycles (pointer chases through DRAM and through L2, for reference),
launch_overhead_s (an empty kernel timed like a user would), barrier_cycles (back-to-back
barriers of 4 warps), tensor_efficiency (large bf16 GEMM) and atomic_serial_cycles (atomics to one
address). `--fit-atomics PATTERNS.json` turns benchmarks/gpu/atomic_patterns.py's times into the atomic rates
(fit_atomics).
`--curve OUT.json` measures achieved bandwidth against bytes in flight per unit (concurrency_curve) and
`--fit-curve CURVE.json` turns such a curve into the round-trip fields (dram_round_cycles, l2_round_cycles,
l2_load_bytes_per_s, the queue exponents). Nothing else in the simulator imports this module: the simulator
itself needs neither torch nor a GPU.
"""

from __future__ import annotations

import json
import sys


def seconds_per_call(fn, iters: int = 50) -> float:
    """Seconds per call of `fn` (after one warm-up call), timed with CUDA events and no cache flush between calls
    (do_bench flushes the L2, which an L2-resident measurement must not)."""
    import torch

    fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(iters):
        fn()
    stop.record()
    torch.cuda.synchronize()
    return start.elapsed_time(stop) * 1e-3 / iters


def measure(clock_hz: float | None = None) -> dict[str, float]:
    """Run every microbenchmark; a failing one is reported as an error string, not raised."""
    import torch
    import triton
    import triton.language as tl
    from triton.testing import do_bench

    props = torch.cuda.get_device_properties(0)
    units = props.multi_processor_count
    clock = clock_hz or 1.98e9
    out: dict[str, float] = {"units": units, "clock_hz": clock, "l2_bytes": props.L2_cache_size}

    @triton.jit
    def reread(src, dst, nblocks, REPS: tl.constexpr, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        grid = tl.num_programs(0)
        acc = tl.zeros([BLOCK], tl.float32)
        for r in range(REPS):
            block = (pid + r * grid) % nblocks
            acc += tl.load(src + block * BLOCK + tl.arange(0, BLOCK), cache_modifier=".cg")
        tl.store(dst + pid * BLOCK + tl.arange(0, BLOCK), acc)

    @triton.jit
    def chase(nxt, dst, STEPS: tl.constexpr):
        idx = tl.load(nxt)
        for _ in range(STEPS):
            idx = tl.load(nxt + idx, cache_modifier=".cg")
        tl.store(dst, idx)

    @triton.jit
    def barriers(dst, STEPS: tl.constexpr):
        for _ in range(STEPS):
            tl.debug_barrier()
        tl.store(dst, 1)

    @triton.jit
    def empty(dst):
        pass

    @triton.jit
    def atomics(dst, n, spread, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.atomic_add(dst + (offs % spread), 1.0, mask=offs < n)

    def run(name, fn):
        try:
            out.update(fn())
        except Exception as exc:  # noqa: BLE001 - report and go on with the other measurements
            out[name + "_error"] = repr(exc)

    def dram():
        x = torch.empty(1 << 28, dtype=torch.float32, device="cuda")  # 1 GiB
        y = torch.empty_like(x)
        ms = do_bench(lambda: y.copy_(x), warmup=50, rep=300)
        bw = 2 * x.numel() * 4 / (ms * 1e-3)
        return {"dram_copy_bytes_per_s": bw}

    def l2():
        best = 0.0
        src = torch.randn(4 << 20, device="cuda")  # 16 MiB: L2-resident, re-read with L1 bypassed
        for block, warps, per_unit in ((1024, 4, 8), (2048, 8, 8), (1024, 4, 16), (4096, 8, 4)):
            reps, grid = 256, units * per_unit
            dst = torch.empty(grid * block, device="cuda")
            nblocks = src.numel() // block
            seconds = seconds_per_call(lambda: reread[(grid,)](src, dst, nblocks, REPS=reps, BLOCK=block,
                                                               num_warps=warps))
            best = max(best, grid * reps * block * 4 / seconds)
        return {"l2_reread_bytes_per_s": best}

    def latency(region_bytes, flush, steps=4096):
        n = region_bytes // 8
        stride = 32  # 256 B between visited elements: every step a new line
        slots = torch.randperm(n // stride, device="cuda") * stride
        nxt = torch.zeros(n, dtype=torch.int64, device="cuda")
        nxt[slots] = torch.roll(slots, -1)
        dst = torch.zeros(1, dtype=torch.int64, device="cuda")
        call = lambda: chase[(1,)](nxt, dst, STEPS=steps, num_warps=1)  # noqa: E731
        seconds = do_bench(call, warmup=3, rep=50) * 1e-3 if flush else seconds_per_call(call, iters=20)
        return seconds / steps * clock

    run("dram", dram)
    run("l2", l2)
    # do_bench flushes L2 before each call, so the first chain misses every step (TLB misses
    # included over 2 GiB); the second repeats a 4096-line chain without a flush and hits L2
    run("latency", lambda: {"dram_chase_cycles": latency(2 << 30, flush=True),
                            "l2_chase_cycles": latency(4 << 20, flush=False)})

    def launch():
        dst = torch.empty(1, device="cuda")
        return {"launch_overhead_s": do_bench(lambda: empty[(1,)](dst), warmup=100, rep=500) * 1e-3}

    def gemm():
        a = torch.randn(8192, 8192, dtype=torch.bfloat16, device="cuda")
        b = torch.randn_like(a)
        ms = do_bench(lambda: a @ b, warmup=10, rep=200)
        return {"bf16_gemm_flops": 2 * 8192**3 / (ms * 1e-3)}

    def atomic():
        n, block = 1 << 26, 1024
        dst = torch.zeros(n, device="cuda")
        grid = (n // block,)
        distinct = do_bench(lambda: atomics[grid](dst, n, n, BLOCK=block), warmup=10, rep=100) * 1e-3
        hot = torch.zeros(1, device="cuda")
        m = 1 << 22
        one = do_bench(lambda: atomics[(m // block,)](hot, m, 1, BLOCK=block), warmup=3, rep=30) * 1e-3
        return {"atomic_ops_per_s": n / distinct, "same_address_ops_per_s": m / one}

    def barrier():
        dst = torch.empty(1, device="cuda")
        steps = 1 << 16
        seconds = seconds_per_call(lambda: barriers[(1,)](dst, STEPS=steps, num_warps=4), iters=10)
        return {"barrier_cycles": seconds / steps * clock}

    run("launch", launch)
    run("barrier", barrier)
    run("gemm", gemm)
    run("atomic", atomic)
    return out


def concurrency_curve(units: int | None = None) -> list[dict[str, float]]:
    """Achieved bandwidth against the bytes each unit keeps in flight: Little's law on the real chip.

    Each program walks its own slice of a buffer in rounds of BLOCK elements, one round in flight at a time
    (a loop without tl.dot and without a num_stages hint is not software-pipelined), or `stages - 1` rounds
    ahead with tl.range(num_stages=stages). Varying programs per unit, warps and BLOCK varies the bytes in
    flight per unit; from DRAM (1 GiB, L2 flushed) and from the L2 (a 16 MiB slice re-read, no flush)."""
    import torch
    import triton
    import triton.language as tl
    from triton.testing import do_bench

    @triton.jit
    def rounds(src, dst, chunks, span, BLOCK: tl.constexpr):
        pid = tl.program_id(0)
        acc = tl.zeros([BLOCK], tl.float32)
        for i in range(chunks):
            start = ((pid.to(tl.int64) * chunks + i) * BLOCK) % span
            acc += tl.load(src + start + tl.arange(0, BLOCK))
        tl.store(dst + pid * BLOCK + tl.arange(0, BLOCK), acc)

    @triton.jit
    def pipelined(src, dst, chunks, span, BLOCK: tl.constexpr, STAGES: tl.constexpr):
        pid = tl.program_id(0)
        acc = tl.zeros([BLOCK], tl.float32)
        for i in tl.range(0, chunks, num_stages=STAGES):
            start = ((pid.to(tl.int64) * chunks + i) * BLOCK) % span
            acc += tl.load(src + start + tl.arange(0, BLOCK))
        tl.store(dst + pid * BLOCK + tl.arange(0, BLOCK), acc)

    units = units or torch.cuda.get_device_properties(0).multi_processor_count
    total = 1 << 28  # fp32 elements: 1 GiB
    src = torch.randn(total, device="cuda")
    points = []
    for source, span in (("dram", total), ("l2", 4 << 20)):
        for warps in (1, 4, 8):
            for vectors in (1, 2, 4):
                block = 32 * warps * 4 * vectors  # 16-byte loads, `vectors` per thread per round
                for per_unit in (1, 2, 4, 8, 16, 32):
                    if per_unit * warps > 64:
                        continue
                    for stages in ((1, 3) if source == "dram" and vectors == 1 else (1,)):
                        grid = units * per_unit
                        chunks = max(4, (total if source == "dram" else total // 4) // (grid * block))
                        dst = torch.empty(grid * block, device="cuda")
                        if stages == 1:
                            call = lambda: rounds[(grid,)](src, dst, chunks, span, BLOCK=block,  # noqa: E731
                                                           num_warps=warps)
                        else:
                            call = lambda: pipelined[(grid,)](src, dst, chunks, span, BLOCK=block,  # noqa: E731
                                                              STAGES=stages, num_warps=warps)
                        seconds = do_bench(call, warmup=5, rep=40) * 1e-3
                        moved = grid * chunks * block * 4
                        points.append({"source": source, "num_warps": warps, "bytes_per_round": block * 4,
                                       "programs_per_unit": per_unit, "stages": stages, "bytes": moved,
                                       "seconds": seconds, "bytes_per_s": moved / seconds,
                                       "in_flight_per_unit": per_unit * block * 4 * max(1, stages - 1)})
    return points


def fit_atomics(points: list[dict], units: int, clock_hz: float, l2_bytes: int, max_programs_per_unit: int,
                launch_overhead_s: float) -> dict[str, float]:
    """Atomic parameters from benchmarks/gpu/atomic_patterns.py's points (times less the launch overhead).

    Spread over many L2-resident lines, a fenced launch takes ops / atomic_ops_per_clk + line requests /
    atomic_line_requests_per_clk (least squares over the points of 2+ warps a program); relaxed points give
    the two relaxed rates the same way. Where the time is well above that (1.5x), the requests to the hottest
    line set it: atomic_line_cycles is the median time per request to it over those patterns. Programs of one warp
    hold too few warps to reach either rate: their time gives a fenced atomic's round trip, atomic_round_cycles."""
    import numpy as np

    def seconds(p: dict) -> float:
        return p["seconds"] - launch_overhead_s

    timed = [p for p in points if "seconds" in p]
    spread = [p for p in timed if p["lines"] >= 4096 and p["lines"] * 128 <= l2_bytes and p["warps"] >= 2
              and p["reps"] > 1]

    def rates(chosen: list[dict]) -> tuple[float, float]:
        a = np.array([[p["total"], p["line_requests"]] for p in chosen], dtype=float)
        return tuple(np.linalg.lstsq(a, np.array([seconds(p) for p in chosen]), rcond=None)[0])

    fits = {sem: rates([p for p in spread if (p["sem"] == "relaxed") == (sem == "relaxed")])
            for sem in ("fenced", "relaxed")}

    def throughput(p: dict) -> float:
        per_op, per_line = fits["relaxed" if p["sem"] == "relaxed" else "fenced"]
        return p["total"] * per_op + p["line_requests"] * per_line

    base = [p for p in timed if p["warps"] == 4 and p["unroll"] == 1 and p["reps"] == 8 and p["sem"] != "relaxed"
            and not p["use_old"] and p["lines"] * 128 <= l2_bytes]
    hot = [seconds(p) / p["hottest_line_requests"] for p in base if seconds(p) > 1.5 * throughput(p)]
    line_cycles = float(np.median(hot)) * clock_hz
    round_trips = []
    for p in timed:
        bound = max(throughput(p), p["hottest_line_requests"] * line_cycles / clock_hz)
        if p["warps"] == 1 and seconds(p) > 1.2 * bound:
            programs = p["total"] // (32 * p["unroll"] * p["reps"])
            rounds = programs / (units * max_programs_per_unit)  # each resident warp's atomics, one after another
            round_trips.append(seconds(p) * clock_hz / (rounds * p["unroll"] * p["reps"]))
    fitted = {"atomic_ops_per_clk": 1 / (fits["fenced"][0] * clock_hz),
              "atomic_line_requests_per_clk": 1 / (fits["fenced"][1] * clock_hz),
              "atomic_relaxed_ops_per_clk": 1 / (fits["relaxed"][0] * clock_hz),
              "atomic_relaxed_line_requests_per_clk": 1 / (fits["relaxed"][1] * clock_hz),
              "atomic_line_cycles": line_cycles, "hot_line_patterns": len(hot)}
    if round_trips:
        fitted["atomic_round_cycles"] = float(np.median(round_trips))
    return {key: round(value, 1) if isinstance(value, float) else value for key, value in fitted.items()}


def l2_peaks(points: list[dict]) -> dict[str, float]:
    """The highest rate benchmarks/gpu/l2_bandwidth.py measured for each way of reading the L2: plain .cg loads
    ("cg"), loads a pipelined loop copies asynchronously ("staged"), plain loads through the L1 that every program
    makes of its own blocks ("ld_own") or that 4-16 programs make of the same block at once ("ld_shared"), and a dot's
    operand tiles read by every program on its own ("dot_own"), by 2-4 programs at once ("dot_shared_2_4") and by
    8-16 ("dot_shared_8_16")."""
    def group(p: dict) -> str:
        share = p.get("share", 1)
        if p["kind"] == "ld":
            return "ld_own" if share == 1 else "ld_shared"
        if p["kind"] != "dot":
            return p["kind"]
        return "dot_own" if share == 1 else "dot_shared_2_4" if share <= 4 else "dot_shared_8_16"

    peaks: dict[str, float] = {}
    for p in points:
        if "bytes_per_s" in p:
            peaks[group(p)] = max(peaks.get(group(p), 0.0), p["bytes_per_s"])
    return peaks


def program_starts(points: list[dict], smallest: int = 1 << 16) -> dict[tuple[str, int], float]:
    """Seconds the GPU takes per program started, per (kernel, num_warps) that benchmarks/gpu/dispatch_rate.py
    launched: the least-squares slope of time over grids of `smallest` programs and more, where the launch's fixed
    cost no longer dominates."""
    import numpy as np

    slopes = {}
    for key in sorted({(p["kernel"], p["num_warps"]) for p in points}):
        chosen = [p for p in points if (p["kernel"], p["num_warps"]) == key and p["programs"] >= smallest]
        slopes[key] = float(np.polyfit([p["programs"] for p in chosen], [p["seconds"] for p in chosen], 1)[0])
    return slopes


def fit_curve(points: list[dict[str, float]], units: int, clock_hz: float) -> dict[str, float]:
    """Round-trip parameters from concurrency_curve's points, per source ("dram", "l2"): the unloaded round trip
    L (cycles), the bandwidth B and the exponent p of round = (L^p + (units x in_flight / B)^p)^(1/p) that fit the
    achieved bandwidths best (median log error; a grid search, so the same data always give the same values)."""
    import numpy as np

    fitted = {}
    for source, prefix in (("dram", "dram"), ("l2", "l2")):
        chosen = [p for p in points if p["source"] == source]
        if not chosen:
            continue
        in_flight = units * np.array([p["in_flight_per_unit"] for p in chosen], dtype=float)
        achieved = np.array([p["bytes_per_s"] for p in chosen])
        top = float(achieved.max())
        latencies = np.arange(100e-9, 1500e-9, 5e-9)[:, None]
        best = None
        for exponent in (1.0, 1.5, 2.0, 2.5, 3.0, 4.0):
            for peak in top * np.arange(1.0, 1.6, 0.025):
                rounds = (latencies ** exponent + (in_flight / peak) ** exponent) ** (1 / exponent)
                errors = np.median(np.abs(np.log(in_flight / rounds / achieved)), axis=1)
                at = int(errors.argmin())
                if best is None or errors[at] < best[0]:
                    best = (float(errors[at]), float(latencies[at, 0]), exponent, float(peak))
        error, latency, exponent, peak = best
        fitted.update({f"{prefix}_round_cycles": round(latency * clock_hz), f"{prefix}_queue_exponent": exponent,
                       f"{prefix}_round_bytes_per_s": peak, f"{prefix}_round_fit_error": error})
    return fitted


def derive(raw: dict[str, float], dram_peak: float, tensor_peak: float) -> dict[str, float]:
    """Spec values from the raw measurements."""
    clock = raw["clock_hz"]
    spec = {}
    if "dram_copy_bytes_per_s" in raw:
        spec["dram_efficiency"] = raw["dram_copy_bytes_per_s"] / dram_peak
    for key in ("launch_overhead_s", "barrier_cycles"):
        if key in raw:
            spec[key] = raw[key]
    if "bf16_gemm_flops" in raw:
        spec["tensor_efficiency"] = raw["bf16_gemm_flops"] / tensor_peak
    if "same_address_ops_per_s" in raw:
        spec["atomic_serial_cycles"] = clock / raw["same_address_ops_per_s"]
    return spec


def main(argv: list[str]) -> None:
    from simulator.specs import get_spec

    if argv[:1] == ["--fit-curve"]:  # python -m simulator.calibrate --fit-curve CURVE.json: the spec values
        h200 = get_spec("h200")
        with open(argv[1], encoding="utf-8") as f:
            print(json.dumps(fit_curve(json.load(f), h200.units, h200.clock_hz), indent=2))
        return
    if argv[:1] == ["--fit-atomics"]:  # python -m simulator.calibrate --fit-atomics PATTERNS.json: the spec values
        h200 = get_spec("h200")
        with open(argv[1], encoding="utf-8") as f:
            points = json.load(f)["points"]
        print(json.dumps(fit_atomics(points, h200.units, h200.clock_hz, h200.l2_bytes, h200.max_programs_per_unit,
                                     h200.launch_overhead_s), indent=2))
        return
    if argv[:1] == ["--curve"]:  # python -m simulator.calibrate --curve OUT.json
        points = concurrency_curve()
        for p in points:
            print(f"{p['source']:4s} warps {p['num_warps']:2d} round {p['bytes_per_round']:6d} B "
                  f"x{p['programs_per_unit']:2d}/unit stages {p['stages']}: {p['bytes_per_s'] / 1e12:.2f} TB/s")
        with open(argv[1], "w", encoding="utf-8") as f:
            json.dump(points, f, indent=1)
        return

    h200 = get_spec("h200")
    raw = measure(h200.clock_hz)
    result = {"raw": raw, "spec": derive(raw, h200.dram_bytes_per_s, h200.peak_tensor_flops("bf16"))}
    print(json.dumps(result, indent=2))
    if argv:
        with open(argv[0], "w", encoding="utf-8") as f:
            json.dump(result, f, indent=2)


if __name__ == "__main__":
    main(sys.argv[1:])
