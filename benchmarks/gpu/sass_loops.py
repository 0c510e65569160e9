"""How the GPU's compiler issues the loads of each loop: Triton's machine code (SASS) for sweep configs.

Run on the GPU machine (torch and triton there), or with --offline anywhere Triton is installed (built for sm_90,
not launched: offline_build.py):
    WAVETILE_SWEEP_BACKEND=triton python benchmarks/gpu/sass_loops.py OUT.jsonl [--family F] [--case C] [--split S]
Each config is compiled and launched once, its cubin disassembled, and every loop of the machine code (a
backward branch and its target) is read for its global loads and the points where the code waits for one: one
JSON line per config with, per loop, the loads, their bytes per thread and the waits. A loop the compiler does
not software-pipeline waits for its loads somewhere in the body; how many times it waits per iteration is how
many round trips an iteration takes, which the cost model assumes to be one (simulator/data/h200_sass_loops.jsonl).

A wait is an instruction that reads or overwrites a register a pending load writes; all loads issued so far are
then taken as arrived (the hardware waits on scoreboards that group several loads, so this is close to, not
exactly, what the warp waits for).
"""

from __future__ import annotations

import argparse
import os
import re
import sys

os.environ.setdefault("WAVETILE_SWEEP_BACKEND", "triton")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import compile_facts  # noqa: E402
import offline_build  # noqa: E402

_INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;")
_REGISTER = re.compile(r"\bR(\d+)\b")
_BRANCH = re.compile(r"\bBRA\s+(0x[0-9a-f]+)")
_GUARD = re.compile(r"^@!?U?P\w+\s+")


def instructions(sass: str) -> list[tuple[int, str]]:
    """(address, text without its guard predicate) of every instruction in cuobjdump's listing."""
    return [(int(m.group(1), 16), _GUARD.sub("", m.group(2))) for m in map(_INSTRUCTION.search, sass.splitlines())
            if m]


def _load_bytes(opcode: str) -> int:
    """Bytes per thread of one LDG by its width suffix."""
    for suffix, size in ((".128", 16), (".64", 8), (".U16", 2), (".S16", 2), (".U8", 1), (".S8", 1)):
        if suffix in opcode:
            return size
    return 4


def loops(sass: str) -> list[dict]:
    """Per loop of the listing (a backward branch): its instructions, global loads, their bytes per thread and the
    waits for a pending load in one pass over the body."""
    code = instructions(sass)
    at = {address: i for i, (address, _) in enumerate(code)}
    found = []
    for end, (address, text) in enumerate(code):
        target = _BRANCH.search(text)
        if not target or int(target.group(1), 16) >= address or int(target.group(1), 16) not in at:
            continue
        pending: set[int] = set()
        loads = load_bytes = waits = 0
        for _, body in code[at[int(target.group(1), 16)]:end + 1]:
            opcode, _, operands = body.partition(" ")
            registers = [int(r) for r in _REGISTER.findall(operands)]
            if opcode.startswith("LDG"):
                destination, _, sources = operands.partition(",")
                written = [int(r) for r in _REGISTER.findall(destination)][:1]
                if pending & set(registers):
                    waits, pending = waits + 1, set()
                size = _load_bytes(opcode)
                pending.update(range(written[0], written[0] + max(1, size // 4)) if written else ())
                loads, load_bytes = loads + 1, load_bytes + size
            elif pending & set(registers):
                waits, pending = waits + 1, set()
        found.append({"instructions": end + 1 - at[int(target.group(1), 16)], "loads": loads,
                      "load_bytes": load_bytes, "waits": waits})
    return found


def machine_code_loops(compiled) -> dict:
    """The loops of a compiled kernel's cubin, disassembled by cuobjdump."""
    return {"loops": loops(offline_build.cuobjdump(compiled.asm["cubin"], "-sass"))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    compile_facts.selection_arguments(parser)
    compile_facts.write_cases(parser.parse_args(argv), machine_code_loops)
    return 0


if __name__ == "__main__":
    sys.exit(main())
