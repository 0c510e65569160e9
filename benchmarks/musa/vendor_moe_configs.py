"""Rank Moore Threads' S5000-tuned fused-MoE configs (torchada) by the wavetile S5000 model (issue 12, item 4).

For each (vendor file, batch size M) in vendor_configs.json: seeded random inputs at that file's model shape
(top-k routing of random logits, renormalised; a fused shared expert is chosen by every token), tune_moe.py's
396-config search space (or a seeded subset, --configs) plus the vendor's config if outside it, and each config's
modeled time on `mtt-s5000` = the two fused_moe_kernel launches of one MoE layer as vLLM runs them (w1: top_k
rows per token; w2: the intermediate with the routing weight), each from a cold emulated L2, which is what
tune_moe.py times (it flushes L2 before its timing loop). The activation between them is not modeled.
Prints and writes (vendor_moe_configs.csv) the vendor config's rank (1 = the model's best), how many configs
lie within 2% of the pick, its modeled time against the pick's, and the pick. Configs the model rejects
(NotLaunchable) are counted apart.

By default each launch covers only the row blocks in use (fused_moe.launch_args(used_rows_only=True)):
vLLM's grid is sized for the worst-case padding, and at small M most of its programs exit at once, but the
automatic program sample takes its first half from the start of the launch, where every program works, and
scales up, so it overstates such launches (E=128, N=1856, M=1, 32x64x64, the w1 launch: 333 us sampled,
52 us with every program modeled).
--vllm-grid --exact models vLLM's own grid with every program (slow at large M).

Run: python benchmarks/musa/vendor_moe_configs.py [--configs N] [--sample N | --exact] [--vllm-grid] [--csv PATH]
"""

from __future__ import annotations

import argparse
import csv
import functools
import itertools
import json
import pathlib
import sys
import time

import numpy as np

HERE = pathlib.Path(__file__).parent
sys.path.insert(0, str(HERE.parents[1]))

import simulator  # noqa: E402
from benchmarks.musa.fused_moe import fused_moe_kernel, launch_args, route  # noqa: E402
from jit.launcher import model_launch  # noqa: E402
from kernels._common import BF16  # noqa: E402
from kernels.moe import moe_align  # noqa: E402
from simulator.cost import NotLaunchable  # noqa: E402

MACHINE = "mtt-s5000"
KEYS = ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "num_warps", "num_stages")
TIE = 1.02  # configs within 2% of the model's pick count as tied with it (the tie tolerance)
DTYPES = {"bf16": BF16, "fp16": np.dtype(np.float16)}


def search_space() -> list[tuple[int, ...]]:
    """tune_moe.py's grid (get_configs_compute_bound) as tuples in KEYS order: 396 configs, all one stage."""
    square = [(m, n, k) for m, k, n in itertools.product((32, 64, 128), repeat=3)]
    skinny = [(m, n, k) for (m, n), k in itertools.product(((16, 64), (64, 16)), (32, 64, 128))]
    return [(m, n, k, g, w, 1) for (m, n, k), w, g in itertools.product(square + skinny, (4, 8, 16), (1, 16, 32, 64))]


def pick_configs(vendor: tuple[int, ...], count: int, rng: np.random.Generator) -> list[tuple[int, ...]]:
    """The vendor's config first, then the search space (count <= 0) or `count - 1` seeded draws from it."""
    others = [c for c in search_space() if c != vendor]
    if count <= 0 or count - 1 >= len(others):
        return [vendor] + others
    chosen = rng.choice(len(others), size=count - 1, replace=False)
    return [vendor] + [others[i] for i in sorted(chosen)]


@functools.cache
def _weights(file: str, E: int, rows: int, hidden: int, inter: int, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(list(map(ord, file)))
    w1, w2 = np.empty((E, rows, hidden), DTYPES[dtype]), np.empty((E, hidden, inter), DTYPES[dtype])
    # every expert gets the same random matrix: the modeled time depends on addresses, not values
    w1[:] = (rng.standard_normal((rows, hidden)) * 0.05).astype(w1.dtype)
    w2[:] = (rng.standard_normal((hidden, inter)) * 0.05).astype(w2.dtype)
    return w1, w2


def expert_weights(spec: dict) -> tuple[np.ndarray, np.ndarray]:
    """w1 [E, w1_rows, hidden] and w2 [E, hidden, intermediate] of a vendor file's model, made once per file."""
    return _weights(spec["file"], spec["E"], spec["w1_rows"], spec["hidden"], spec["intermediate"], spec["dtype"])


class Layer:
    """One MoE layer's buffers at a vendor file's shape and one batch size M."""

    def __init__(self, spec: dict, M: int, rng: np.random.Generator):
        dtype = DTYPES[spec["dtype"]]
        E, hidden, rows, inter = spec["E"], spec["hidden"], spec["w1_rows"], spec["intermediate"]
        shared = spec["shared_experts"]
        routed = spec["top_k"] - shared
        ids, weights = route(rng, M, E - shared, routed)
        if shared:  # fused shared experts sit after the routed ones, chosen by every token with weight 1
            ids = np.concatenate([ids, np.tile(np.arange(E - shared, E, dtype=np.int32), (M, 1))], axis=1)
            weights = np.concatenate([weights, np.ones((M, shared), np.float32)], axis=1)
        self.ids, self.weights, self.top_k, self.E = ids, weights, spec["top_k"], E
        self.x = rng.standard_normal((M, hidden)).astype(dtype)
        self.w1, self.w2 = expert_weights(spec)
        self.h = (rng.standard_normal((M * self.top_k, rows)) * 0.5).astype(dtype)
        self.a2 = np.ascontiguousarray(self.h[:, :inter])
        self.y = np.empty((M * self.top_k, hidden), dtype)
        self._aligned: dict[int, dict] = {}

    def align(self, block_m: int) -> dict:
        if block_m not in self._aligned:
            self._aligned[block_m] = moe_align(self.ids, self.weights, self.x, self.E, block_m)
        return self._aligned[block_m]

    def modeled_seconds(self, config: tuple[int, ...], sample, vllm_grid: bool) -> float:
        """Both GEMMs of the layer under `config`, each launch from a cold emulated L2."""
        bm, bn, bk, group, warps, stages = config
        align = self.align(bm)
        total = 0.0
        for a, b, c, top_k, weighted in ((self.x, self.w1, self.h, self.top_k, False),
                                         (self.a2, self.w2, self.y, 1, True)):
            grid, args, meta = launch_args(a, b, c, self.weights, align, top_k, group, weighted, bm, bn, bk,
                                           used_rows_only=not vllm_grid)
            simulator.reset_device_l2()
            record = model_launch(fused_moe_kernel, grid, *args, machine=MACHINE, sample=sample,
                                  num_warps=warps, num_stages=stages, **meta)
            total += record.modeled_seconds
        return total


def describe(config: tuple[int, ...]) -> str:
    bm, bn, bk, group, warps, stages = config
    return f"{bm}x{bn}x{bk} g{group} w{warps} s{stages}"


def compare(spec: dict, M: int, count: int, sample, seed: int, vllm_grid: bool) -> dict:
    """Model the vendor's config and the search space (or a seeded subset of it) at one M; the table row."""
    vendor = tuple(spec["configs"][str(M)][key] for key in KEYS)
    configs = pick_configs(vendor, count, np.random.default_rng([seed, spec["E"], spec["w1_rows"], M, 0]))
    layer = Layer(spec, M, np.random.default_rng([seed, spec["E"], spec["w1_rows"], M, 1]))
    times, rejected, failed = {}, [], []
    start = time.process_time()
    for config in configs:
        try:
            times[config] = layer.modeled_seconds(config, sample, vllm_grid)
        except NotLaunchable as e:
            rejected.append((config, str(e)))
        except Exception as e:  # noqa: BLE001 - a model crash is reported in the row, the sweep goes on
            failed.append((config, f"{type(e).__name__}: {e}"))
    ranked = sorted(times, key=times.get)
    vendor_rank = 1 + sum(times[c] < times[vendor] for c in times) if vendor in times else None
    best = ranked[0] if ranked else None
    near_best = sum(times[c] <= TIE * times[best] for c in times) if best else 0
    row = dict(file=spec["file"], M=M, grid="vllm" if vllm_grid else "used", sample=sample,
               modeled=len(times), rejected=len(rejected), failed=len(failed),
               vendor=describe(vendor), vendor_rank=vendor_rank, within_2pct_of_pick=near_best,
               vendor_us=round(times[vendor] * 1e6, 2) if vendor in times else None,
               pick=describe(best) if best else None, pick_us=round(times[best] * 1e6, 2) if best else None,
               vendor_over_pick=round(times[vendor] / times[best], 3) if best and vendor in times else None,
               cpu_s=round(time.process_time() - start, 1))
    for config, why in rejected[:2] + failed[:2]:
        print(f"  {spec['file']} M={M} {describe(config)}: {why}", file=sys.stderr)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--configs", type=int, default=0,
                        help="configs modeled per (file, M), vendor's included (default 0: all 396 of the space)")
    parser.add_argument("--sample", type=int, default=None, help="programs per launch (default: automatic)")
    parser.add_argument("--exact", action="store_true", help="model every program (sample=False)")
    parser.add_argument("--vllm-grid", action="store_true",
                        help="launch vLLM's whole grid (idle programs past num_tokens_post_padded included) "
                             "instead of the row blocks in use; with sampling this overstates small batches")
    parser.add_argument("--max-m", type=int, default=1 << 30, help="skip batch sizes above this")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", default="", help="substring of the file names to run")
    parser.add_argument("--csv", type=pathlib.Path, default=HERE / "vendor_moe_configs.csv")
    args = parser.parse_args(argv)
    data = json.loads((HERE / "vendor_configs.json").read_text())
    rows = []
    header = (f"{'file':52s} {'M':>5s} {'n':>3s} {'rej':>3s} {'rank':>4s} {'tie':>3s} {'vendor':>10s} {'pick':>10s} "
              f"{'v/pick':>6s}  vendor config -> model's pick")
    print(header)
    for spec in data["files"]:
        if args.only not in spec["file"]:
            continue
        for M in sorted(m for m in map(int, spec["configs"]) if m <= args.max_m):
            row = compare(spec, M, args.configs, False if args.exact else args.sample, args.seed, args.vllm_grid)
            rows.append(row)
            print(f"{row['file']:52s} {M:5d} {row['modeled']:3d} {row['rejected'] + row['failed']:3d} "
                  f"{row['vendor_rank'] or '-'!s:>4s} {row['within_2pct_of_pick']:>3d} "
                  f"{row['vendor_us'] or '-'!s:>8s}us "
                  f"{row['pick_us'] or '-'!s:>8s}us "
                  f"{row['vendor_over_pick'] or '-'!s:>6s}  {row['vendor']} -> {row['pick']}  ({row['cpu_s']} s)",
                  flush=True)
    if rows:
        with open(args.csv, "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        print(f"wrote {args.csv}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
