"""Machine specs: the emulated GPU's numbers as data, each with where it came from.

Everything the simulator and the cost model need to know about a target lives in one frozen
`MachineSpec`, so a user can compare machines, define their own (`spec.replace(...)` plus
`register_spec`) and see how much to trust each number (`spec.sources[field]`). Nothing in the
simulator hard-codes a warp width, a bank count or a cache size.

Which spec a launch uses: the launch's own `machine=` argument, else the innermost
`with machine(...)` block, else the environment variable WAVETILE_MACHINE (read at call time),
else "mtt-s5000".
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

import numpy as np

from simulator.presets import PRESETS

DEFAULT_MACHINE = "mtt-s5000"
ENV_VAR = "WAVETILE_MACHINE"
CONFIDENCE = ("H", "M", "L", "assumed")

# Throughput pipes a warp instruction can occupy (lanes per clock per unit are per spec).
PIPES = ("fma", "alu", "imad", "special", "conversion", "branch", "shuffle", "memory", "fp64")


@dataclass(frozen=True, eq=True)
class MachineSpec:
    """One emulated GPU. Units are per compute unit (SM / MP) unless the name says otherwise."""

    name: str
    vendor: str
    arch: str
    # compute units and scheduling
    units: int
    clock_hz: float
    warp_size: int
    max_threads_per_program: int
    max_warps_per_unit: int
    max_programs_per_unit: int
    issue_schedulers: int
    # registers (32-bit)
    registers_per_unit: int
    registers_per_program: int
    max_registers_per_thread: int
    register_alloc_unit: int
    # shared memory
    shared_bytes_per_unit: int
    local_cache_bytes: int  # L1 data cache and shared memory of one unit together (spills are cached there)
    shared_bytes_per_program_max: int
    shared_reserved_per_program: int
    shared_banks: int
    shared_bank_bytes: int
    shared_wavefronts_per_clk: float
    l1_lines_per_clk: float  # 128-B lines whose tags a unit's L1 looks up per clock for global loads (a warp's load
    # down 32 rows touches 32)
    l1_wavefronts_per_clk: float  # wavefronts a unit's L1 serves global loads per clock (Counters.load_wavefronts)
    split_pieces_per_clk: float  # pieces of sectors a unit passes on per clock from store instructions that each
    # write part of a sector the lane's next instructions complete (Counters.store_split_sectors)
    # global memory path
    transaction_lanes: int
    sector_bytes: int
    l2_bytes: int
    # shares of l2_bytes: a reuse less than near x l2_bytes of other traffic after the last touch hits, one farther
    # than far x l2_bytes misses (the hit rate falls linearly between); dirty x l2_bytes of written data are still
    # in the L2 when a launch ends (written back after it)
    l2_reuse_near: float
    l2_reuse_far: float
    l2_dirty: float
    l2_line_bytes: int
    l2_ways: int
    l2_bytes_per_s: float
    l2_partial_writes_per_s: float  # sectors a store writes only part of, merged into the L2's copy per second
    dram_bytes_per_s: float
    dram_efficiency: float
    dram_atom_bytes: int
    # (run bytes, bandwidth relative to long runs when the programs running together read neighbouring runs, when
    # they read far-apart ones): reads made of short contiguous runs waste DRAM bandwidth
    dram_run_efficiency: tuple[tuple[int, float, float], ...]
    dram_round_cycles: float  # one round of a loop's loads from DRAM, issue to use, nothing else in flight
    l2_round_cycles: float  # the same from the L2
    l2_load_bytes_per_s: float  # L2-resident loads through the L1 (the round model's L2 bandwidth)
    dram_queue_exponent: float  # round = (latency^p + queue^p)^(1/p): how the two overlap near saturation
    l2_queue_exponent: float
    # arithmetic rates (FLOP or lane-ops per clock per unit)
    tensor_flops_per_clk: Mapping[str, float]
    tensor_efficiency: float
    tensor_subcores: int
    mma_async_min_m: int  # rows per warpgroup MMA (0: no asynchronous MMA path)
    mma_async_warps: int  # warps that issue one asynchronous MMA together
    mma_sync_fraction: float  # rate of warp-level MMAs relative to tensor_flops_per_clk
    mma_kmajor_types: tuple[str, ...]  # operand types asynchronous MMAs read only K-major from shared memory
    mma_transpose_cycles: float  # cycles per element to transpose an MN-major operand of those types
    fp32_flops_per_clk: float
    simt_lanes_per_clk: Mapping[str, float]
    # atomics, barriers, launch
    # GPU-wide rates of atomics spread over many lines: element operations and line requests per clock, for atomics
    # ordered by fences (Triton's default acq_rel) and relaxed ones; one line serves a request every
    # atomic_line_cycles; a warp's fenced atomic waits atomic_round_cycles for the one before it
    atomic_ops_per_clk: float
    atomic_line_requests_per_clk: float
    atomic_relaxed_ops_per_clk: float
    atomic_relaxed_line_requests_per_clk: float
    atomic_line_cycles: float
    atomic_round_cycles: float
    atomic_vector_bytes: int  # the widest float atomic add a lane issues
    atomic_serial_cycles: float
    barrier_cycles: float
    launch_overhead_s: float
    program_start_cycles: float  # a unit's share of the block scheduler: cycles to start each program of a launch
    # per-warp issue and register spills
    warp_issue_ipc: float  # instructions one warp issues per clock on average (dependency stalls)
    spill_traffic: float  # local-memory round trips per spilled register per program
    unroll_load_instructions: float  # what a loop body's size counts for each of its load instructions
    unroll_instructions: float  # warp instructions per iteration up to which the backend unrolls a loop body
    unroll_copies: float  # copies it makes of such a body when the trip count is known only at run time
    unroll_full_instructions: float  # trips x body instructions up to which it unrolls a constant-trip loop fully
    serialized_load_waits: float  # round trips a loop body waits for its loads when the compiler schedules them apart
    # the same for a loop that gathers (its loads' addresses come from its other loads), by the program's warps: a
    # program takes the row of the most warps at or below its own
    serialized_gather_waits: Mapping[int, float]
    exchange_cycles: float  # critical-path cost of each result a warp passes through a cross-warp exchange beyond
    #                         barrier_cycles and its wavefronts (shared store, wait, load)
    # cost-model blend: T_wave = max + alpha * (sum - max)
    alpha: float
    sources: Mapping[str, tuple[str, str]] = field(default_factory=dict, compare=False)

    def __post_init__(self) -> None:
        _validate(self)

    def __hash__(self) -> int:
        # specs key the device L2s and the profiler's caches on every launch: hash the fields once
        h = self.__dict__.get("_hash")
        if h is None:
            h = hash(tuple((f.name, _freeze(getattr(self, f.name))) for f in _compared_fields()))
            object.__setattr__(self, "_hash", h)
        return h

    def __reduce__(self):  # pickles without the cached hash (string hashes differ between processes)
        return _rebuild_spec, ({f.name: getattr(self, f.name) for f in dataclasses.fields(self)},)

    # --- derived numbers -------------------------------------------------------------------------

    @property
    def sectors_per_line(self) -> int:
        """Sectors per L2 line (4 for 128-B lines of 32-B sectors)."""
        return self.l2_line_bytes // self.sector_bytes

    @property
    def l2_reuse_bytes(self) -> int:
        """The L2 capacity reuse sees: the middle of the measured fall from always hitting to never, in whole sets."""
        per_set = self.l2_line_bytes * self.l2_ways
        return max(1, int((self.l2_reuse_near + self.l2_reuse_far) / 2 * self.l2_bytes // per_set)) * per_set

    @property
    def l2_dirty_bytes(self) -> float:
        """Written bytes the L2 holds back when a launch ends."""
        return self.l2_dirty * self.l2_bytes

    def l2_reuse_hit(self, distance: np.ndarray | float) -> np.ndarray | float:
        """Probability that a reuse after `distance` bytes of other traffic hits in the L2."""
        return self.reuse_hit(distance, self.l2_bytes)

    def reuse_hit(self, distance: np.ndarray | float, capacity: float) -> np.ndarray | float:
        """Probability that a reuse after `distance` bytes of other traffic hits in a cache of `capacity` bytes: the
        L2's measured fall, scaled to that capacity (for the L1 an assumption: no L1 microbenchmark)."""
        near, far = self.l2_reuse_near * capacity, self.l2_reuse_far * capacity
        return np.clip((far - np.asarray(distance, dtype=float)) / max(1.0, far - near), 0.0, 1.0)

    def run_efficiency(self, run_bytes: float, neighbours: bool) -> float:
        """DRAM bandwidth, relative to long runs, of reads made of `run_bytes`-long contiguous runs: interpolated
        in the measured table (in log bytes), 1 from twice its longest run on."""
        if not self.dram_run_efficiency:
            return 1.0
        table = list(self.dram_run_efficiency) + [(2 * self.dram_run_efficiency[-1][0], 1.0, 1.0)]
        runs = np.log([r for r, _, _ in table])
        values = [near if neighbours else far for _, near, far in table]
        return float(np.interp(np.log(max(1.0, run_bytes)), runs, values))

    @property
    def l2_sets(self) -> int:
        """Number of L2 sets for the documented associativity (at least one)."""
        return self.l2_reuse_bytes // (self.l2_line_bytes * self.l2_ways)

    @property
    def peak_fp32_flops(self) -> float:
        """Device-wide SIMT fp32 FLOP/s (FMA = 2 FLOPs)."""
        return self.fp32_flops_per_clk * self.units * self.clock_hz

    def tensor_rate(self, dtype: str) -> float:
        """FLOP per clock per unit of `tl.dot` with operands of `dtype`.

        Operand types with no tensor-core path on this machine fall back to the SIMT fp32 rate
        (the compiler would emulate them with FMAs); "fp32" itself means "no TF32", i.e. SIMT.
        """
        key = DTYPE_ALIASES.get(dtype, dtype)
        return float(self.tensor_flops_per_clk.get(key, self.fp32_flops_per_clk))

    def peak_tensor_flops(self, dtype: str = "fp16") -> float:
        """Device-wide tensor FLOP/s for `dtype` operands."""
        return self.tensor_rate(dtype) * self.units * self.clock_hz

    def async_mma(self, rows: int, num_warps: int) -> bool:
        """Whether a dot tile of `rows` rows issues warpgroup MMAs (Hopper's wgmma): the program's warps
        form whole groups of mma_async_warps and the rows a multiple of mma_async_min_m. Those MMAs
        read their operands from shared memory themselves, not through the load/store unit."""
        return (self.mma_async_min_m > 0 and num_warps % self.mma_async_warps == 0
                and rows > 0 and rows % self.mma_async_min_m == 0)

    def cpi(self, pipe: str) -> float:
        """Cycles one scheduler spends issuing one warp instruction on `pipe` (warp width aware)."""
        lanes_per_scheduler = self.simt_lanes_per_clk[pipe] / self.issue_schedulers
        return self.warp_size / lanes_per_scheduler

    def replace(self, **changes: object) -> MachineSpec:
        """A variant of this spec; fields given here are tagged 'user' in `sources`."""
        sources = dict(self.sources)
        for name in changes:
            if name != "sources":
                sources[name] = ("user", "set by MachineSpec.replace")
        changes.setdefault("sources", sources)
        return dataclasses.replace(self, **changes)

    def describe(self) -> str:
        """Field, value, confidence and note per line: what the spec knows and how well."""
        rows = []
        for f in _compared_fields():
            conf, note = self.sources.get(f.name, ("?", ""))
            rows.append(f"{f.name:30s} {_show(getattr(self, f.name)):>24s}  {conf:8s} {note}")
        return "\n".join(rows)


# Dot types without a matrix instruction: they run on the SIMT lanes (fp32 with input_precision="ieee", fp64).
SIMT_DOT_TYPES = ("fp32", "fp64")

# Operand dtype spellings the compiler may use, mapped to the keys of tensor_flops_per_clk.
DTYPE_ALIASES = {
    "float16": "fp16", "f16": "fp16", "half": "fp16",
    "bfloat16": "bf16",
    "float32": "fp32", "f32": "fp32",
    "float64": "fp64", "f64": "fp64",
    "fp8e4nv": "fp8", "fp8e4m3": "fp8", "fp8e5m2": "fp8", "fp8e4b15": "fp8",
    "float8_e4m3fn": "fp8", "float8_e5m2": "fp8",
    "i8": "int8",
}
# bytes of one element of each tensor-core operand type (tf32 sits in 32 bits)
OPERAND_BYTES = {"fp64": 8, "fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}


def _rebuild_spec(values: dict) -> MachineSpec:
    return MachineSpec(**values)


@functools.cache
def _compared_fields() -> tuple[dataclasses.Field, ...]:
    return tuple(f for f in dataclasses.fields(MachineSpec) if f.compare)


def _freeze(value: object) -> object:
    if isinstance(value, Mapping):
        return tuple(sorted(value.items()))
    return value


def _show(value: object) -> str:
    if isinstance(value, Mapping):
        return ",".join(f"{k}:{v:g}" for k, v in value.items())
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


_POSITIVE = (
    "units", "clock_hz", "warp_size", "max_threads_per_program", "max_warps_per_unit",
    "max_programs_per_unit", "issue_schedulers", "registers_per_unit", "registers_per_program",
    "max_registers_per_thread", "register_alloc_unit", "shared_bytes_per_unit", "local_cache_bytes", "shared_banks",
    "shared_bank_bytes", "shared_wavefronts_per_clk", "l1_lines_per_clk", "l1_wavefronts_per_clk",
    "split_pieces_per_clk", "transaction_lanes", "sector_bytes", "l2_bytes", "l2_reuse_near", "l2_reuse_far",
    "l2_line_bytes", "l2_ways", "l2_bytes_per_s", "l2_partial_writes_per_s", "dram_bytes_per_s", "dram_efficiency",
    "dram_atom_bytes", "dram_round_cycles", "l2_round_cycles", "l2_load_bytes_per_s", "dram_queue_exponent",
    "l2_queue_exponent", "tensor_efficiency",
    "tensor_subcores", "fp32_flops_per_clk", "mma_async_warps", "mma_sync_fraction",
    "warp_issue_ipc", "unroll_instructions", "unroll_copies", "unroll_full_instructions", "serialized_load_waits",
    "atomic_ops_per_clk",
    "atomic_line_requests_per_clk",
    "atomic_relaxed_ops_per_clk", "atomic_relaxed_line_requests_per_clk", "atomic_line_cycles", "atomic_round_cycles",
    "atomic_vector_bytes",
)


def _validate(spec: MachineSpec) -> None:
    """Reject specs the models cannot run on, with the field named."""
    for name in _POSITIVE:
        if not getattr(spec, name) > 0:
            raise ValueError(f"MachineSpec {spec.name!r}: {name} must be > 0, got {getattr(spec, name)!r}")
    if not spec.l2_reuse_near <= spec.l2_reuse_far <= 1:
        raise ValueError(f"MachineSpec {spec.name!r}: 0 < l2_reuse_near <= l2_reuse_far <= 1 (shares of l2_bytes)")
    if not 0 <= spec.l2_dirty <= 1:
        raise ValueError(f"MachineSpec {spec.name!r}: l2_dirty is a share of l2_bytes, in [0, 1]")
    if spec.l2_line_bytes % spec.sector_bytes:
        raise ValueError(f"MachineSpec {spec.name!r}: l2_line_bytes must be a multiple of sector_bytes")
    if spec.sectors_per_line > 16:
        raise ValueError(f"MachineSpec {spec.name!r}: at most 16 sectors per L2 line are modelled")
    atom = spec.dram_atom_bytes
    if atom % spec.sector_bytes or spec.l2_line_bytes % atom:
        raise ValueError(f"MachineSpec {spec.name!r}: dram_atom_bytes must be a multiple of sector_bytes "
                         "that divides l2_line_bytes")
    if spec.warp_size % spec.transaction_lanes and spec.transaction_lanes < spec.warp_size:
        raise ValueError(f"MachineSpec {spec.name!r}: transaction_lanes must divide warp_size")
    for name in ("sector_bytes", "l2_line_bytes", "shared_bank_bytes", "dram_atom_bytes", "atomic_vector_bytes"):
        value = getattr(spec, name)
        if value & (value - 1):
            raise ValueError(f"MachineSpec {spec.name!r}: {name} must be a power of two, got {value}")
    runs = [run for run, _, _ in spec.dram_run_efficiency]
    if runs != sorted(runs) or any(not (0 < e <= 1) for _, *pair in spec.dram_run_efficiency for e in pair):
        raise ValueError(f"MachineSpec {spec.name!r}: dram_run_efficiency must be (run bytes, near, far) rows by "
                         "growing run, efficiencies in (0, 1]")
    gathers = spec.serialized_gather_waits
    if 1 not in gathers or any(not (warps >= 1 and waits > 0) for warps, waits in gathers.items()):
        raise ValueError(f"MachineSpec {spec.name!r}: serialized_gather_waits maps warps (1 among them) to waits > 0")
    missing = set(PIPES) - set(spec.simt_lanes_per_clk)
    if missing:
        raise ValueError(f"MachineSpec {spec.name!r}: simt_lanes_per_clk lacks {sorted(missing)}")
    if not 0 <= spec.alpha <= 1:
        raise ValueError(f"MachineSpec {spec.name!r}: alpha must be in [0, 1]")
    for f in _compared_fields():
        conf = spec.sources.get(f.name, ("user",))[0]
        if conf not in CONFIDENCE + ("user",):
            raise ValueError(f"MachineSpec {spec.name!r}: confidence of {f.name} must be one of {CONFIDENCE}")


def spec_from_table(table: Mapping[str, tuple[object, str, str]]) -> MachineSpec:
    """Build a spec from {field: (value, confidence, note)}, the form the presets are written in."""
    values = {name: entry[0] for name, entry in table.items()}
    sources = {name: (entry[1], entry[2]) for name, entry in table.items()}
    return MachineSpec(**values, sources=sources)


# --- registry and selection ----------------------------------------------------------------------

_REGISTRY: dict[str, MachineSpec] = {}
_CURRENT: contextvars.ContextVar[MachineSpec | None] = contextvars.ContextVar("wavetile_machine", default=None)


def register_spec(spec: MachineSpec, *, overwrite: bool = False) -> MachineSpec:
    """Make `spec` selectable by its name (case-insensitive)."""
    key = spec.name.lower()
    if key in _REGISTRY and not overwrite and _REGISTRY[key] != spec:
        raise ValueError(f"a different machine named {spec.name!r} is already registered; pass overwrite=True")
    _REGISTRY[key] = spec
    return spec


def registered_specs() -> tuple[str, ...]:
    """Names of all selectable machines."""
    return tuple(sorted(_REGISTRY))


def get_spec(name_or_spec: str | MachineSpec) -> MachineSpec:
    """The spec itself, or the registered spec of that name."""
    if isinstance(name_or_spec, MachineSpec):
        return name_or_spec
    try:
        return _REGISTRY[str(name_or_spec).strip().lower()]
    except KeyError:
        raise KeyError(f"unknown machine {name_or_spec!r}; known: {', '.join(registered_specs())}") from None


def current_spec(override: str | MachineSpec | None = None) -> MachineSpec:
    """The spec a launch runs on: `override` (the launch's machine=), context, env var, default."""
    if override is not None:
        return get_spec(override)
    active = _CURRENT.get()
    if active is not None:
        return active
    return get_spec(os.environ.get(ENV_VAR) or DEFAULT_MACHINE)


@contextlib.contextmanager
def machine(name_or_spec: str | MachineSpec) -> Iterator[MachineSpec]:
    """`with machine("h200"):` makes launches inside the block run on that machine."""
    token = _CURRENT.set(get_spec(name_or_spec))
    try:
        yield _CURRENT.get()
    finally:
        _CURRENT.reset(token)


def ceil_div(a: int, b: int) -> int:
    """Integer ceiling division, shared by the occupancy and cost code."""
    return -(-a // b)


for _table in PRESETS:
    register_spec(spec_from_table(_table))
