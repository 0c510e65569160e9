"""LLVM IR text -> optimised native object -> callable entry point, for the host CPU.

Compilation and loading are split on purpose: `optimize_and_emit` produces an object file (bytes) that
the disk cache can store, and `load` turns such bytes into a callable without running the optimiser,
so a warm process pays only for loading (about a millisecond).

Choices that matter:
- Target machine: host CPU name and features, opt level 3, the JIT default code model (large on
  x86-64). The small code model emits 32-bit absolute relocations that MCJIT cannot satisfy when it
  maps sections high in the address space (LLVM asserts and aborts the process), so objects are built
  for the large model.
- Each loaded kernel gets its own MCJIT engine. Every kernel exports the same symbol (abi.ENTRY), and
  one engine holding several objects would resolve that name to whichever was loaded last; creating an
  engine costs well under a millisecond, so isolation is cheap. The engine lives as long as the
  `LoadedKernel` that holds it, and its machine code is freed with it.
- The llvmlite in use is built with LLVM assertions, and MCJIT does not validate its input: garbage
  bytes segfault and an unresolved external symbol jumps to address 0 at call time. `load` therefore
  checks the ELF structure and resolves every undefined symbol before handing the object to LLVM.
"""

from __future__ import annotations

import ctypes
import struct
import threading
import time
from dataclasses import dataclass

import llvmlite
import llvmlite.binding as llvm

from jit import abi

OPT_LEVEL = 3
# the profiler's instrumented builds run a few sampled programs once: compiling them at O3 was 60-80 % of a modeled
# launch's CPU time; unoptimised, a sampled launch models 2-4x faster with the same counts (the probes are calls)
PROFILING_OPT_LEVEL = 0
CODE_MODEL = "jitdefault"  # large on 64-bit hosts, see module docstring
RELOC = "default"
ENGINE_VERSION = 1  # bump when the pass pipeline or emission changes, so cached objects are rebuilt

# the C signature of abi.ENTRY: i32 wavetile_grid(i64* ctx)
EntryFunction = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p)


class CompileError(RuntimeError):
    """LLVM rejected the IR text (parse or verifier error): a code generator bug."""


class LoadError(RuntimeError):
    """An object file could not be loaded: malformed bytes, a missing entry, or an unresolved symbol."""


@dataclass(frozen=True)
class CompiledObject:
    """What compiling one module yields; the object file is all that `load` needs."""

    name: str
    obj: bytes  # relocatable object file for the host
    optimized_ir: str  # the module after the O3 pipeline, for inspection and tests
    asm: str  # host assembly of the same module

    OBJ_FILE = "kernel.o"
    IR_FILE = "kernel.llir"
    ASM_FILE = "kernel.asm"

    def to_files(self) -> dict[str, bytes]:
        """Named blobs for `jit.cache.put` (the runtime adds its own, e.g. meta.json)."""
        return {
            self.OBJ_FILE: self.obj,
            self.IR_FILE: self.optimized_ir.encode(),
            self.ASM_FILE: self.asm.encode(),
        }

    @classmethod
    def from_files(cls, name: str, files: dict[str, bytes]) -> CompiledObject:
        """Inverse of `to_files`; the text blobs are optional (empty when absent)."""
        return cls(
            name=name,
            obj=files[cls.OBJ_FILE],
            optimized_ir=files.get(cls.IR_FILE, b"").decode(errors="replace"),
            asm=files.get(cls.ASM_FILE, b"").decode(errors="replace"),
        )


@dataclass
class EngineStats:
    """Per-process counters, so tests can tell a warm (cached) launch from a cold one."""

    optimize_calls: int = 0
    optimize_seconds: float = 0.0
    load_calls: int = 0
    load_seconds: float = 0.0


stats = EngineStats()
_stats_lock = threading.Lock()


def reset_stats() -> None:
    """Zero the counters in `stats` (in place, so references to it stay valid)."""
    with _stats_lock:
        stats.optimize_calls = stats.load_calls = 0
        stats.optimize_seconds = stats.load_seconds = 0.0


class LoadedKernel:
    """A callable entry point plus the MCJIT engine that owns its machine code.

    Keep this object alive while `fn` may run: dropping it frees the code.
    """

    def __init__(self, engine: llvm.ExecutionEngine, address: int, symbol: str) -> None:
        self._engine = engine
        self.address = address
        self.symbol = symbol
        self.fn = EntryFunction(address)

    def __call__(self, ctx_address: int) -> int:
        """Run the entry on a context record (address of CONTEXT_SLOTS int64s); returns the error code.

        ctypes releases the GIL for the call, so several threads may call this at once.
        """
        return self.fn(ctx_address)

    def __repr__(self) -> str:
        return f"<LoadedKernel {self.symbol} at {self.address:#x}>"


# ----------------------------------------------------------------------------------------------------
# one-time initialisation and the host target


@dataclass(frozen=True)
class _Host:
    target: llvm.Target
    triple: str
    cpu: str
    features: str

    def machine(self, opt: int = OPT_LEVEL) -> llvm.TargetMachine:
        return self.target.create_target_machine(
            cpu=self.cpu, features=self.features, opt=opt, reloc=RELOC, codemodel=CODE_MODEL, jit=True
        )


_init_lock = threading.Lock()
_host: _Host | None = None
_compile_machine: llvm.TargetMachine | None = None
_profiling_machine: llvm.TargetMachine | None = None
# llvmlite serialises each C call, but a compile is a sequence of calls on one shared target machine and LLVM's
# global context, which loading an object (jit.engine.load) uses too
_compile_lock = threading.Lock()


def _host_target() -> _Host:
    """Initialise LLVM's native target once per process (thread-safe) and describe the host."""
    global _host, _compile_machine, _profiling_machine
    if _host is None:
        with _init_lock:
            if _host is None:
                llvm.initialize_native_target()
                llvm.initialize_native_asmprinter()
                llvm.initialize_native_asmparser()
                triple = llvm.get_process_triple()
                try:
                    features = llvm.get_host_cpu_features().flatten()
                except RuntimeError:  # LLVM cannot query this host: fall back to the baseline ISA
                    features = ""
                host = _Host(llvm.Target.from_triple(triple), triple, llvm.get_host_cpu_name(), features)
                _compile_machine = host.machine()
                _profiling_machine = host.machine(PROFILING_OPT_LEVEL)
                _host = host
    return _host


def target_key() -> str:
    """Everything that decides which machine code a module compiles to, for cache keys."""
    host = _host_target()
    return ";".join(
        [
            f"engine={ENGINE_VERSION}",
            f"llvmlite={llvmlite.__version__}",
            "llvm=" + ".".join(map(str, llvm.llvm_version_info)),
            f"triple={host.triple}",
            f"cpu={host.cpu}",
            f"features={host.features}",
            f"opt={OPT_LEVEL}/{PROFILING_OPT_LEVEL}",
            f"codemodel={CODE_MODEL}",
            f"reloc={RELOC}",
        ]
    )


# ----------------------------------------------------------------------------------------------------
# compile


def optimize_and_emit(llvm_ir: str, name: str, *, with_asm: bool = True, profiling: bool = False) -> CompiledObject:
    """Parse, verify, run the O3 pipeline (PROFILING_OPT_LEVEL's for a profiling build) for the host and emit an
    object file.

    The IR must verify: an invalid module would reach LLVM's assertion-enabled optimiser and abort the
    process, so the verifier runs first and its message is raised as `CompileError`.
    """
    host = _host_target()
    tm = _profiling_machine if profiling else _compile_machine
    assert tm is not None
    with _compile_lock:
        start = time.perf_counter()
        compiled = _compile(host, tm, llvm_ir, name, with_asm, PROFILING_OPT_LEVEL if profiling else OPT_LEVEL)
        elapsed = time.perf_counter() - start
    with _stats_lock:
        stats.optimize_calls += 1
        stats.optimize_seconds += elapsed
    return compiled


def emit_support_object(llvm_ir: str, name: str) -> bytes:
    """The object file of runtime support code (not a kernel, so not counted in `stats`)."""
    host = _host_target()
    with _compile_lock:
        return _compile(host, _compile_machine, llvm_ir, name, False, OPT_LEVEL).obj


def _compile(host: _Host, tm: llvm.TargetMachine, llvm_ir: str, name: str, with_asm: bool,
             opt_level: int) -> CompiledObject:
    try:
        module = llvm.parse_assembly(llvm_ir)
        module.verify()
    except RuntimeError as exc:
        raise CompileError(f"LLVM rejected the IR of {name!r}: {exc}") from None
    module.name = name
    module.triple = host.triple
    module.data_layout = str(tm.target_data)

    pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
    pto.slp_vectorization = True  # off by default in LLVM's tuning options; clang enables it at O3
    pb = llvm.create_pass_builder(tm, pto)
    pb.getModulePassManager().run(module, pb)

    obj = tm.emit_object(module)
    asm = tm.emit_assembly(module) if with_asm else ""
    return CompiledObject(name=name, obj=obj, optimized_ir=str(module), asm=asm)


def assembly(optimized_ir: str) -> str:
    """Host assembly of an already optimised module: produced on demand, since most compiles never show it."""
    _host_target()
    tm = _compile_machine
    assert tm is not None
    with _compile_lock:
        module = llvm.parse_assembly(optimized_ir)
        return tm.emit_assembly(module)


# ----------------------------------------------------------------------------------------------------
# load


def load(obj: bytes, symbol: str = abi.ENTRY) -> LoadedKernel:
    """Load an object file into a fresh MCJIT engine and return its entry point, without optimising.

    Raises `LoadError` for bytes that are not a well-formed host object, an object that does not
    define `symbol`, or one that calls a function this process cannot resolve.
    """
    host = _host_target()
    start = time.perf_counter()
    undefined = _check_object(obj)
    # the empty module lives in LLVM's global context, which a compile on another thread may be using
    with _compile_lock:
        # creating the first engine makes LLVM search the whole process for symbols (as MCJIT will)
        engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), host.machine())
        missing = [s for s in undefined if llvm.address_of_symbol(s) is None]
        if missing:
            raise LoadError(f"object calls functions this process does not define: {', '.join(missing)}")
        engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        engine.finalize_object()
        address = engine.get_function_address(symbol)
    if not address:
        raise LoadError(f"object does not define {symbol!r}")
    kernel = LoadedKernel(engine, address, symbol)
    with _stats_lock:
        stats.load_calls += 1
        stats.load_seconds += time.perf_counter() - start
    return kernel


_ELF_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")
_ELF_SECTION = struct.Struct("<IIQQQQIIQQ")
_ELF_SYMBOL = struct.Struct("<IBBHQQ")
_SHT_SYMTAB, _SHT_NOBITS = 2, 8
_ET_REL = 1
_STB_GLOBAL = 1
_ELF_MACHINES = {"x86_64": 62, "aarch64": 183, "ppc64le": 21, "riscv64": 243}


def _check_object(obj: bytes) -> list[str]:
    """Validate a 64-bit little-endian ELF relocatable for this host; return its undefined symbols.

    Objects in other formats (non-ELF hosts) only get a non-empty check.
    """
    if llvm.get_object_format() != "ELF":
        if not obj:
            raise LoadError("empty object file")
        return []
    if len(obj) < _ELF_HEADER.size:
        raise LoadError("object file is truncated")
    ident, e_type, e_machine, _, _, _, e_shoff, _, _, _, _, e_shentsize, e_shnum, _ = _ELF_HEADER.unpack_from(
        obj
    )
    if ident[:4] != b"\x7fELF" or ident[4] != 2 or ident[5] != 1:
        raise LoadError("not a 64-bit little-endian ELF object")
    if e_type != _ET_REL:
        raise LoadError("not a relocatable object file")
    arch = _host_target().triple.split("-", 1)[0]
    if arch in _ELF_MACHINES and e_machine != _ELF_MACHINES[arch]:
        raise LoadError(f"object is for ELF machine {e_machine}, host is {arch}")
    if e_shentsize != _ELF_SECTION.size or e_shoff + e_shnum * e_shentsize > len(obj):
        raise LoadError("object file is truncated (section table)")
    sections = [_ELF_SECTION.unpack_from(obj, e_shoff + i * e_shentsize) for i in range(e_shnum)]
    for _, sh_type, _, _, sh_offset, sh_size, *_ in sections:
        if sh_type != _SHT_NOBITS and sh_offset + sh_size > len(obj):
            raise LoadError("object file is truncated (section data)")

    undefined = []
    for _, sh_type, _, _, sh_offset, sh_size, sh_link, _, _, sh_entsize in sections:
        if sh_type != _SHT_SYMTAB:
            continue
        if sh_entsize != _ELF_SYMBOL.size or sh_link >= len(sections):
            raise LoadError("malformed symbol table")
        str_off, str_size = sections[sh_link][4], sections[sh_link][5]
        for pos in range(sh_offset, sh_offset + sh_size - sh_entsize + 1, sh_entsize):
            st_name, st_info, _, st_shndx, _, _ = _ELF_SYMBOL.unpack_from(obj, pos)
            if st_shndx != 0 or st_info >> 4 != _STB_GLOBAL or st_name == 0:
                continue  # defined, local or weak (weak undefined may stay null)
            if st_name >= str_size:
                raise LoadError("malformed symbol name")
            end = obj.find(b"\0", str_off + st_name, str_off + str_size)
            name = obj[str_off + st_name : end if end >= 0 else str_off + str_size].decode(errors="replace")
            if name != "_GLOBAL_OFFSET_TABLE_":  # provided by RuntimeDyld itself
                undefined.append(name)
    return undefined
