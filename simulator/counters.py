"""Counters: the exact event counts of one launch (or one source line of it), as one record.

The runtime fills a `Counters` per launch and per source line from what the kernel did; the
cost model, the profile tables and the trace read only this record. Records add up (`a + b`),
so per-line records sum to the launch record and launches sum to a session. Counts are totals
over all programs of the launch; the last group of fields describes the launch configuration
and combines by max when records are added.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field

# Warp-instruction classes the compiler counts (memory, atomic and barrier instructions are
# counted by their own fields below). Each class runs on one pipe of the spec's simt_lanes_per_clk.
INSTRUCTION_CLASSES: Mapping[str, str] = {
    "fp_add": "fma",
    "fp_mul": "fma",
    "fp_fma": "fma",
    "special": "special",  # exp2, log2, rsqrt, sin, ... (SFU)
    "integer": "alu",  # add, logic, shift, compare (IADD3, LOP3, SHF, ISETP)
    "integer_multiply": "imad",  # multiply and multiply-high (IMAD, IMAD.WIDE): a pipe of its own
    "conversion": "conversion",
    "compare_select": "alu",
    "branch": "branch",
    "shuffle": "shuffle",  # cross-lane exchange for warp reductions, scans and layout changes
    "fp64": "fp64",  # double-precision arithmetic and its software math routines (DFMA, DADD, DMUL)
    "other": "alu",
}

_MAX = {"merge": "max"}
ROW_BUCKETS = 256  # Counters.row_work pools the coordinates of the grid's first dim into at most this many buckets


@dataclass
class Counters:
    """Exact counts of one launch or one source line.

    Fields (all counts are summed over every program of the launch):
      instructions            warp instructions executed, by class of INSTRUCTION_CLASSES
      tensor_flops            tl.dot FLOPs (2*M*N*K), by operand dtype ("fp16", "bf16", "tf32", ...)
      tensor_tiles            the same FLOPs by instruction shape "dtype:M:N:K[:a,b]" of the tile dot (which matrix
                              instruction a GPU lowering can use depends on M, the warps and, for 32- and 8-bit
                              types, on A and B being K-major; a, b: k, mn, reg or ?, see jit.profiler)
      simt_flops              floating-point lane operations of active lanes (FMA = 2), outside tl.dot
      load_requests           global load requests (one per 32-lane transaction group with an active lane)
      load_sectors            distinct 32-B sectors per load request, summed
      load_lines              distinct L2 lines (tags looked up) per load request, summed
      load_wavefronts         the L1's wavefronts per load request, summed: its banks' words are the shared memory
                              banks', one word a bank a wavefront (simulator.banks), so lanes reading one word
                              each of 32 lines whose words fall in one bank take 32 and of lines spread over the
                              banks a few (MachineSpec.l1_wavefronts_per_clk)
      load_bytes_requested    bytes the active lanes asked for
      load_bytes_moved        load_sectors x sector bytes (what the memory system moved)
      store_*                 the same for global stores
      store_partial_sectors   sectors a store writes only part of (fewer bytes than the sector holds, after the
                              instructions that store one lane's contiguous run merge): the L2 merges each into the
                              sector's old bytes, at a rate of its own (MachineSpec.l2_partial_writes_per_s)
      store_split_sectors     pieces of sectors that single store instructions write in part where the lane's
                              next instructions complete them (one element an instruction past an unaligned bound)
                              and the SM does not merge them first: each piece goes on as a write of its own
                              (MachineSpec.split_pieces_per_clk)
      masked_lanes            lanes masked off in global loads and stores (inactive lanes)
      l1_hit_sectors          load sectors the unit's L1 served (they never reach the L2)
      l2_hits, l2_misses      sector accesses that hit / missed in the L2 model (loads and stores)
      dram_read_bytes         bytes fetched from DRAM on L2 read misses (in dram_atom_bytes units)
      dram_write_bytes        dirty bytes written back to DRAM (evictions and end of launch)
      dram_short_run_bytes    DRAM bandwidth the reads of short contiguous runs waste, in bytes it could have
                              moved: dram_read_bytes x (1 / efficiency - 1) (MachineSpec.run_efficiency)
      shared_requests         shared-memory warp instructions
      shared_wavefronts       shared-memory wavefronts after bank conflicts
      shared_bank_conflicts   wavefronts beyond the conflict-free minimum
      shared_bytes            bytes moved through shared memory by active lanes
      atomic_requests         atomic warp instructions
      atomic_fenced_requests  of them, those ordered by fences (any sem but relaxed; Triton's default acq_rel puts
                              a barrier before each): a warp's next one waits for the previous one's round trip
      atomic_ops              atomic element operations (active lanes x elements each updates)
      atomic_relaxed_ops      of them, those with relaxed ordering (no fence: served at a higher rate)
      atomic_serialized       extra serialised steps: sum over instructions of (same-address lanes - 1)
      atomic_max_multiplicity most atomic operations on one address in the launch (max, not sum)
      atomic_line_requests    L2 line requests of atomic warp instructions (one per line an instruction touches)
      atomic_hot_line_requests  most atomic line requests to one L2 line in the launch (max, not sum): requests
                              to one line are served one after another
      barriers                barrier instructions executed, counted per warp
      exchanges               cross-warp exchanges through shared memory (store, barrier, load: reductions across
                              warps, layout changes), counted per warp, a reduction's once per result each thread
                              holds (each is stored, waited for and loaded back); their barriers are in `barriers` too
      exchange_wavefronts     of shared_wavefronts, those of the cross-warp exchanges: between two barriers the
                              program's warps wait for all of them, one after another through the unit's banks
      phase_rounds            per memory phase (the loads of one loop, or of the code outside loops), how many
                              times it ran; the key "loop:depth:chain" says how a GPU build waits for its loads:
                              depth iterations of loads in flight ahead of their use (software pipelining; 0 =
                              none), chain dependent round trips per iteration (a page-table gather: 2); a
                              ":serial" suffix when the loads wait for the previous iteration's (a pointer chase),
                              ":constant" when the loop's trip count is a compile-time constant, ":ordered"
                              when its body writes memory or waits at a barrier (no later iteration's loads
                              move above it)
      phase_bytes             per memory phase, the bytes its loads move (load_bytes_moved)
      phase_dram_bytes        per memory phase, the DRAM bytes its loads read
      phase_l1_bytes          per memory phase, the bytes of its loads the L1 served
      phase_instructions      per memory phase, the warp instructions of the other ops of its loop (shared-memory
                              ones included): the work an iteration does between waiting for its loads
      phase_flops             per memory phase, the tl.dot FLOPs of its loop
      phase_accesses          per memory phase, the warp instructions of its loads
      row_work                how the programs' work varies along the grid's first dim: per bucket of its
                              coordinates (ROW_BUCKETS of them), the memory-op executions of the
                              measured programs there; empty when every program does the same
      row_programs            per bucket, the measured programs there
      programs                programs (workgroups) executed
      num_warps, num_stages   launch configuration (max when added)
      registers_per_thread    compiler's register demand per thread, before any cap (0 = unknown; max when
                              added); what does not fit the machine's per-thread budget spills
      shared_bytes_per_program shared memory one program allocates (max when added)
      loop_load_waits         times a thread waits for loads in one body of the launch's main loop, as the GPU's
                              compiler scheduled them (0 = unknown: the simulator cannot count them; a GPU build's
                              machine code gives them, simulator.validate --compiled-waits)
    """

    instructions: dict[str, int] = field(default_factory=dict)
    tensor_flops: dict[str, int] = field(default_factory=dict)
    tensor_tiles: dict[str, int] = field(default_factory=dict)
    simt_flops: int = 0
    load_requests: int = 0
    load_sectors: int = 0
    load_lines: int = 0
    load_wavefronts: int = 0
    load_bytes_requested: int = 0
    load_bytes_moved: int = 0
    store_requests: int = 0
    store_sectors: int = 0
    store_lines: int = 0
    store_bytes_requested: int = 0
    store_bytes_moved: int = 0
    store_partial_sectors: int = 0
    store_split_sectors: int = 0
    masked_lanes: int = 0
    l1_hit_sectors: int = 0
    l2_hits: int = 0
    l2_misses: int = 0
    dram_read_bytes: int = 0
    dram_write_bytes: int = 0
    dram_short_run_bytes: int = 0
    shared_requests: int = 0
    shared_wavefronts: int = 0
    shared_bank_conflicts: int = 0
    shared_bytes: int = 0
    atomic_requests: int = 0
    atomic_fenced_requests: int = 0
    atomic_ops: int = 0
    atomic_relaxed_ops: int = 0
    atomic_serialized: int = 0
    atomic_max_multiplicity: int = field(default=0, metadata=_MAX)
    atomic_line_requests: int = 0
    atomic_hot_line_requests: int = field(default=0, metadata=_MAX)
    barriers: int = 0
    exchanges: int = 0
    exchange_wavefronts: int = 0
    phase_rounds: dict[str, int] = field(default_factory=dict)
    phase_bytes: dict[str, int] = field(default_factory=dict)
    phase_dram_bytes: dict[str, int] = field(default_factory=dict)
    phase_l1_bytes: dict[str, int] = field(default_factory=dict)
    phase_instructions: dict[str, int] = field(default_factory=dict)
    phase_flops: dict[str, int] = field(default_factory=dict)
    phase_accesses: dict[str, int] = field(default_factory=dict)
    row_work: dict[str, int] = field(default_factory=dict)
    row_programs: dict[str, int] = field(default_factory=dict)
    programs: int = 0
    num_warps: int = field(default=0, metadata=_MAX)
    num_stages: int = field(default=0, metadata=_MAX)
    registers_per_thread: int = field(default=0, metadata=_MAX)
    shared_bytes_per_program: int = field(default=0, metadata=_MAX)
    loop_load_waits: int = field(default=0, metadata=_MAX)

    def __add__(self, other: Counters) -> Counters:
        if not isinstance(other, Counters):
            return NotImplemented
        kinds = _merge_kinds()
        merged = dict(self.__dict__)
        for name, b in other.__dict__.items():
            if not b:  # most records fill a few fields: skip the rest
                continue
            a, kind = merged[name], kinds[name]
            if kind == "dict":
                merged[name] = {**a, **{k: a.get(k, 0) + v for k, v in b.items()}}
            elif kind == "max":
                merged[name] = a if a >= b else b
            else:
                merged[name] = a + b
        for name in _dict_fields():  # never share a dict between two records
            if merged[name] is self.__dict__[name]:
                merged[name] = dict(merged[name])
        return _counters(merged)

    def scaled(self, factor: float) -> Counters:
        """Counts times `factor` (what a sample stands for), rounded; configuration fields (merged by max,
        and `programs`) stay as they are."""
        kinds = _merge_kinds()
        values = dict(self.__dict__)
        for name, value in self.__dict__.items():
            kind = kinds[name]
            if kind == "dict":
                values[name] = {k: int(round(v * factor)) for k, v in value.items()}
            elif value and kind == "sum" and name != "programs":
                values[name] = int(round(value * factor))
        return _counters(values)

    def __radd__(self, other: object) -> Counters:
        if other == 0:  # so that sum(list_of_counters) works
            return self
        return NotImplemented

    # --- derived quantities ------------------------------------------------------------------------

    @property
    def global_requests(self) -> int:
        return self.load_requests + self.store_requests

    @property
    def global_sectors(self) -> int:
        return self.load_sectors + self.store_sectors

    @property
    def sectors_per_request(self) -> float:
        """4.0 for a coalesced fp32 warp access, 32.0 for one sector per lane."""
        return self.global_sectors / self.global_requests if self.global_requests else 0.0

    @property
    def coalescing_efficiency(self) -> float:
        """Bytes requested / bytes moved over global loads and stores (1.0 = perfectly coalesced)."""
        moved = self.load_bytes_moved + self.store_bytes_moved
        return (self.load_bytes_requested + self.store_bytes_requested) / moved if moved else 1.0

    @property
    def dram_bytes(self) -> int:
        return self.dram_read_bytes + self.dram_write_bytes

    @property
    def l2_hit_rate(self) -> float:
        total = self.l2_hits + self.l2_misses
        return self.l2_hits / total if total else 0.0

    @property
    def flops(self) -> int:
        """Tensor-core plus SIMT floating-point operations."""
        return sum(self.tensor_flops.values()) + self.simt_flops

    @property
    def warp_instructions(self) -> int:
        return sum(self.instructions.values())

    def as_dict(self) -> dict[str, object]:
        """Every field (dicts copied) plus the derived keys global_requests, global_sectors,
        sectors_per_request, coalescing_efficiency, dram_bytes, l2_hit_rate, flops,
        warp_instructions. Plain Python values, ready for JSON."""
        out: dict[str, object] = {}
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            out[f.name] = dict(value) if isinstance(value, dict) else value
        for name in _DERIVED:
            out[name] = getattr(self, name)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, object]) -> Counters:
        """Inverse of as_dict (derived keys are ignored)."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: (dict(v) if isinstance(v, Mapping) else v) for k, v in data.items() if k in names})


def phase_fields(key: str) -> tuple[str, int, int, list[str]]:
    """(loop, depth, chain, flags) of a memory phase key "loop:depth:chain[:flag...]" (Counters.phase_rounds)."""
    loop, depth, chain, *flags = key.split(":")
    return loop, int(depth), int(chain), flags


_DERIVED = ("global_requests", "global_sectors", "sectors_per_request", "coalescing_efficiency",
            "dram_bytes", "l2_hit_rate", "flops", "warp_instructions")


@functools.cache
def _merge_kinds() -> dict[str, str]:
    """How each field combines: "dict", "max" or "sum", read once: records are added thousands of times."""
    kinds = {}
    for f in dataclasses.fields(Counters):
        if f.default_factory is dict:
            kinds[f.name] = "dict"
        else:
            kinds[f.name] = "max" if f.metadata.get("merge") == "max" else "sum"
    return kinds


@functools.cache
def _dict_fields() -> tuple[str, ...]:
    return tuple(name for name, kind in _merge_kinds().items() if kind == "dict")


def _counters(values: dict) -> Counters:
    """A record from a complete field dict, without the dataclass __init__ (adding records is the hot path)."""
    record = object.__new__(Counters)
    record.__dict__.update(values)
    return record
