"""How fast the L2 feeds the SMs when loads bypass the L1: the bandwidth the cost model's L2 terms divide by.

Run on the GPU machine:  python benchmarks/gpu/l2_bandwidth.py OUT.json [KIND ...]   (default: every kind)
simulator.calibrate's `reread` (plain .cg loads, one round in flight a program) peaks near 9.9 TB/s, yet the
sweep's large Triton matmuls move 11-12 TB/s of A and B tiles from the L2 (their async copies keep several
k-steps in flight). So three access patterns over an L2-resident buffer, each at many programs per unit, warps and
depths:
- `cg`: plain loads with the .cg modifier, UNROLL independent rounds in flight (calibrate's reread, deeper);
- `ld`: plain loads through the L1 (no modifier), UNROLL rounds in flight, `share` consecutive programs reading the
  same block at the same step (a GQA decode's query heads share their KV head's blocks so);
- `staged`: the same loads in a tl.range(num_stages=S) loop, which Triton turns into async copies to shared memory;
- `dot`: a matmul's loop with little arithmetic: acc += A[BM, BK] @ B[BK, 16], tiles walked over the buffer,
  software-pipelined (num_stages), the pattern whose bandwidth the matmuls reach; `share` consecutive programs
  read the same A tile at the same step, as a grouped matmul's programs share their tiles.
Each is timed with CUDA events over back-to-back calls (no flush: the buffer stays in the L2), at 4 and 16 MiB.
"""

from __future__ import annotations

import json
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).parents[2]))

from simulator.calibrate import seconds_per_call  # noqa: E402


def measure(kinds: frozenset[str] = frozenset({"cg", "ld", "staged", "dot"})) -> dict:
    import torch
    import triton
    import triton.language as tl

    @triton.jit
    def cg(src, dst, rounds, span_blocks, BLOCK: tl.constexpr, UNROLL: tl.constexpr):
        pid = tl.program_id(0)
        grid = tl.num_programs(0)
        acc = tl.zeros([BLOCK], tl.float32)
        for r in range(rounds):
            for u in tl.static_range(UNROLL):
                block = (pid + (r * UNROLL + u) * grid) % span_blocks
                acc += tl.load(src + block.to(tl.int64) * BLOCK + tl.arange(0, BLOCK), cache_modifier=".cg")
        tl.store(dst + pid * BLOCK + tl.arange(0, BLOCK), acc)

    @triton.jit
    def ld(src, dst, rounds, span_blocks, share, BLOCK: tl.constexpr, UNROLL: tl.constexpr):
        pid = tl.program_id(0)
        groups = tl.num_programs(0) // share
        acc = tl.zeros([BLOCK], tl.float32)
        for r in range(rounds):
            for u in tl.static_range(UNROLL):
                block = (pid // share + (r * UNROLL + u) * groups) % span_blocks
                acc += tl.load(src + block.to(tl.int64) * BLOCK + tl.arange(0, BLOCK))
        tl.store(dst + pid * BLOCK + tl.arange(0, BLOCK), acc)

    @triton.jit
    def staged(src, dst, rounds, span_blocks, BLOCK: tl.constexpr, STAGES: tl.constexpr):
        pid = tl.program_id(0)
        grid = tl.num_programs(0)
        acc = tl.zeros([BLOCK], tl.float32)
        for r in tl.range(0, rounds, num_stages=STAGES):
            block = (pid + r * grid) % span_blocks
            acc += tl.load(src + block.to(tl.int64) * BLOCK + tl.arange(0, BLOCK), cache_modifier=".cg")
        tl.store(dst + pid * BLOCK + tl.arange(0, BLOCK), acc)

    @triton.jit
    def dot(a, b, dst, rounds, a_tiles, b_tiles, share, BM: tl.constexpr, BK: tl.constexpr, BN: tl.constexpr,
            STAGES: tl.constexpr):
        pid = tl.program_id(0)
        grid = tl.num_programs(0)
        group = pid // share  # `share` consecutive programs read the same A tile at the same step
        rm = tl.arange(0, BM)
        rk = tl.arange(0, BK)
        rn = tl.arange(0, BN)
        acc = tl.zeros([BM, BN], tl.float32)
        for r in tl.range(0, rounds, num_stages=STAGES):
            ta = ((group + r * (grid // share)) % a_tiles).to(tl.int64) * (BM * BK)
            tb = ((pid + r) % b_tiles).to(tl.int64) * (BK * BN)
            x = tl.load(a + ta + rm[:, None] * BK + rk[None, :])
            y = tl.load(b + tb + rk[:, None] * BN + rn[None, :])
            acc += tl.dot(x, y)
        tl.store(dst + pid * BM * BN + rm[:, None] * BN + rn[None, :], acc)

    props = torch.cuda.get_device_properties(0)
    units = props.multi_processor_count

    points = []

    def record(kind, fn, moved, **config):
        if kind not in kinds:
            return
        try:
            seconds = seconds_per_call(fn, iters=20)
        except Exception as exc:  # noqa: BLE001 - one failing config is reported, the rest still run
            points.append({"kind": kind, **config, "error": repr(exc)[:300]})
            return
        points.append({"kind": kind, **config, "bytes": moved, "seconds": seconds, "bytes_per_s": moved / seconds})
        print(f"{kind:6s} {config}: {moved / seconds / 1e12:6.2f} TB/s", flush=True)

    target = 1 << 30  # bytes moved per launch: ~100 us at 10 TB/s
    for mib in (4, 16):
        span = mib << 18  # fp32 elements
        src = torch.randn(span, device="cuda")
        for warps, block in ((4, 1024), (4, 2048), (8, 2048), (8, 4096)):
            for per_unit in (4, 8, 16):
                if per_unit * warps > 64:
                    continue
                grid = units * per_unit
                dst = torch.empty(grid * block, device="cuda")
                for unroll in (1, 2, 4):
                    rounds = max(1, target // (grid * block * 4 * unroll))
                    record("cg", lambda: cg[(grid,)](src, dst, rounds, span // block, BLOCK=block, UNROLL=unroll,
                                                     num_warps=warps),
                           grid * rounds * unroll * block * 4, mib=mib, warps=warps, block=block, per_unit=per_unit,
                           depth=unroll)
                for unroll in (1, 2, 4):
                    for share in (1, 4, 16):
                        rounds = max(1, target // (grid * block * 4 * unroll))
                        record("ld", lambda: ld[(grid,)](src, dst, rounds, span // block, share, BLOCK=block,
                                                         UNROLL=unroll, num_warps=warps),
                               grid * rounds * unroll * block * 4, mib=mib, warps=warps, block=block,
                               per_unit=per_unit, depth=unroll, share=share)
                for stages in (3, 4):
                    rounds = max(1, target // (grid * block * 4))
                    record("staged", lambda: staged[(grid,)](src, dst, rounds, span // block, BLOCK=block,
                                                             STAGES=stages, num_warps=warps),
                           grid * rounds * block * 4, mib=mib, warps=warps, block=block, per_unit=per_unit,
                           depth=stages)
        a = torch.randn(span * 2, device="cuda").to(torch.float16)  # mib MiB of A tiles
        for bm, bk, warps in ((128, 64, 4), (128, 64, 8), (64, 64, 4), (128, 128, 8), (256, 64, 8)):
            bn = 16
            b = torch.randn(64 * bk * bn, device="cuda").to(torch.float16)
            a_tiles = a.numel() // (bm * bk)
            for per_unit in (1, 2, 4):
                for stages in (3, 4, 5):
                    for share in (1, 2, 4, 8, 16):
                        if share > 1 and stages != 4:
                            continue
                        grid = units * per_unit
                        dst = torch.empty(grid * bm * bn, device="cuda")
                        per_round = (bm * bk + bk * bn) * 2
                        rounds = max(4, target // (grid * per_round))
                        record("dot", lambda: dot[(grid,)](a, b, dst, rounds, a_tiles, 64, share, BM=bm, BK=bk, BN=bn,
                                                           STAGES=stages, num_warps=warps),
                               grid * rounds * per_round, mib=mib, warps=warps, bm=bm, bk=bk, bn=bn,
                               per_unit=per_unit, depth=stages, share=share)
    return {"device": props.name, "units": units, "torch": torch.__version__, "triton": triton.__version__,
            "points": points}


def main(argv: list[str]) -> int:
    result = measure(frozenset(argv[1:]) or frozenset({"cg", "ld", "staged", "dot"}))
    done = [p for p in result["points"] if "bytes_per_s" in p]
    for kind in ("cg", "ld", "staged", "dot"):
        best = max((p for p in done if p["kind"] == kind), key=lambda p: p["bytes_per_s"], default=None)
        if best:
            print(f"best {kind}: {best['bytes_per_s'] / 1e12:.2f} TB/s {best}")
    with open(argv[0], "w", encoding="utf-8") as f:
        json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
