"""What Triton's compiler made of each sweep config: registers, spills, shared memory, matrix instruction.

Run on the GPU machine beside sweep.py (same cases, same inputs):
    WAVETILE_SWEEP_BACKEND=triton python benchmarks/gpu/compile_facts.py OUT.jsonl [--family F] [--case C] [--jobs N]
or anywhere Triton is installed with --offline (offline_build.py: built for sm_90, not launched; a build over the
H200's shared memory is marked out_of_resources as the launch would fail).
Each config is compiled and launched once; the compiled kernel's n_regs, n_spills and shared bytes, and
the MMA version in its TTGIR (3 = warpgroup wgmma, 2 = warp-level mma.sync, 0 = no tensor-core dot), its
layout conversions and blocked layouts (the coalescing pass's choice for each access), are written one
JSON line per config. The cost model's register estimate, its spill charge and its tensor-core path choice
are checked against these facts (simulator/data/h200_compile_facts.jsonl).
"""

from __future__ import annotations

import argparse
import functools
import json
import multiprocessing
import os
import re
import sys
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor

os.environ.setdefault("WAVETILE_SWEEP_BACKEND", "triton")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import sweep_cases as sk  # noqa: E402

_MMA = re.compile(r"nvidia_mma<\{versionMajor = (\d)")
_BLOCKED = re.compile(r"^#blocked\d* = #ttg\.blocked<\{(.*)\}>", re.MULTILINE)  # the layouts, in order


def compile_case(name: str, seed: int, read: Callable[[object], dict], offline: bool = False) -> list[dict]:
    """One row per config of case `name`: the config compiled and launched once on the case's inputs (built for
    sm_90 without a GPU when `offline`), then the fields `read` takes from the compiled kernel, or the failure's
    status and message."""
    from sweep import classify

    case = next(c for c in sk.cases() if c.name == name)
    arrays = case.inputs(np.random.default_rng(seed))
    compile_one = _build_offline if offline else _launch_once
    rows = []
    for cfg in case.configs:
        row = {"case": case.name, "config": json.dumps(cfg, sort_keys=True)}
        try:
            row.update(read(compile_one(case, arrays, cfg)))
        except Exception as exc:  # noqa: BLE001 - a config that does not compile is a fact too
            row.update(status=classify(exc), error=f"{type(exc).__name__}: {str(exc)[:160]}")
        rows.append(row)
    return rows


def _launch_once(case: sk.Case, arrays: dict, cfg: dict):
    import torch
    from sweep import to_device

    args, kwargs = sk.launch_args(case, {key: to_device(a) for key, a in arrays.items()}, cfg)
    compiled = case.kernel[case.grid(cfg)](*args, **kwargs)
    torch.cuda.synchronize()
    return compiled


def _build_offline(case: sk.Case, arrays: dict, cfg: dict):
    import offline_build

    from simulator.specs import get_spec

    limit = get_spec("h200").shared_bytes_per_program_max
    args, kwargs = sk.launch_args(case, arrays, cfg)
    compiled = offline_build.build(case.kernel, args, kwargs)
    if compiled.metadata.shared > limit:  # the driver refuses such a launch
        raise RuntimeError(f"out of resource: shared memory, Required: {compiled.metadata.shared}, "
                           f"Hardware limit: {limit}")
    return compiled


def facts(compiled) -> dict:
    ttgir = compiled.asm.get("ttgir", "")
    versions = sorted({int(v) for v in _MMA.findall(ttgir)})
    return dict(n_regs=int(compiled.n_regs), n_spills=int(compiled.n_spills), shared=int(compiled.metadata.shared),
                mma=max(versions, default=0), wgmma_ops=ttgir.count("warp_group_dot"),
                local_alloc=ttgir.count("local_alloc"), convert_layout=ttgir.count("convert_layout"),
                blocked=_BLOCKED.findall(ttgir))


def selection_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that choose cases, and how many processes compile them."""
    parser.add_argument("out")
    parser.add_argument("--family", action="append")
    parser.add_argument("--case", action="append")
    parser.add_argument("--split", action="append", help="only these splits")
    parser.add_argument("--jobs", type=int, default=8, help="processes compiling at once (one case each)")
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--offline", action="store_true", help="build for sm_90 on this machine, launch nothing")


def write_cases(opts: argparse.Namespace, read: Callable[[object], dict]) -> None:
    """compile_case with `read` over the chosen cases, in processes of their own, as JSON lines in opts.out."""
    names = [c.name for c in sk.cases() if (not opts.family or c.family in opts.family)
             and (not opts.case or c.name in opts.case) and (not opts.split or c.split in opts.split)]
    spawn = multiprocessing.get_context("spawn")
    worker = functools.partial(compile_case, read=read, offline=opts.offline)
    with open(opts.out, "w") as f, ProcessPoolExecutor(opts.jobs, mp_context=spawn) as pool:
        for rows in pool.map(worker, names, [opts.seed] * len(names)):
            for row in rows:
                f.write(json.dumps(row) + "\n")
            f.flush()
            print(rows[0]["case"] if rows else "", len(rows), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    selection_arguments(parser)
    write_cases(parser.parse_args(argv), facts)
    return 0


if __name__ == "__main__":
    sys.exit(main())
