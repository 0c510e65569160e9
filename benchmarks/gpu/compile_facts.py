"""What Triton's compiler made of each sweep config: registers, spills, shared memory, matrix instruction.

Run on the GPU machine beside sweep.py (same cases, same inputs):
    WAVETILE_SWEEP_BACKEND=triton python benchmarks/gpu/compile_facts.py OUT.jsonl [--family F] [--case C] [--jobs N]
Each config is compiled and launched once; the compiled kernel's n_regs, n_spills and shared bytes, and
the MMA version in its TTGIR (3 = warpgroup wgmma, 2 = warp-level mma.sync, 0 = no tensor-core dot),
are written one JSON line per config. The cost model's register estimate, its spill charge and its
tensor-core path choice are checked against these facts (simulator/data/h200_compile_facts.jsonl).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import re
import sys
from concurrent.futures import ProcessPoolExecutor

os.environ.setdefault("WAVETILE_SWEEP_BACKEND", "triton")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import sweep_cases as sk  # noqa: E402

_MMA = re.compile(r"nvidia_mma<\{versionMajor = (\d)")


def facts_of_case(name: str, seed: int) -> list[dict]:
    import torch
    from sweep import classify, to_device

    case = next(c for c in sk.cases() if c.name == name)
    arrays = case.inputs(np.random.default_rng(seed))
    dev = {key: to_device(a) for key, a in arrays.items()}
    rows = []
    for cfg in case.configs:
        args, kwargs = sk.launch_args(case, dev, cfg)
        row = {"case": case.name, "config": json.dumps(cfg, sort_keys=True)}
        try:
            compiled = case.kernel[case.grid(cfg)](*args, **kwargs)
            torch.cuda.synchronize()
            ttgir = compiled.asm.get("ttgir", "")
            versions = sorted({int(v) for v in _MMA.findall(ttgir)})
            row.update(n_regs=int(compiled.n_regs), n_spills=int(compiled.n_spills),
                       shared=int(compiled.metadata.shared), mma=max(versions, default=0),
                       wgmma_ops=ttgir.count("warp_group_dot"), local_alloc=ttgir.count("local_alloc"),
                       convert_layout=ttgir.count("convert_layout"))
        except Exception as exc:  # noqa: BLE001 - a config that does not compile is a fact too
            row.update(status=classify(exc), error=f"{type(exc).__name__}: {str(exc)[:160]}")
        rows.append(row)
    del dev
    torch.cuda.empty_cache()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out")
    parser.add_argument("--family", action="append")
    parser.add_argument("--case", action="append")
    parser.add_argument("--split", action="append", help="only these splits")
    parser.add_argument("--jobs", type=int, default=8, help="processes compiling at once (one case each)")
    parser.add_argument("--seed", type=int, default=20261201)
    opts = parser.parse_args(argv)
    names = [c.name for c in sk.cases() if (not opts.family or c.family in opts.family)
             and (not opts.case or c.name in opts.case) and (not opts.split or c.split in opts.split)]
    spawn = multiprocessing.get_context("spawn")
    with open(opts.out, "w") as f, ProcessPoolExecutor(opts.jobs, mp_context=spawn) as pool:
        for rows in pool.map(facts_of_case, names, [opts.seed] * len(names)):
            for row in rows:
                f.write(json.dumps(row) + "\n")
            f.flush()
            print(rows[0]["case"] if rows else "", len(rows), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
