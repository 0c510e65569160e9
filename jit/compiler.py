"""The compile pipeline, in order: frontend -> verify -> passes -> LLVM lowering -> native object.

One list (`STAGES`) names the stages in order; the interpreter runs the first ones (`IR_STAGES`), so it
executes exactly the IR the code generator lowers. Each stage's text is kept in `CompiledKernel.asm`.
Compiled kernels are cached in memory by the JITFunction and on disk by `jit.cache`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field

from dsl.frontend import compile_kernel
from dsl.ir.core import Function, Loc, TileType
from dsl.ir.ops import OP
from dsl.ir.verifier import verify
from jit import abi, cache, engine, gpu_resources
from jit.passes import run_passes

COMPILER_VERSION = "0.1.3"
_COMPILER_PACKAGES = ("dsl", "jit")  # their sources decide the generated code
_MODEL_PACKAGES = _COMPILER_PACKAGES + ("simulator",)  # with the simulator's, a modeled time
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def compiler_fingerprint() -> str:
    """What the generated code depends on: editing the compiler invalidates the disk cache without anyone
    bumping COMPILER_VERSION."""
    return source_fingerprint(_COMPILER_PACKAGES)


def model_fingerprint() -> str:
    """What a modeled time depends on besides the machine spec: stored tuning results of an older model are not
    reused (jit.sweep_store)."""
    return source_fingerprint(_MODEL_PACKAGES)


@functools.cache
def source_fingerprint(packages: tuple[str, ...], root: str = _ROOT) -> str:
    """COMPILER_VERSION and the size and modification time of every source file of `packages` under `root`. Stats,
    not contents: hashing the contents would cost a new process about 10 ms before its first launch."""
    h = hashlib.sha256(COMPILER_VERSION.encode())
    for package in packages:
        for folder, dirs, files in os.walk(os.path.join(root, package)):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith((".py", ".lark")):
                    stat = os.stat(os.path.join(folder, name))
                    h.update(f"{folder}/{name}:{stat.st_size}:{stat.st_mtime_ns};".encode())
    return h.hexdigest()


@dataclass(frozen=True)
class Options:
    """Compile options that change the generated code (all part of the cache key)."""

    num_warps: int = 4
    num_stages: int = 3
    checks: bool = True
    instrument: bool = False  # the profiling variant: op counters and address traces (jit.codegen.instrument)


class Stages(dict):
    """Each stage's text by name ("ir", "llir", "asm"); the assembly is made only when someone asks."""

    def __missing__(self, key: str) -> str:
        if key != "asm" or "llir" not in self:
            raise KeyError(key)
        self["asm"] = engine.assembly(self["llir"])
        return self["asm"]


class KernelMetadata(dict):
    """A compiled kernel's metadata; also read as attributes (`kernel.metadata.shared`), as Triton's is.
    `shared` is what a GPU build would allocate (the CPU code keeps none; see CompiledKernel.gpu_shared_bytes)."""

    kernel = None  # the CompiledKernel this belongs to (set by `compile`)

    def __getattr__(self, name: str):
        if name in self:
            return self[name]
        if name in _METADATA_DEFAULTS and self.kernel is not None:
            return _METADATA_DEFAULTS[name](self)
        raise AttributeError(f"kernel metadata has no field {name!r}")


_METADATA_DEFAULTS = {"shared": lambda m: m.kernel.gpu_shared_bytes(),
                      "num_warps": lambda m: m.kernel.options.num_warps, "name": lambda m: m.kernel.name}


@dataclass
class CompiledKernel:
    """Native code for one specialisation of a kernel, plus every stage's text."""

    name: str
    signature: dict  # parameter -> TileType or constexpr value
    options: Options
    sites: list[abi.Site]
    print_types: dict  # site index -> operand types of a tile.print
    asm: dict[str, str]
    function: engine.LoadedKernel
    metadata: dict = field(default_factory=KernelMetadata)
    jit_fn: object = None  # the JITFunction compiled (set by `compile`)
    probes: list[dict] = field(default_factory=list)  # instrumented variants: what each probe counts
    written: tuple[int, ...] = ()  # pointer arguments a store or atomic can write (jit.codegen.provenance)
    stack_bytes: int = 0  # the program's frame: the launcher picks threads whose stacks hold it

    # Triton's CompiledKernel surface that host code reads (tutorial 02 sizes its grid with these)
    def _init_handles(self) -> None:
        """Triton loads the binary on first use; wavetile's is loaded when compiled."""

    def __getitem__(self, grid):
        """`compiled[grid](*all_args)`, as Triton's CompiledKernel launches (constexprs passed too)."""
        jit_fn = self.jit_fn
        options = {k: getattr(self.options, k) for k in ("num_warps", "num_stages") if k not in jit_fn.arg_names}
        return lambda *args, **kwargs: jit_fn[grid](*args, **options, **kwargs)

    @property
    def n_regs(self) -> int:
        """Registers per thread a GPU build would need: the profiler's estimate, from the liveness of the
        kernel's tile values (no register allocator runs for the CPU code)."""
        import simulator

        return simulator.estimate_registers(gpu_resources.kernel_register_bytes(self), self.options.num_warps)

    @property
    def n_spills(self) -> int:
        return 0

    def gpu_shared_bytes(self) -> int:
        """Shared memory a GPU build would allocate (dot operands, cross-warp reductions, layout changes),
        as the profiler models it for the current machine."""
        import simulator

        probes = self._static_probes()
        return gpu_resources.shared_bytes(probes, range(len(probes)), simulator.current_spec(), self.options.num_warps,
                                      self.options.num_stages, 1)

    def _static_probes(self) -> list[dict]:
        """Every op of the kernel in the shape of the profiler's probe records (no execution counts)."""
        from dsl.ir import parse_function
        from jit.mma_layout import dot_operand_load

        def values(vs):
            return [(list(v.type.shape), v.type.dtype.ir) for v in vs]

        ops = list(parse_function(self.asm["ir"]).walk())
        index = {id(op): i for i, op in enumerate(ops)}
        probes = [{"op": op.name, "operands": values(op.operands), "results": values(op.results), "attrs": op.attrs}
                  for op in ops]
        for op, probe in zip(ops, probes):
            if op.name == OP.TILE_DOT:  # which load each operand comes from, as the profiler's probes record
                sources = [dot_operand_load(v) for v in op.operands[:2]]
                probe["sources"] = [None if s is None else [index[id(s[0])], s[1]] for s in sources]
        return probes

    @functools.cached_property
    def prints(self) -> bool:
        """Whether the code can call back to print (launches then pass a print callback)."""
        return bool(self.print_types) or any(s.kind == "print" for s in self.sites)


_COMPILE_LISTENERS: list = []


def on_compile(listener) -> None:
    """Call `listener(kernel_name, from_disk_cache)` after every specialisation is built or loaded (progress
    displays; `remove_compile_listener` undoes it)."""
    _COMPILE_LISTENERS.append(listener)


def remove_compile_listener(listener) -> None:
    _COMPILE_LISTENERS.remove(listener)


def compile(jit_fn, signature: dict, options: Options, divisible: tuple[str, ...] = ()) -> CompiledKernel:
    """Compile, or load from the disk cache when an identical build exists. `divisible`: the integer and
    pointer arguments known to be multiples of 16 (Triton's specialisation; it shapes the reduction order)."""
    kernel = _compile_or_load(jit_fn, signature, options, tuple(divisible))
    for listener in list(_COMPILE_LISTENERS):
        listener(jit_fn.__name__, bool(kernel.metadata.get("from_disk_cache")))
    source = jit_fn.parsed
    kernel.metadata.kernel = kernel
    kernel.jit_fn = jit_fn
    kernel.metadata["source"] = {"file": source.file, "first_line": source.first_line, "lines": source.lines}
    return kernel


def _compile_or_load(jit_fn, signature: dict, options: Options, divisible: tuple[str, ...]) -> CompiledKernel:
    key = cache_key(jit_fn, signature, options, divisible)
    files = cache.get(key)
    if files is not None:
        try:
            return _from_cache(jit_fn, signature, options, files)
        except Exception:  # a stale or damaged entry is rebuilt, never trusted
            pass
    build = run_stages(Build(jit_fn, signature, options, divisible))
    func, lowered, obj = build.func, build.lowered, build.obj
    ir_text = str(func)
    print_types = _print_types(func, lowered.sites)
    meta = {"sites": [_site_to_json(s) for s in lowered.sites],
            "print_types": {str(k): v for k, v in print_types.items()}, "probes": lowered.probes,
            "written": list(build.written), "stack_bytes": lowered.stack_bytes}
    files = {**obj.to_files(), "kernel.ir": ir_text.encode(), "meta.json": json.dumps(meta).encode()}
    cache.put(key, files)
    return CompiledKernel(func.name, signature, options, lowered.sites, print_types,
                          Stages(ir=ir_text, llir=obj.optimized_ir, llir_unoptimized=lowered.llvm_ir),
                          engine.load(obj.obj), probes=lowered.probes, written=build.written,
                          stack_bytes=lowered.stack_bytes)


# --- the stages -------------------------------------------------------------------------------------------
@dataclass
class Build:
    """One specialisation being compiled: what was asked for, then what each stage has made so far."""

    jit_fn: object
    signature: dict
    options: Options
    divisible: tuple[str, ...] = ()
    func: Function | None = None  # the tile IR (typed by the frontend, rewritten in place by the passes)
    written: tuple[int, ...] = ()  # pointer arguments a store or atomic can write
    lowered: object = None  # jit.codegen.lower's result: LLVM IR text, sites, probes, frame size
    obj: engine.CompiledObject | None = None


def _frontend(build: Build) -> None:
    build.func = compile_kernel(build.jit_fn, build.signature)


def _verify(build: Build) -> None:
    verify(build.func)


def _passes(build: Build) -> None:
    run_passes(build.func, num_warps=build.options.num_warps, divisible=frozenset(build.divisible),
               model_gpu=build.options.instrument)


def _lower(build: Build) -> None:
    from jit.codegen.lower import CodegenOptions, lower
    from jit.codegen.provenance import written_buffers

    build.written = written_buffers(build.func)
    build.lowered = lower(build.func, CodegenOptions(checks=build.options.checks, instrument=build.options.instrument))


def _emit(build: Build) -> None:
    build.obj = engine.optimize_and_emit(build.lowered.llvm_ir, build.func.name, with_asm=False,
                                         profiling=build.options.instrument)


STAGES: tuple[tuple[str, Callable[[Build], None]], ...] = (
    ("frontend", _frontend),  # Python ast -> typed tile IR (dsl.frontend)
    ("verify", _verify),
    ("passes", _passes),  # fold, CSE, DCE, layouts, shared memory, ... (jit.passes)
    ("verify passes", _verify),
    ("lower", _lower),  # tile IR -> LLVM IR (jit.codegen)
    ("emit", _emit),  # LLVM O3 -> native object (jit.engine)
)
"""The compile pipeline in order; each stage reads and extends the Build."""

IR_STAGES = STAGES[:4]
"""The stages up to the IR the code generator lowers: what the interpreter runs (jit.interpreter)."""


def run_stages(build: Build, stages: tuple[tuple[str, Callable[[Build], None]], ...] = STAGES) -> Build:
    for _, stage in stages:
        stage(build)
    return build


def tile_ir(jit_fn, signature: dict, options: Options, divisible: tuple[str, ...] = ()) -> Function:
    """The verified, optimised tile IR of one specialisation: exactly what `compile` lowers."""
    return run_stages(Build(jit_fn, signature, options, tuple(divisible)), IR_STAGES).func


def _from_cache(jit_fn, signature, options, files) -> CompiledKernel:
    obj = engine.CompiledObject.from_files(jit_fn.__name__, files)
    meta = json.loads(files["meta.json"])
    sites = [_site_from_json(s) for s in meta["sites"]]
    print_types = {int(k): v for k, v in meta["print_types"].items()}
    return CompiledKernel(jit_fn.__name__, signature, options, sites, print_types,
                          Stages(ir=files["kernel.ir"].decode(), llir=obj.optimized_ir),
                          engine.load(obj.obj), KernelMetadata(from_disk_cache=True), probes=meta.get("probes", []),
                          written=tuple(meta["written"]), stack_bytes=meta["stack_bytes"])


def cache_key(jit_fn, signature: dict, options: Options, divisible: tuple[str, ...] = ()) -> str:
    spec = {name: (str(t) if isinstance(t, TileType) else repr(t)) for name, t in signature.items()}
    text = json.dumps([compiler_fingerprint(), jit_fn.cache_key, spec, options.__dict__, sorted(divisible),
                       engine.target_key()],
                      sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _print_types(func: Function, sites: list[abi.Site]) -> dict[int, list[str]]:
    """Operand types of each print site, so the runtime can decode what a kernel printed."""
    prints = [op for op in func.walk() if op.name == OP.TILE_PRINT]
    table = {}
    for index, site in enumerate(sites):
        if site.kind == "print":
            match = next((op for op in prints if op.loc == site.loc), None)
            if match is not None:
                table[index] = [str(v.type) for v in match.operands]
    return table


def _site_to_json(site: abi.Site) -> dict:
    loc = [site.loc.line, site.loc.col] if site.loc else None
    return {"kind": site.kind, "loc": loc, "buffer": site.buffer, "message": site.message}


def _site_from_json(data: dict) -> abi.Site:
    loc = Loc(*data["loc"]) if data["loc"] else None
    return abi.Site(data["kind"], loc, data["buffer"], data["message"])
