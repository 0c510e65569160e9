"""Profiled and modeled launches: run the instrumented variant, turn its trace into simulator counters.

A profiled launch (a `with simulator.profile()` block is open, or WAVETILE_PROFILE=1) computes every
output, like a plain launch, and records a simulator.LaunchRecord:

1. the instrumented variant (Options.instrument) runs the programs to measure, in launch order, on
   one thread; for big grids only a sample of them, long loops traced every stride-th iteration
   (jit.sampling); the other programs run plain code on other threads while step 2 runs;
2. each traced memory op's element addresses become per-warp address rows through the warp mapping
   (jit.layout) and go to simulator.LaunchCounters (coalescing, atomics, then the L2 in launch order);
3. per-op execution counts become warp instructions by class, tensor FLOPs and the shared-memory
   traffic a GPU lowering would create (jit.shared_model, fed to simulator.bank_conflicts);
4. the counters (scaled when sampled) go through the cost model on the selected machine.

`model_launch` does the same for the autotuner without computing the outputs of unsampled programs.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import math
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

import simulator
from dsl.dtypes import parse_ir_type
from dsl.ir.ops import OP, OPS, Trait, with_trait
from jit import gpu_resources, isel, launch, mma_layout, native, pipelining, sampling, shared_model
from jit.layout import default_layout, warp_rows
from jit.tracebuf import TraceBuffers
from simulator import Counters, LaunchCounters, LaunchRecord, MachineSpec
from simulator.counters import ROW_BUCKETS

DEFAULT_SHARED_PADDING = 1  # elements of padding per scratch row of a layout change (Triton pads too)
LineKey = tuple[str, int]

_COMBINES = with_trait(Trait.COMBINES)  # reductions and scans: counted from their combine region
# instruction classes (OpInfo.cls) of float arithmetic, which counts as integer work (multiplies on the multiply
# pipe) on integer types
FLOAT_CLASSES = frozenset({"fp_add", "fp_mul", "fp_fma", "special"})
# OpInfo.cls values the profiler counts through their own Counters fields (or not at all), not as SIMT
# instructions per element; inside a combine region they count as "other"
OWN_FIELD_CLASSES = frozenset({"memory", "atomic", "tensor", "barrier", "none"})


# --- entry points --------------------------------------------------------------------------------------
_MODEL_ONLY: list[tuple[frozenset[str], frozenset[str]]] = []


@contextlib.contextmanager
def model_only(run_fully=(), measure_fully=()):
    """Inside the block, profiled launches run only the programs they measure, as `model_launch` does: cheap at
    real model sizes, the outputs of other programs left uncomputed. Kernels named in `run_fully` (those whose
    outputs steer later launches or the host, such as a router's expert ids) still run every program; kernels in
    `measure_fully` are measured on every program (long loops still thinned), for grids whose few working programs
    a sample scaled to the whole grid would overstate (most programs of a padded grid exit at once)."""
    _MODEL_ONLY.append((frozenset(run_fully), frozenset(measure_fully)))
    try:
        yield
    finally:
        _MODEL_ONLY.pop()


def _skips_rest(name: str) -> bool:
    return bool(_MODEL_ONLY) and name not in _MODEL_ONLY[-1][0]


def _measured_fully(name: str) -> bool:
    return bool(_MODEL_ONLY) and name in _MODEL_ONLY[-1][1]



def profiled_launch(bound: launch.Launch, kernel) -> LaunchRecord:
    """Run every program of a bound launch (outputs as a plain launch) on `kernel`, measure a sample of them,
    record the launch. The programs outside the sample run plain on other threads while the sample's trace is
    analysed. `bound.model` holds the modeling options (sample, shared_padding)."""
    jit_fn, grid, runtime, name = bound.jit_fn, bound.grid, bound.runtime, bound.name
    model = bound.model
    spec = simulator.current_spec(bound.machine)
    total = bound.programs
    instrumented = _instrumented(jit_fn, kernel)
    start = time.perf_counter()
    strata, chosen = _run_instrumented(instrumented, grid, runtime, name, model.get("sample"), spec, total,
                                       every_program=_measured_fully(name))
    cpu = time.perf_counter() - start
    rest = None
    if chosen is not None and not _skips_rest(name):
        others = np.setdiff1d(np.arange(total, dtype=np.int64), chosen, assume_unique=True)
        threads = max(1, native.num_threads() - 1)  # one core is left to the analysis
        rest = _background().submit(_timed, native.execute, kernel, grid, runtime, name, programs=others,
                                    threads=threads)
    try:
        record = _record(jit_fn, kernel, grid, strata, spec, total, cpu, model.get("shared_padding"), runtime)
    finally:
        rest_seconds = 0.0 if rest is None else rest.result()  # waits; re-raises a failure of those programs
    record.cpu_seconds += rest_seconds
    simulator.record_launch(record)
    return record


_plain_runner: ThreadPoolExecutor | None = None


def _background() -> ThreadPoolExecutor:
    global _plain_runner
    if _plain_runner is None:
        _plain_runner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="wavetile-profile")
    return _plain_runner


def _timed(fn, *args, **kwargs) -> float:
    start = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - start


def model_launch(jit_fn, grid, args: tuple, kwargs: dict, *, machine=None, sample: int | bool | None = None,
                 shared_padding: int | None = None, record: bool = False) -> LaunchRecord:
    """Model a launch from a sample of its programs (see jit.launcher.model_launch)."""
    if not getattr(jit_fn, "is_wavetile_jit", False):
        raise TypeError(f"model_launch needs a @jit kernel, got {type(jit_fn).__name__}")
    bound = launch.bind(jit_fn, tuple(args), dict(kwargs), grid)
    machine = machine if machine is not None else bound.machine
    # only the instrumented variant runs: the plain build is never compiled for a modeled launch
    kernel = bound.compiled(instrument=True)
    total = bound.programs
    if total == 0:
        raise ValueError(f"{jit_fn.__name__}: cannot model an empty grid {grid}")
    spec = simulator.current_spec(machine)
    start = time.perf_counter()
    strata, _ = _run_instrumented(kernel, bound.grid, bound.runtime, jit_fn.__name__, sample, spec, total)
    cpu = time.perf_counter() - start
    result = _record(jit_fn, kernel, bound.grid, strata, spec, total, cpu, shared_padding, bound.runtime)
    if record:
        simulator.record_launch(result)
    return result


def _instrumented(jit_fn, kernel):
    return jit_fn.get_compiled(kernel.signature, dataclasses.replace(kernel.options, instrument=True),
                               kernel.metadata.get("divisible_by_16", ()))


def _run_instrumented(instrumented, grid, runtime, name: str, sample, spec: MachineSpec,
                      total: int, every_program: bool = False) -> tuple[list[tuple[TraceBuffers, int, float]],
                                                                        np.ndarray | None]:
    """Run the programs to measure; returns the strata of the sample, (trace, programs measured, programs each
    stands for), and the measured ids (None: all programs). Automatic samples (sample=None) are planned from
    program 0's executions and trace (jit.sampling); `every_program` measures them all with that plan's loop
    thinning (exact counts, bounded trace)."""
    def run(buffers: TraceBuffers, programs: np.ndarray) -> TraceBuffers:
        native.execute(instrumented, grid, runtime, name, programs=programs, instrumentation=buffers.address,
                       threads=1)
        if buffers.failed:
            raise RuntimeError(f"{name}: the trace buffer could not grow (out of memory?)")
        return buffers

    every = np.arange(total, dtype=np.int64)
    if sample is not None:
        chosen = sampling.choose(total, sample, spec, row=grid[0])
        if chosen is None:
            return [(run(TraceBuffers(instrumented.probes), every), total, 1.0)], None
        parts = [(chosen.first, 1.0), (chosen.rest, chosen.weight)]
        return _measure(run, instrumented.probes, parts, 1), chosen.ids
    first = run(TraceBuffers(instrumented.probes), every[:1])
    traced = [(int(first.counts[p]), first.stream(p).shape[1]) for p, info in enumerate(first.probes)
              if info["trace"] and first.counts[p]]
    stride, size = sampling.auto_plan(total, traced)
    first.thin(stride)
    if size >= total or every_program:
        return [(run(first, every[1:]), total, 1.0)], None
    chosen = sampling.split(total, size, spec, row=grid[0])
    run(first, chosen.first[1:])
    if not chosen.rest.size:
        return [(first, chosen.first.size, 1.0)], chosen.ids
    rest = TraceBuffers(instrumented.probes)
    rest.thin(stride)
    work = []
    for pid in chosen.rest:  # one at a time: each program's own trace tells idle ones apart
        before = rest.words()
        run(rest, np.array([pid], dtype=np.int64))
        work.append(rest.words() - before)
    ids = list(chosen.rest)
    if sampling.idle_heavy(work):
        budget = sampling.word_budget(total, traced)
        for pid in sampling.extra(chosen.first.size, total, chosen.rest):
            if rest.words() >= budget:
                break
            run(rest, np.array([pid], dtype=np.int64))
            ids.append(int(pid))
    ids = np.sort(np.array(ids, dtype=np.int64))
    weight = (total - chosen.first.size) / ids.size
    return [(first, chosen.first.size, 1.0), (rest, int(ids.size), weight)], np.concatenate([chosen.first, ids])


def _measure(run, probes, parts: list[tuple[np.ndarray, float]], stride: int) -> list[tuple[TraceBuffers, int, float]]:
    """Measure each stratum of a sample, (program ids, programs each stands for), into its own trace."""
    strata = []
    for ids, weight in parts:
        if ids.size:
            buffers = TraceBuffers(probes)
            buffers.thin(stride)
            strata.append((run(buffers, ids), int(ids.size), weight))
    return strata


def _record(jit_fn, kernel, grid, strata: list[tuple[TraceBuffers, int, float]], spec: MachineSpec, total: int,
            cpu: float, shared_padding: int | None, runtime: list) -> LaunchRecord:
    padding = DEFAULT_SHARED_PADDING if shared_padding is None else int(shared_padding)
    device = DeviceAddresses(runtime)
    stride = strata[0][0].stride
    sampled = len(strata) > 1 or strata[0][1] < total or stride > 1
    totals, lines, touched = Counters(), {}, []
    for buffers, measured, weight in strata:
        seen: dict[str, list] = {"read": [], "write": []}
        part, part_lines = analyze(buffers, spec, source_file(jit_fn), programs=measured,
                                   num_warps=kernel.options.num_warps, num_stages=kernel.options.num_stages,
                                   shared_padding=padding, device=device, touched=seen,
                                   cache=kernel.metadata.setdefault("profile_cache", {}),
                                   program_factor=weight if sampled else None,
                                   register_bytes=gpu_resources.kernel_register_bytes(kernel, spec),
                                   launch_programs=total,
                                   grid_rows=grid[0])
        if weight != 1.0:
            part = sampling.scale(part, weight, int(round(measured * weight)))
            part_lines = {key: sampling.scale(c, weight, 0) for key, c in part_lines.items()}
        totals = totals + part
        for key, c in part_lines.items():
            lines[key] = lines[key] + c if key in lines else c
        touched.append((seen, weight * stride))  # (thinned loops: their sectors stand for `stride` times as many)
    totals, lines = sampling.launch_dram(totals, lines, touched, device.ranges, spec, sampled)
    shown = tuple(grid[:max(1, max((i + 1 for i, g in enumerate(grid) if g != 1), default=1))])
    constexprs = {n: kernel.signature[n] for n in jit_fn.constexprs if n in kernel.signature}
    return LaunchRecord.build(jit_fn.__name__, shown, totals, machine=spec, cpu_seconds=cpu, constexprs=constexprs,
                              sampled=sampled, lines=lines)


def source_file(jit_fn) -> str:
    try:
        return inspect.getsourcefile(jit_fn.fn) or jit_fn.__name__
    except TypeError:
        return jit_fn.__name__


class DeviceAddresses:
    """Host addresses -> the addresses the buffers would have on the GPU.

    A GPU allocator aligns every buffer to DEVICE_ALIGN bytes, numpy only to 16 or 64; without the
    shift a contiguous 512-byte warp access of a host array would straddle one more sector than on
    the device. Each pointer argument's bytes move down by its base's misalignment. `ranges` are
    the buffers' device byte ranges (for footprints of sampled launches).
    """

    DEVICE_ALIGN = 256

    def __init__(self, runtime: list | None = None) -> None:
        buffers = sorted({v.address: v for _, v, t in (runtime or []) if t.dtype.is_ptr()}.items())
        self.bases = np.array([address for address, _ in buffers], dtype=np.int64)
        self.shifts = self.bases % self.DEVICE_ALIGN
        starts = [buf.low - shift for (_, buf), shift in zip(buffers, self.shifts)]
        ends = [buf.high - shift for (_, buf), shift in zip(buffers, self.shifts)]
        self.ranges = (np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64))

    def shift(self, first: np.ndarray) -> np.ndarray | None:
        """Per record, how far its addresses move (from the record's first address: one tile access
        stays within one buffer); None when nothing moves."""
        if not self.bases.size or not self.shifts.any() or not first.size:
            return None
        which = np.searchsorted(self.bases, first, side="right") - 1
        return np.where(which >= 0, self.shifts[np.maximum(which, 0)], 0)

    def __call__(self, addresses: np.ndarray) -> np.ndarray:
        """[records, elements] host addresses as device addresses."""
        shift = self.shift(addresses[:, 0]) if addresses.ndim == 2 and addresses.size else None
        return addresses if shift is None else addresses - shift[:, None]


# --- counters from probes ------------------------------------------------------------------------------

def analyze(buffers: TraceBuffers, spec: MachineSpec, file: str, *, programs: int, num_warps: int,
            num_stages: int, shared_padding: int = DEFAULT_SHARED_PADDING,
            device: DeviceAddresses | None = None, touched: dict[str, list] | None = None,
            cache: dict | None = None, program_factor: float | None = None,
            register_bytes: int = 0, launch_programs: int | None = None,
            grid_rows: int = 1) -> tuple[Counters, dict[LineKey, Counters]]:
    """Launch totals and per-line counters of the programs an instrumented run executed.
    register_bytes: the kernel's live tile bytes (jit.gpu_resources.register_bytes), for its register demand.
    launch_programs: the launch's grid size (how many programs can run at once bounds the L2's reuse).
    grid_rows: the grid's first dim (the work of programs is told apart by their coordinate along it).
    touched: filled with the sector ids each kind of access ("read", "write") touched.
    cache: a dict kept with the kernel; what depends only on the kernel and the execution counts (not on
    addresses) is computed once per distinct case there, so profiling a kernel again costs less.
    program_factor: for sampled launches, what the counters will be scaled by (simulator.LaunchCounters)."""
    probes, counts = buffers.probes, buffers.counts
    live = [p for p in range(len(probes)) if counts[p]]
    device = device or DeviceAddresses()
    dots = _dot_operands(buffers, live, device)
    key = (spec, num_warps, num_stages, shared_padding, file, register_bytes,
           tuple((p, int(counts[p])) for p in live if not probes[p]["trace"]), tuple(sorted(dots.items())))
    cached = None if cache is None else cache.get(key)
    if cached is None:
        cached = _static_counters(probes, live, counts, spec, file, num_warps, num_stages, shared_padding, dots,
                                  register_bytes)
        if cache is not None:
            cache[key] = cached
    registers, shared_bytes, extra, loop_work = cached
    resident = simulator.occupancy(spec, num_warps, registers, shared_bytes).programs_per_unit
    rec = LaunchCounters(spec, programs=programs, num_warps=num_warps, num_stages=num_stages,
                         registers_per_thread=registers, shared_bytes_per_program=shared_bytes,
                         extrapolate=None if program_factor is None else (program_factor, device.ranges),
                         concurrency=min(launch_programs or programs, max(1, resident) * spec.units),
                         per_unit=min(max(1, resident), -(-(launch_programs or programs) // spec.units)))
    traced = [p for p in live if probes[p]["trace"] and any(len(part) for part in buffers.stream_parts(p))]
    ranks = _order_ranks(probes, traced)
    layouts = {p: _layout(probes[p], buffers.stream_parts(p), spec, num_warps, device) for p in traced}
    loads = {p: probes[p] for p in traced if probes[p]["op"] == OP.TILE_LOAD}
    barrier_loops = frozenset(loop for loop, (_, _, barriers) in loop_work.items() if barriers)
    phases = pipelining.phase_keys(loads, num_stages, {p: layouts[p].vector_bytes for p in loads}, barrier_loops)
    staged = _dot_loads(probes, live)
    for p in traced:
        info = probes[p]
        line = (file, int(info["line"] or 0))
        weight = float(counts[p]) / max(1, buffers.records(p))  # executions per traced one (jit.sampling)
        results = _memory(rec, line, info, buffers.stream_parts(p), spec, num_warps, device, layouts[p], weight,
                          ranks[p], phases.get(p), p in staged)
        if touched is not None:
            touched["write" if _ACCESS.get(info["op"]) == "store" else "read"].extend(r.sector_ids for r in results)
    rounds: dict[str, int] = {}  # a phase runs as often as its most executed load
    accesses: dict[str, int] = {}  # and issues its loads' warp instructions
    for p, key in phases.items():
        rounds[key] = max(rounds.get(key, 0), int(counts[p]))
        accesses[key] = accesses.get(key, 0) + int(counts[p]) * layouts[p].rows.element.shape[0]
    of_loop = {probes[p].get("loop"): key for p, key in phases.items()}
    work: dict[str, int] = {}  # the phase's warp instructions besides its memory ops, and its dots' FLOPs
    flops: dict[str, int] = {}
    for loop, (instructions, dot_flops, _) in loop_work.items():
        if loop in of_loop:
            key = of_loop[loop]
            work[key] = work.get(key, 0) + instructions
            flops[key] = flops.get(key, 0) + dot_flops
    rec.launch(Counters(phase_rounds=rounds, phase_instructions=work, phase_flops=flops, phase_accesses=accesses)
               + _row_work(buffers, traced, counts, grid_rows))
    totals, lines = rec.finish()
    for line, counters in extra.items():
        lines[line] = lines.get(line, Counters()) + counters
        totals = totals + counters
    return totals, lines


def _dot_loads(probes: list[dict], live: list[int]) -> set[int]:
    """Load probes whose tiles are tl.dot operands: the backend stores them to shared memory in the dot's operand
    layout whatever dim runs contiguously (a K-major B, attention's K read as [D, N]), so their loads pay no
    layout change of their own (the staging is the dot's; a K-major-only type's transpose is costed there too)."""
    return {source[0] for p in live if probes[p]["op"] == OP.TILE_DOT
            for source in probes[p].get("sources", [])[:2] if source is not None}


def _dot_operands(buffers: TraceBuffers, live: list[int], device: DeviceAddresses) -> dict[int, str]:
    """Per tl.dot probe, where its operands A and B come from, as "a,b" with each one of: "k" (loaded, its
    K dim contiguous in memory), "mn" (loaded, another dim contiguous), "reg" (computed in registers) or "?"
    (loaded, no dim contiguous). Warpgroup MMAs of 32- and 8-bit types read only K-major operands."""
    probes = buffers.probes
    found = {}
    for p in live:
        info = probes[p]
        if info["op"] != OP.TILE_DOT or "sources" not in info:
            continue
        flags = []
        for position, source in enumerate(info["sources"][:2]):
            if source is None:
                flags.append("reg")
                continue
            load, transposed = source
            order = _contiguous_dim(buffers, load, device)
            rank = len(info["operands"][position][0])
            if order is None or order < rank - 2:
                flags.append("?")
                continue
            if transposed:
                order = (rank - 1) + (rank - 2) - order
            k_dim = rank - 1 if position == 0 else rank - 2
            flags.append("k" if order == k_dim else "mn")
        found[p] = ",".join(flags)
    return found


def _contiguous_dim(buffers: TraceBuffers, probe: int, device: DeviceAddresses) -> int | None:
    """The dim of a traced load's tile along which its first record's addresses run contiguously."""
    parts = [part for part in buffers.stream_parts(probe) if len(part)]
    info = buffers.probes[probe]
    if not parts or not info["operands"]:
        return None
    shape = tuple(info["operands"][0][0])
    itemsize = parse_ir_type(info["operands"][0][1]).element_ty.itemsize
    head = device(parts[0][:1, 1:1 + math.prod(shape)])
    dim = _fastest_last(head, shape, itemsize, info["attrs"].get("fastest_dim"))[-1] if shape else 0
    return dim if len(shape) and shape[dim] > 1 and _contiguous(head, shape, dim, itemsize) else None


def _static_counters(probes, live, counts, spec, file, num_warps, num_stages, padding, dots=None, register_bytes=0):
    """(registers per thread, shared bytes per program, per-line counters of the non-memory ops, per enclosing loop
    the warp instructions, dot FLOPs and barriers of those ops)."""
    shared_bytes = gpu_resources.shared_bytes(probes, live, spec, num_warps, num_stages, padding)
    registers = simulator.estimate_registers(register_bytes, num_warps, spec)
    extra: dict[LineKey, Counters] = {}
    loop_work: dict[object, tuple[int, int, int]] = {}
    layouts = mma_layout.probe_layouts(probes, live, spec, num_warps)
    mma_tiles = mma_layout.by_shape({p: probes[p]["results"][0][0] for p in layouts}, layouts)
    for p in live:
        info = probes[p]
        if not info["trace"]:
            found = _compute(info, int(counts[p]), spec, num_warps, padding, mma_tiles, (dots or {}).get(p, ""),
                             layouts.get(p))
            if found is not None:
                line = (file, int(info["line"] or 0))
                extra[line] = extra.get(line, Counters()) + found
                loop = info.get("loop")
                instructions, flops, barriers = loop_work.get(loop, (0, 0, 0))
                loop_work[loop] = (instructions + found.warp_instructions + found.shared_requests,
                                   flops + sum(found.tensor_flops.values()), barriers + found.barriers)
    return registers, shared_bytes, extra, loop_work


@dataclasses.dataclass(frozen=True)
class AccessLayout:
    """How a GPU build lays out one traced access: its tile, dims in memory order, elements per instruction, warp
    rows (one per instruction), and how many consecutive rows move one lane's run of contiguous elements (a run
    narrowed to several instructions by what the compiler knows of alignment or the mask). split: a store's run
    rows reach the L2 one by one (Counters.store_split_sectors): on the H200 the SM merges a run of two
    instructions, and a longer one of 4-byte elements that is all a thread stores of the tile, but no other
    (benchmarks/gpu/streams.py: fills of 2^25 fp32 elements past an unaligned bound take 40-60 us at 4 a thread,
    77-133 at 8-64, 32-44 aligned; of 2^26 bf16 on 16 warps, 48 us at 2 a thread, 43 aligned)."""

    shape: tuple[int, ...]
    itemsize: int
    axes: tuple[int, ...]
    index: np.ndarray  # the memory-ordered view's flat position -> the tile's
    vector: int
    rows: object  # jit.layout.warp_rows of the view, split into `vector`-wide instructions
    run_rows: int = 1
    split: bool = False

    @property
    def vector_bytes(self) -> int:
        return self.vector * self.itemsize


def _layout(info: dict, parts: list[np.ndarray], spec: MachineSpec, num_warps: int,
            device: DeviceAddresses) -> AccessLayout:
    """Triton's coalescing pass orders each access's layout by its pointer's contiguity: a tile whose addresses
    run along another dim is laid out with that dim fastest (through a layout change in shared memory when the
    value was made in the default layout); the vector width is read off the first records, and along the last dim
    is at most what the compiler knows of the pointer's alignment; each instruction moves at most what it knows of
    the mask too (jit.passes.assign_vector_widths)."""
    shape = tuple(info["operands"][0][0])
    itemsize = parse_ir_type(info["operands"][0][1]).element_ty.itemsize
    numel = math.prod(shape)
    first = next(part for part in parts if len(part))
    head = device(first[:4, 1:1 + numel])
    attrs = info["attrs"]
    axes = _fastest_last(head, shape, itemsize, attrs.get("fastest_dim"))
    view = tuple(shape[a] for a in axes)
    index = np.arange(numel).reshape(shape).transpose(axes).ravel()
    threads = num_warps * spec.warp_size
    per_thread = _vector_width(head[:, index], view, itemsize, threads)
    if OPS[info["op"]].cls == "atomic":  # only float adds the compiler widened, as wide as the machine's atomics go
        widest = spec.atomic_vector_bytes // itemsize if "size_per_thread" in attrs else 1
        per_thread = min(per_thread, max(1, widest))
    vector = per_thread
    strided = attrs.get("strided")  # then the widths along the dim laid out fastest instead of the last
    if shape and "size_per_thread" in attrs and axes[-1] == attrs.get("fastest_dim", len(shape) - 1):
        # no wider than the compiler can prove (jit.passes.assign_vector_widths)
        per_thread = min(per_thread, attrs["fastest_per_thread" if strided else "size_per_thread"])
        vector = min(per_thread, attrs["fastest_vector" if strided else "vector"])
    rows = warp_rows(default_layout(view, num_warps, spec.warp_size, per_thread))
    run_rows = max(1, per_thread // vector)
    split = run_rows > 2 and (itemsize < 4 or numel > threads * per_thread)
    return AccessLayout(shape, itemsize, axes, index, vector, rows.split(vector), run_rows, split)


def _order_ranks(probes: list[dict], traced: list[int]) -> dict[int, int]:
    """Where each traced memory op's executions fall in its program's stream: ops of one loop interleave by
    iteration, so they share the rank of the loop's first memory op; an op outside loops is ranked by itself."""
    first: dict[object, int] = {}
    for p, info in enumerate(probes):
        if info.get("trace"):
            first.setdefault(info.get("loop"), p)
    return {p: p if probes[p].get("loop") is None else first[probes[p]["loop"]] for p in traced}


def _row_work(buffers: TraceBuffers, traced: list[int], counts, rows: int) -> Counters:
    """How the measured programs' work (memory-op executions) varies along the grid's first dim: empty when every
    program did the same, else per bucket of coordinates the work and the programs (Counters.row_work). Causal
    attention's programs do more the later their query block; a paged decode's, the longer their sequence.
    A thinned trace (stride S > 1) follows every S-th execution of each op from a phase that rotates with the
    program, so a program's records of an op are its executions / S give or take one: spreads within one record
    of each op are no imbalance, and an op executed fewer than S times a program (once, after its loop) is traced
    by some programs only and counts its mean in each (a cross-entropy's equal rows looked 40 % apart)."""
    stride = buffers.stride
    ids = {p: np.concatenate([part[:, 0] for part in parts]) for p in traced
           if (parts := [part for part in buffers.stream_parts(p) if len(part)])}
    if not ids:
        return Counters()
    programs = np.unique(np.concatenate(list(ids.values())))
    per_program, grain = np.zeros(programs.size), 0.0
    for p, pids in ids.items():
        weight = float(counts[p]) / max(1, buffers.records(p))  # executions per traced one (jit.sampling)
        if stride > 1 and counts[p] < stride * programs.size:
            per_program += float(counts[p]) / programs.size
            continue
        per_program += np.bincount(np.searchsorted(programs, pids), minlength=programs.size) * weight
        grain += weight if stride > 1 else 0.0
    if np.ptp(per_program) <= 0.02 * per_program.mean() + grain:
        return Counters()
    buckets = (programs % rows) * min(rows, ROW_BUCKETS) // rows
    return Counters(row_work={str(b): int(round(w)) for b, w in zip(*_sums(buckets, per_program))},
                    row_programs={str(b): int(c) for b, c in zip(*_sums(buckets, np.ones(programs.size)))})


def _sums(keys: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    unique, inverse = np.unique(keys, return_inverse=True)
    return unique, np.bincount(inverse, weights=values)


def _iterations(parts: list[np.ndarray]) -> list[np.ndarray]:
    """Per record, how many records of the same program came before it (its execution index, in traced ones)."""
    pids = np.concatenate([part[:, 0] for part in parts])
    starts = np.flatnonzero(np.concatenate(([True], pids[1:] != pids[:-1])))
    index = np.arange(pids.size) - np.repeat(starts, np.diff(np.append(starts, pids.size)))
    return np.split(index, np.cumsum([len(part) for part in parts])[:-1])


def _memory(rec: LaunchCounters, line: LineKey, info: dict, parts: list[np.ndarray], spec: MachineSpec,
            num_warps: int, device: DeviceAddresses, layout: AccessLayout, weight: float = 1.0, rank: int = 0,
            phase: str | None = None, dot_operand: bool = False) -> list:
    """Per-warp address rows of every execution of one traced load / store / atomic (the trace comes in
    parts, one per chunk, so it is never copied whole). Returns the coalescing results of global accesses.
    rank and each record's execution index order the access within its program (the L2's stream); phase: the
    memory phase of a load (jit.pipelining.phase_keys)."""
    shape, itemsize, index, vector, rows = layout.shape, layout.itemsize, layout.index, layout.vector, layout.rows
    numel = math.prod(shape)
    access = _ACCESS.get(info["op"], "atomic")
    parts = [part for part in parts if len(part)]
    element = index[rows.element]
    per_record = rows.element.shape[0]
    results = []
    efficiency = _dram_run_efficiency(parts, numel, spec, device) if access == "load" else 1.0
    if layout.axes != tuple(range(len(shape))) and not dot_operand:
        executions = sum(len(data) for data in parts) * weight
        rec.add(line, sampling.scale(_layout_change(numel * itemsize, num_warps, spec), executions, 0))
    for data, iteration in zip(parts, _iterations(parts)):
        lanes = data[:, 1:1 + numel][:, element]  # [records, instructions, lanes]
        shift = device.shift(data[:, 1])
        if shift is not None:
            lanes -= shift[:, None, None]
        lanes = lanes.reshape(-1, spec.warp_size)
        active = None
        if info.get("masked"):
            flags = np.ascontiguousarray(data[:, 1 + numel:]).view(np.uint8)[:, :numel]
            if not flags.all():
                active = flags[:, element].astype(bool)
                if access != "load":
                    active &= ~rows.replica
                active = active.reshape(-1, spec.warp_size)
        if active is None and access != "load" and rows.replica.any():
            active = np.broadcast_to(~rows.replica, (len(data),) + rows.replica.shape).reshape(-1, spec.warp_size)
        program_ids = np.repeat(data[:, 0], per_record)
        order = np.repeat((rank << 32) + iteration, per_record)
        if access == "load":
            results.append(rec.global_access(line, lanes, active, vector * itemsize, program_ids=program_ids,
                                             weight=weight, order=order, phase=phase, dram_efficiency=efficiency))
        elif access == "store":
            results.append(rec.global_access(line, lanes, active, vector * itemsize, store=True,
                                             program_ids=program_ids, weight=weight, order=order,
                                             merged_rows=layout.run_rows, split=layout.split))
        else:
            rec.atomic_access(line, lanes, active, vector * itemsize, elements=vector,
                              fenced=info["attrs"].get("sem", "acq_rel") != "relaxed", program_ids=program_ids,
                              weight=weight, order=order)
    return results


def _dram_run_efficiency(parts: list[np.ndarray], numel: int, spec: MachineSpec, device: DeviceAddresses) -> float:
    """The DRAM bandwidth one load's misses get (MachineSpec.run_efficiency): from the runs of contiguous sectors
    its first traced execution reads, and whether what runs beside it continues them (the same program's next
    execution, or the next program in launch order)."""
    first = parts[0]

    def sectors(row: int) -> np.ndarray:
        return np.unique(device(first[row:row + 1, 1:1 + numel])[0] // spec.sector_bytes)

    mine = sectors(0)
    runs = _sector_runs(mine)
    beside = [row for row in (1, *np.flatnonzero(first[:, 0] == first[0, 0] + 1)[:1]) if row < len(first)]
    neighbours = any(_sector_runs(np.union1d(mine, other)) < runs + _sector_runs(other)
                     for other in map(sectors, beside))
    return spec.run_efficiency(mine.size * spec.sector_bytes / runs, neighbours)


def _sector_runs(sectors: np.ndarray) -> int:
    """How many runs of consecutive ids a sorted array of sector ids holds."""
    return 1 + int(np.count_nonzero(np.diff(sectors) > 1)) if sectors.size else 0


# how the memory system sees each traced op: atomic loads, polls and atomic stores are ordered plain
# accesses (ld.acquire / st.release, one element per lane); the rest are read-modify-writes at the L2
# how a traced memory op reaches memory: read only (loads, atomic loads and polls), write only, or both (atomics)
_ACCESS = {name: "atomic" if name in with_trait(Trait.WRITES_MEMORY) else "load"
           for name in with_trait(Trait.READS_MEMORY)} | {
    name: "store" for name in with_trait(Trait.WRITES_MEMORY) - with_trait(Trait.READS_MEMORY)}


def _fastest_last(addresses: np.ndarray, shape: tuple[int, ...], itemsize: int,
                  fastest: int | None = None) -> tuple[int, ...]:
    """Dims of the tile with its contiguous dim last (the identity when the last dim is contiguous). Triton orders
    the layout by what its AxisInfo proves, not by the addresses: where the last dim is not proven contiguous,
    jit.passes.assign_vector_widths gives the dim Triton lays out fastest (`fastest`), however the addresses run.
    When no dim is proven contiguous, Triton's coalescing pass breaks the tie in dim order, so dim 0 varies fastest:
    lanes walk down the rows of a stride-2 tile (Triton 3.6's layout for an interleaved rotary embedding of 4 tokens:
    threadsPerWarp [4, 8], order [0, 1]) and down the K rows of a matmul's B tile whose columns wrap at an odd N
    (threadsPerWarp [32, 1], order [0, 1]; simulator/data/h200_compile_facts.jsonl)."""
    if fastest is not None and len(shape) > 1:
        return tuple(d for d in range(len(shape)) if d != fastest) + (fastest,)
    if len(shape) < 2 or shape[-1] > 1 and _contiguous(addresses, shape, len(shape) - 1, itemsize):
        return tuple(range(len(shape)))
    for dim in range(len(shape) - 2, -1, -1):
        if shape[dim] > 1 and _contiguous(addresses, shape, dim, itemsize):
            return tuple(d for d in range(len(shape)) if d != dim) + (dim,)
    return tuple(range(len(shape) - 1, -1, -1))


def _contiguous(addresses: np.ndarray, shape: tuple[int, ...], dim: int, itemsize: int) -> bool:
    tile = addresses.reshape((-1,) + tuple(shape))
    return bool((np.diff(tile, axis=dim + 1) == itemsize).all())


def _layout_change(nbytes: int, num_warps: int, spec: MachineSpec) -> Counters:
    """One layout change of a tile through shared memory: written and read once, conflict-free, a barrier."""
    wavefronts = 2 * -(-nbytes // (spec.shared_banks * spec.shared_bank_bytes))
    return Counters(shared_requests=wavefronts, shared_wavefronts=wavefronts, shared_bytes=2 * nbytes,
                    barriers=num_warps, exchanges=num_warps)


def _vector_width(addresses: np.ndarray, shape: tuple[int, ...], itemsize: int, threads: int) -> int:
    """Elements per lane access, as Triton's coalescing pass picks them: contiguous and aligned runs
    along the fastest dim, at most 16 bytes, at most numel / threads (checked on the first few records)."""
    numel = math.prod(shape)
    last = shape[-1] if shape else 1
    width = max(1, min(16 // itemsize, last, numel // threads))
    width = 1 << (width.bit_length() - 1)
    sample = addresses[:4]
    while width > 1:
        groups = sample.reshape(-1, width)
        if (np.diff(groups, axis=1) == itemsize).all() and not (groups[:, 0] % (width * itemsize)).any():
            return width
        width //= 2
    return 1


def _warp_instructions(numel: int, num_warps: int, spec: MachineSpec) -> int:
    """Warp instructions (summed over warps) one tile-wide op takes: every warp covers its share."""
    return num_warps * _per_thread(numel, num_warps, spec)


def _per_thread(numel: int, num_warps: int, spec: MachineSpec) -> int:
    """Elements each thread holds of a tile of numel (at least one: a smaller tile is replicated)."""
    return -(-max(1, numel) // (num_warps * spec.warp_size))


def _numel(entry: list) -> int:
    return math.prod(entry[0]) if entry[0] else 1


def _compute(info: dict, execs: int, spec: MachineSpec, num_warps: int, padding: int,
             mma_tiles: dict | None = None, operands: str = "",
             layout: mma_layout.DotLayout | None = None) -> Counters | None:
    """Counters of a non-memory op executed `execs` times by the measured programs.
    mma_tiles: result shape -> layout of the kernel's dots (values of that shape live in it, copies and all);
    operands: for a dot, where its operands come from (_dot_operands); layout: a dot's own."""
    mma_tiles = mma_tiles or {}
    name = info["op"]
    out = info["results"][0] if info["results"] else (info["operands"][0] if info["operands"] else [[], "i32"])
    numel = _numel(out)
    dtype = parse_ir_type(out[1])
    if info.get("merged"):  # its instruction is another op's (jit.isel); a fused add still does its FLOPs
        fused = OPS[name].cls in FLOAT_CLASSES and dtype.is_floating()
        return Counters(simt_flops=execs * numel) if fused else None
    tile = mma_tiles.get(tuple(out[0]))
    held = numel * (tile.copies if tile else 1)  # elements the warps work on, copies of a dot layout included
    per = _warp_instructions(held, num_warps, spec)
    if name == OP.TILE_DOT:
        return _dot(info, execs, spec, num_warps, operands, layout, mma_tiles)
    if name in _COMBINES:
        return _reduction(info, execs, spec, num_warps, mma_tiles)
    if name == OP.TILE_PERMUTE:
        order = tuple(info["attrs"]["order"])
        if not shared_model.moves_fastest_dim(order) or info["attrs"].get("staged"):
            return None  # a register rename, or a view of a dot operand's staged tile (jit.passes.mark_staged_permutes)
        src = info["operands"][0]
        itemsize = max(1, parse_ir_type(src[1]).itemsize)
        writes, reads, _ = shared_model.permute(tuple(src[0]), order, itemsize, num_warps, spec.warp_size, padding)
        return _times(_exchange(writes + reads, spec), execs) + Counters(barriers=execs * num_warps,
                                                                         exchanges=execs * num_warps)
    cls = OPS[name].cls
    if cls == "barrier":
        return Counters(barriers=execs * num_warps)
    if cls in ("none", "tensor"):
        return None
    if name == OP.TILE_SORT:
        n = out[0][-1] if out[0] else 1
        stages = max(1, int(math.log2(max(2, n))) * (int(math.log2(max(2, n))) + 1) // 2)
        return Counters(instructions={"compare_select": execs * _warp_instructions(held * stages, num_warps, spec)})
    if cls == "branch":
        return Counters(instructions={"branch": execs * num_warps})
    cls = _class(cls, dtype)
    flops = 0
    if cls in FLOAT_CLASSES and dtype.is_floating():
        flops = execs * numel * (2 if cls == "fp_fma" else 1)
    source = parse_ir_type(info["operands"][0][1]) if info["operands"] else dtype
    lowered = isel.lowering(name, source, dtype, info.get("divisor", "runtime"))
    if lowered is None:
        return Counters(instructions={cls: execs * per}, simt_flops=flops)
    # each thread issues k instructions an element it holds; a tile smaller than the warps is held by every warp
    # (Triton replicates it), so each warp issues them (a fp64 sin of a rotary embedding's 32 angles on 16 warps)
    per_thread = _per_thread(held, num_warps, spec)
    return Counters(instructions={c: execs * num_warps * math.ceil(k * per_thread) for c, k in lowered.items()},
                    simt_flops=flops)


def _class(cls: str, dtype) -> str:
    """The counted class of an op of table class `cls` on `dtype` (float arithmetic on integers is integer)."""
    if cls in OWN_FIELD_CLASSES:
        return "other"
    if cls in FLOAT_CLASSES and not dtype.is_floating():
        return "integer_multiply" if cls in ("fp_mul", "fp_fma") else "integer"
    return cls


def _dot(info: dict, execs: int, spec: MachineSpec, num_warps: int, operands: str,
         layout: mma_layout.DotLayout | None, mma_tiles: dict) -> Counters:
    """A tl.dot: its FLOPs, the MMAs its warps issue (copies of a replicated layout issue theirs too), the staging
    of its operands in shared memory, and the trip through shared memory of an operand computed in registers
    under another layout or split among warps along N (jit.mma_layout)."""
    (a_shape, a_type), (b_shape, _), _acc = info["operands"]
    *batch, m, k = a_shape
    n = b_shape[-1]
    batches = math.prod(batch) if batch else 1
    dtype = parse_ir_type(a_type)
    flops = 2 * batches * m * n * k * execs
    precision = info["attrs"].get("input_precision", "tf32")
    key = mma_layout.mma_type(dtype, precision)
    if dtype.is_fp32() and precision == "tf32x3":
        flops *= 3
    warps = ((layout.warps_m, layout.warps_n) if layout else (num_warps, 1) if batch
             else mma_layout.warps_per_tile((m, n), num_warps, False, False))
    writes, reads, _ = shared_model.dot(m, n, k, max(1, dtype.itemsize), warps, spec.warp_size, batches)
    if spec.async_mma(batches * m, num_warps) and key not in simulator.specs.SIMT_DOT_TYPES:
        reads = []  # warpgroup MMAs read the staged operands straight from shared memory
    tile = f"{key}:{batches * m}:{n}:{k}" + (f":{operands}" if operands else "")
    counters = (Counters(tensor_flops={key: flops}, tensor_tiles={tile: flops * (layout.copies if layout else 1)},
                         barriers=execs * num_warps) + _times(_shared(writes + reads, spec), execs))
    producer = mma_tiles.get(tuple(a_shape))
    if layout and operands.startswith("reg") and (layout.warps_n > 1 or producer and producer != layout):
        counters = counters + _times(_layout_change(batches * m * k * max(1, dtype.itemsize), num_warps, spec), execs)
    return counters


def _reduction(info: dict, execs: int, spec: MachineSpec, num_warps: int, mma_tiles: dict) -> Counters:
    """A reduction or scan. Over a tile shaped like a dot result the values sit in that dot's MMA layout
    (jit.mma_layout): the reduction crosses the warps its layout spreads along the axis, and copies of the tile
    are reduced by their own warps. Otherwise it crosses the lanes and warps of the layout it inherits from the
    load it reduces (the `split` jit.passes.assign_reduction_order records: a [4, 256] fp32 tile loaded 4 elements
    a thread on 8 warps spreads its rows over 4 of them)."""
    name = info["op"]
    shape = tuple(info["operands"][0][0])
    axis = int(info["attrs"]["axis"])
    tile = mma_tiles.get(shape) if len(shape) == 2 else None
    split = info["attrs"].get("split")
    along = tile.along(shape, axis) if tile else (tuple(split[1:]) if split else None)
    dtype = parse_ir_type(info["operands"][0][1])
    numel = math.prod(shape)
    combine = info.get("combine", [])
    instructions: dict[str, int] = {}
    per = _warp_instructions(numel * (tile.copies if tile else 1), num_warps, spec)
    flops = 0
    for op in combine:
        cls = _class(OPS[op].cls, dtype)
        instructions[cls] = instructions.get(cls, 0) + execs * per
        if cls.startswith("fp_") and dtype.is_floating():
            flops += execs * numel
    if tile is None and name == OP.TILE_REDUCE:
        writes, reads, _, lanes, warps = gpu_resources.reduce_exchange(info, num_warps, spec.warp_size)
    else:
        writes, reads, _, lanes, warps = shared_model.cross_warp(shape, axis, max(1, dtype.itemsize), num_warps,
                                                                 spec.warp_size, along)
    outputs = numel // shape[axis]
    held = max(1, -(-outputs * lanes * warps // (num_warps * spec.warp_size)))  # results each thread ends up with
    rounds = max(0, (lanes - 1).bit_length())
    if rounds:
        instructions["shuffle"] = execs * num_warps * rounds * held
    counters = Counters(instructions=instructions, simt_flops=flops)
    if writes:
        # every warp stores its partial of each result it holds, waits at the barrier and loads the combined value
        # back: the exchange takes longer the more results each thread holds (on the H200, row kernels' programs of
        # 4-8 rows on 8-16 warps, one or two a unit, ran 16-32 % slower than modeled next to one-row programs when
        # the exchange was charged once: simulator/data/h200_holdout*.csv)
        counters = counters + _times(_exchange(writes + reads, spec), execs) + Counters(
            barriers=2 * execs * num_warps, exchanges=execs * num_warps * held)
    return counters


def _shared(accesses: list, spec: MachineSpec) -> Counters:
    total = Counters()
    for addresses, active, nbytes in accesses:
        total = total + simulator.bank_conflicts(addresses, active, nbytes, spec).to_counters()
    return total


def _exchange(accesses: list, spec: MachineSpec) -> Counters:
    """Shared-memory traffic of a cross-warp exchange, its wavefronts counted as the exchange's too."""
    shared = _shared(accesses, spec)
    return dataclasses.replace(shared, exchange_wavefronts=shared.shared_wavefronts)


def _times(counters: Counters, k: int) -> Counters:
    return sampling.scale(counters, k, 0)
