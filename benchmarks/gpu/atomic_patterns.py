"""Atomic-add throughput by the pattern of addresses, on a real GPU: what limits a kernel of scattered atomics.

atomic_sectors.py timed warp instructions that each add to one line. A histogram's instruction touches up to 32
lines and a scatter-add's table may be far larger than the L2; which of these sets the rate decides how the cost
model charges atomics. Each point adds 2^24 ones (fp32) with warp instructions whose 32 lanes are 32 consecutive
elements e; lanes come in groups of GROUP that share a slot, the slot is a hash of e // GROUP (or e // GROUP
itself, `hashed` false) modulo SLOTS, and the address is slot * STRIDE + e % GROUP. STRIDE 32 makes slots whole
lines (32 / GROUP lines an instruction); STRIDE 1 makes them single counters (a histogram of SLOTS bins). Programs
have W warps (one element a lane) and issue UNROLL independent instructions per iteration of a loop of REPS. The
exact lines, addresses and collisions of every instruction are counted on the host with the same arithmetic.

Run on a machine with a CUDA GPU, torch and triton:
    python benchmarks/gpu/atomic_patterns.py OUT.json [--cases CASE ...]
--cases also writes, for those sweep cases' configs, the atomic and fence opcodes of Triton's machine code.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

TOTAL = 1 << 24
HASH = -1640531535  # 0x9E3779B1 as a signed 32-bit integer: Fibonacci hashing
OPCODES = ("RED", "ATOM", "ATOMG", "ATOMS", "MEMBAR", "FENCE", "ERRBAR", "CCTL")


@functools.lru_cache(maxsize=1)
def addresses(group: int, slots: int, stride: int, hashed: bool) -> np.ndarray:
    """Element offsets of all TOTAL adds, in lane order, by the kernel's arithmetic (32-bit wrap-around)."""
    e = np.arange(TOTAL, dtype=np.int64)
    key = e // group
    if hashed:
        key = ((key * HASH) & 0xFFFFFFFF) & 0x7FFFFFFF
    return (key % slots) * stride + e % group


def pattern_counts(offsets: np.ndarray) -> dict:
    """Per warp instruction (32 consecutive adds): distinct 128-byte lines, distinct addresses; launch-wide: lines,
    the requests to the line that gets most, the adds to the address that gets most."""
    lanes = offsets.reshape(-1, 32)
    lines = np.sort(lanes // 32, axis=1)
    words = np.sort(lanes, axis=1)
    fresh = np.ones(lines.shape, bool)  # the first lane of each distinct line in a sorted row
    fresh[:, 1:] = np.diff(lines, axis=1) != 0
    distinct_lines = fresh.sum(axis=1)
    distinct_words = 1 + (np.diff(words, axis=1) != 0).sum(axis=1)
    return {"lines_per_instruction": float(distinct_lines.mean()),
            "addresses_per_instruction": float(distinct_words.mean()),
            "line_requests": int(distinct_lines.sum()),
            "lines": int(np.count_nonzero(np.bincount(offsets // 32))),
            "hottest_line_requests": int(np.bincount(lines[fresh]).max()),
            "hottest_address_adds": int(np.bincount(offsets).max())}


def points() -> list[dict]:
    """The patterns and launch shapes to time."""
    out = []
    base = {"stride": 32, "hashed": True, "warps": 4, "unroll": 1, "reps": 8, "use_old": False, "sem": "acq_rel"}
    for slots in (128, 4096, 1 << 17, 1 << 21):  # lines: 16 KB, 512 KB, 16 MB, 256 MB tables
        for group in (32, 8, 4, 2, 1):
            out.append(dict(base, group=group, slots=slots))
    for bins in (32, 256, 1000, 4096, 65536, 1 << 20):  # a histogram's bins
        out.append(dict(base, group=1, slots=bins, stride=1))
    out.append(dict(base, group=32, slots=1 << 21, hashed=False))  # whole lines in order: a dense scatter-add
    for group, slots in ((32, 1 << 17), (1, 4096), (1, 1000)):
        shape = dict(base, group=group, slots=slots, stride=1 if slots == 1000 else 32)
        for warps in (1, 2, 8):
            out.append(dict(shape, warps=warps))
        for unroll, reps in ((4, 2), (16, 1)):
            out.append(dict(shape, unroll=unroll, reps=reps))
        out.append(dict(shape, reps=1))
        out.append(dict(shape, sem="relaxed"))
        out.append(dict(shape, use_old=True))
    return out


def sass_opcodes(cubin: bytes) -> dict:
    """How many of each atomic or fence opcode the machine code has (by the opcode's first word)."""
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        sass = subprocess.run(["cuobjdump", "-sass", f.name], capture_output=True, text=True, check=True).stdout
    counts: dict[str, int] = {}
    for line in sass.splitlines():
        if "/*" not in line or ";" not in line:
            continue
        text = line.split("*/", 1)[-1].strip()
        words = text.split()
        if words and words[0].startswith("@"):
            words = words[1:]
        if words:
            name = words[0]
            if name.split(".")[0] in OPCODES:
                counts[name] = counts.get(name, 0) + 1
    return counts


def time_points(out_path: str) -> None:
    import torch
    import triton
    import triton.language as tl
    from triton.testing import do_bench

    @triton.jit
    def scatter_add(dst, old, REPS, GROUP: tl.constexpr, SLOTS: tl.constexpr, STRIDE: tl.constexpr,
                    HASHED: tl.constexpr, BLOCK: tl.constexpr, UNROLL: tl.constexpr, USE_OLD: tl.constexpr,
                    SEM: tl.constexpr):
        first = tl.program_id(0) * REPS * UNROLL * BLOCK
        total = tl.zeros([BLOCK], tl.float32)
        for r in range(REPS):
            for u in tl.static_range(UNROLL):
                e = first + (r * UNROLL + u) * BLOCK + tl.arange(0, BLOCK)
                key = e // GROUP
                if HASHED:
                    key = (key * -1640531535) & 0x7FFFFFFF
                offs = (key % SLOTS) * STRIDE + e % GROUP
                got = tl.atomic_add(dst + offs, 1.0, sem=SEM)
                if USE_OLD:
                    total += got
        if USE_OLD:
            tl.store(old + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), total)

    rows = []
    for p in points():
        offsets = addresses(p["group"], p["slots"], p["stride"], p["hashed"])
        size = int(offsets.max()) + 1
        dst = torch.zeros(size, device="cuda")
        block = 32 * p["warps"]
        per_program = block * p["unroll"] * p["reps"]
        grid = TOTAL // per_program
        old = torch.empty(grid * block, device="cuda")

        def launch():
            return scatter_add[(grid,)](dst, old, p["reps"], GROUP=p["group"], SLOTS=p["slots"],
                                        STRIDE=p["stride"], HASHED=p["hashed"], BLOCK=block, UNROLL=p["unroll"],
                                        USE_OLD=p["use_old"], SEM=p["sem"], num_warps=p["warps"])

        row = dict(p, total=TOTAL, **pattern_counts(offsets))
        try:
            compiled = launch()
            dst.zero_()
            launch()
            torch.cuda.synchronize()
            want = np.bincount(offsets, minlength=size).astype(np.float32)
            row["correct"] = bool(np.array_equal(dst.cpu().numpy(), want))
            row["sass"] = sass_opcodes(compiled.asm["cubin"])
            row["n_regs"] = int(compiled.n_regs)
            seconds = do_bench(launch, warmup=10, rep=60, return_mode="median") * 1e-3
            row.update(seconds=seconds, adds_per_s=TOTAL / seconds,
                       line_requests_per_s=row["line_requests"] / seconds)
            print(f"g{p['group']:2d} slots {p['slots']:8d} x{p['stride']:2d} w{p['warps']} u{p['unroll']:2d} "
                  f"r{p['reps']} {p['sem'][:3]} old={int(p['use_old'])}: {seconds * 1e6:8.1f} us "
                  f"{TOTAL / seconds / 1e9:6.1f} G adds/s {row['line_requests'] / seconds / 1e9:6.1f} G line req/s "
                  f"({row['lines_per_instruction']:.1f} lines/instr) {row['sass']}", flush=True)
        except Exception as exc:  # noqa: BLE001 - a point that fails is recorded, the rest still run
            row["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
            print(row["error"], flush=True)
        rows.append(row)
        with open(out_path, "w") as f:
            json.dump({"gpu": torch.cuda.get_device_name(0), "triton": triton.__version__, "points": rows}, f,
                      indent=1)


def case_opcodes(names: list[str], out_path: str) -> None:
    """The atomic and fence opcodes of Triton's build of each config of these sweep cases."""
    os.environ.setdefault("WAVETILE_SWEEP_BACKEND", "triton")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import compile_facts

    with open(out_path, "w") as f:
        for name in names:
            for row in compile_facts.compile_case(name, 1, lambda c: {"sass": sass_opcodes(c.asm["cubin"]),
                                                                      "n_regs": int(c.n_regs)}):
                f.write(json.dumps(row) + "\n")
                print(row, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--cases", nargs="*", default=[])
    opts = parser.parse_args(argv)
    if opts.cases:
        case_opcodes(opts.cases, opts.out + ".cases.jsonl")
    time_points(opts.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
