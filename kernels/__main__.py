"""`python -m kernels`: run Qwen3.5 through the kernel library on the emulated GPU and profile the whole generation.

Default: the embedded tiny MoE model (seeded random weights, no download), batch 2 with prompts of 64 and 40 tokens,
32 new tokens, on the default machine. Prints progress (kernels compiled, prefill, decode steps), the generated
tokens, the modeled time per op family, modeled time-to-first-token and decode tokens/s, the memory the run holds,
and writes a Perfetto trace. `--project qwen3.5-35b-a3b` (or 0.8b, 397b-a17b) models one layer of each kind at the
real model's shapes instead (kernels.qwen35.projection). The per-op checker is `python -m kernels.check`.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import simulator
from jit import compiler
from kernels import config_table


def _parser() -> argparse.ArgumentParser:
    from kernels.qwen35.projection import ALIASES, PRESETS

    p = argparse.ArgumentParser(prog="python -m kernels", description=__doc__.split("\n")[0])
    p.add_argument("--model", help="a Hugging Face Qwen3.5 model directory (default: the embedded tiny MoE model)")
    p.add_argument("--machine", default=None, help="emulated machine (default: $WAVETILE_MACHINE or mtt-s5000)")
    p.add_argument("--dtype", default="bfloat16", choices=["float32", "bfloat16", "float16"])
    p.add_argument("--quantize", default=None, choices=["w4a16", "mxfp4"])
    p.add_argument("--batch", type=int, default=2, help="prompts in the batch (default 2)")
    p.add_argument("--prompt-len", type=int, nargs="+", default=[64, 40],
                   help="prompt lengths, cycled over the batch (default 64 40)")
    p.add_argument("--new-tokens", type=int, default=32, help="tokens to generate per prompt (default 32)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--trace", default="qwen35_trace.json", help="Perfetto / chrome://tracing JSON to write")
    p.add_argument("--project", choices=sorted(PRESETS) + sorted(ALIASES), metavar="MODEL",
                   help=f"model a real model's layers instead of running one: {', '.join(sorted(PRESETS))}")
    return p


class _Progress:
    """One status line, rewritten in place on a terminal, from the first second on."""

    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.compiled = self.loaded = 0
        self.tty = sys.stderr.isatty()

    def say(self, text: str, final: bool = False) -> None:
        line = f"[{time.perf_counter() - self.start:6.1f}s] {text}"
        if self.tty and not final:
            sys.stderr.write("\r\033[K" + line)
        else:
            sys.stderr.write(("\r\033[K" if self.tty else "") + line + "\n")
        sys.stderr.flush()

    def kernel(self, name: str, from_cache: bool) -> None:
        if from_cache:
            self.loaded += 1
        else:
            self.compiled += 1
        self.say(f"kernels: {self.compiled} compiled, {self.loaded} from the disk cache (last: {name})")

    def stage(self, stage: str, i: int, n: int) -> None:
        self.say("prefill" if stage == "prefill" else f"decode step {i}/{n}")


def _prompts(batch: int, lengths: list[int], vocab: int, seed: int) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return [rng.integers(0, vocab, lengths[i % len(lengths)]).tolist() for i in range(batch)]


def run_model(args) -> int:
    from kernels.qwen35 import Qwen35
    from kernels.qwen35.families import labelled
    from kernels.qwen35.summary import human_bytes, per_family, table

    progress = _Progress()
    progress.say(f"loading {'the embedded tiny Qwen3.5 MoE model' if args.model is None else args.model}", True)
    model = Qwen35.from_pretrained(args.model, args.dtype, quantize=args.quantize, seed=args.seed)
    c = model.config
    prompts = _prompts(args.batch, args.prompt_len, c.vocab_size, args.seed)
    spec = simulator.current_spec(args.machine)
    progress.say(f"{c.family} model: {c.num_hidden_layers} layers ({c.layer_types.count('full_attention')} "
                 f"attention), hidden {c.hidden_size}, vocab {c.vocab_size}, {args.dtype}; batch {len(prompts)}, "
                 f"prompts {[len(p) for p in prompts]}, {args.new_tokens} new tokens on {spec.name}", True)
    phase = {}

    def stage(name, i, n):
        if name == "decode" and i == 1:
            phase["first_token"] = len(prof.launches)
        progress.stage(name, i, n)

    compiler.on_compile(progress.kernel)
    wall = time.perf_counter()
    try:
        with simulator.machine(spec), simulator.profile() as prof, labelled(prof) as labels:
            out = model.generate(prompts, args.new_tokens, progress=stage)
    finally:
        compiler.remove_compile_listener(progress.kernel)
    wall = time.perf_counter() - wall
    progress.say(f"generated in {wall:.1f} s on the CPU ({progress.compiled} kernels compiled, "
                 f"{progress.loaded} loaded from the cache)", True)

    print("\nGenerated tokens:")
    for i, (p, toks) in enumerate(zip(prompts, out.tokens)):
        text = f"  {out.text[i]!r}" if out.text else ""
        print(f"  prompt {i} ({len(p)} tokens) -> {toks}{text}")
    launches = prof.launches
    print(f"\nModeled on {spec.name}: the whole generation, per op family")
    print(table(per_family(launches, labels), spec.name))
    split = phase.get("first_token", len(launches))
    ttft = sum(r.modeled_seconds for r in launches[:split])
    decode = sum(r.modeled_seconds for r in launches[split:])
    decoded = sum(len(t) - 1 for t in out.tokens)
    print(f"\nmodeled time to first token: {ttft * 1e3:.3f} ms (prefill of {sum(len(p) for p in prompts)} tokens)")
    if decoded:
        print(f"modeled decode: {decoded / decode:.0f} tokens/s over the batch ({decoded} tokens, "
              f"{decode / (decoded / len(prompts)) * 1e6:.1f} us per step)")
    mem = out.memory
    print(f"memory: weights {human_bytes(mem['weights'])}, KV cache {human_bytes(mem['kv_cache'])}, "
          f"GDN states {human_bytes(mem['gdn_states'])}")
    counts = config_table.pick_counts()
    print(f"launch configs of the {sum(counts.values())} launches given none: "
          + ", ".join(f"{rule} {n}" for rule, n in sorted(counts.items())) + f" (kernels/configs/{spec.name}.json)")
    if args.trace:
        prof.export_chrome_trace(args.trace)
        print(f"trace: {args.trace} ({len(launches)} launches; open in ui.perfetto.dev)")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.batch < 1 or args.new_tokens < 1 or min(args.prompt_len) < 1:
        raise SystemExit("python -m kernels: --batch, --new-tokens and --prompt-len must be >= 1")
    if args.project:
        from kernels.qwen35.projection import main as project

        return project(args.project, args.machine)
    return run_model(args)


if __name__ == "__main__":
    sys.exit(main())
