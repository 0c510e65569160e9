"""The shapes `python -m kernels.tune` tunes the library at: every autotuned launch a Qwen3.5 model makes.

A model runs one step (a prefill of PREFILL_TOKENS tokens, or a decode step of M sequences after
DECODE_CONTEXT tokens) with the autotuner capturing its launches (jit.autotune.capture_launches): each
distinct (kernel, shape key) it launches is one tune problem, with the arguments the model gave it. So the
shapes are the model's own, not a list that could drift from it. Models: the embedded tiny MoE model that
`python -m kernels` runs by default (bf16, its own seeded weights), and the published Qwen3.5 sizes of
kernels.qwen35.projection (one layer of each kind on synthetic bf16 weights, as the projection models them).
A model may also be `module:function`: a function(phase, tokens) that calls host functions (a workload of
one's own, or a test's).

Workers of a sweep rebuild a problem by name through `library_problem` (jit.tune's `--library` hook):
target = the model's name, sizes = phase, tokens and the launch's index in the step; a family whose launch
depends on the config (MoE's routed rows) names its per-config builder (kernels.tuning.with_builder).
Problems are modeled only (no CPU runs, outputs not compared: the real sizes run on synthetic weights, and
most programs of a model-only launch never run); kernels.tune_check checks every config's output
on small shapes instead.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

import simulator
from jit.autotune import CapturedLaunch, capture_launches
from jit.launcher import model_only
from jit.tune import TuneProblem
from kernels import config_table
from kernels.tuning import builder_of

TINY = "tiny"
MODELS = (TINY, "qwen3.5-0.8b", "qwen3.5-35b-a3b")
DECODE_BATCHES = (1, 2, 4, 8)
PREFILL_TOKENS = 128
DECODE_CONTEXT = 256
LIBRARY = "kernels.tune_shapes:library_problem"


@dataclass(frozen=True)
class Step:
    """One model step: `phase` is "prefill" (one prompt of `tokens` tokens) or "decode" (`tokens` sequences)."""

    model: str
    phase: str
    tokens: int

    def __str__(self) -> str:
        return f"{self.model} {self.phase} M={self.tokens}"


@dataclass(frozen=True)
class Problem:
    """One distinct autotuned launch of a step: what a sweep tunes and the table keys."""

    step: Step
    launch: int  # index among the step's captured launches
    kernel: str  # config_table.kernel_id
    key: dict  # config_table.shape_key

    @property
    def sizes(self) -> dict:
        return {"phase": self.step.phase, "tokens": self.step.tokens, "launch": self.launch}


def default_steps(models=MODELS) -> list[Step]:
    """Decode at each of DECODE_BATCHES and one prefill, for each model."""
    return [Step(m, "decode", b) for m in models for b in DECODE_BATCHES] + [Step(m, "prefill", PREFILL_TOKENS)
                                                                              for m in models]


def problems(step: Step) -> list[Problem]:
    """The step's distinct (kernel, shape key) launches, first occurrence first."""
    seen, out = set(), []
    for i, launch in enumerate(captured(step)):
        kernel = config_table.kernel_id(launch.kernel)
        key = config_table.shape_key(launch.kernel, launch.args, launch.kwargs)
        ident = (kernel, config_table.key_text(key))
        if ident not in seen:
            seen.add(ident)
            out.append(Problem(step, i, kernel, key))
    return out


@functools.cache
def captured(step: Step) -> tuple[CapturedLaunch, ...]:
    """The autotuned launches of one step of the model (computed once per process)."""
    if ":" in step.model:  # a workload of one's own: module:function(phase, tokens) calling host functions
        from jit.tune import load_target

        run = load_target(step.model)
        with capture_launches() as launches:
            run(step.phase, step.tokens)
        return tuple(launches)
    model = build_model(step.model)
    if step.model != TINY:  # real sizes: only the measured programs run (kernels.qwen35.projection's way)
        from kernels.qwen35.projection import RUN_FULLY

        with simulator.profile(), model_only(RUN_FULLY):
            return _capture(model, step)
    return _capture(model, step)


def _capture(model, step: Step) -> tuple[CapturedLaunch, ...]:
    rng = np.random.default_rng(0)
    batch = 1 if step.phase == "prefill" else step.tokens
    cache = model.new_cache(batch, DECODE_CONTEXT + PREFILL_TOKENS + 1)
    if step.phase == "prefill":
        prompt = rng.integers(0, model.config.vocab_size, step.tokens).tolist()
        _route_on_random_rows(step)
        with capture_launches() as launches:
            model.prefill(cache, [prompt])
    elif step.phase == "decode":
        cache.lengths[:] = DECODE_CONTEXT  # decode after a full context (its contents do not change the shapes)
        tokens = rng.integers(0, model.config.vocab_size, step.tokens).tolist()
        _route_on_random_rows(step)
        with capture_launches() as launches:
            model.decode(cache, tokens)
    else:
        raise ValueError(f"kernels.tune: a step is 'prefill' or 'decode', not {step.phase!r}")
    return tuple(launches)


@functools.cache
def build_model(name: str):
    """The embedded tiny model (bf16, as `python -m kernels` runs it) or a published size on synthetic weights."""
    from kernels.qwen35 import Qwen35
    from kernels.qwen35.projection import preset, synthetic_tensors

    if name == TINY:
        return Qwen35.from_pretrained(None, "bfloat16", seed=0)
    try:
        config = preset(name)
    except (KeyError, ValueError) as e:
        raise SystemExit(f"kernels.tune: unknown model {name!r}; models: {', '.join(MODELS)}") from e
    layers = sorted({config.layer_types.index("linear_attention"), config.layer_types.index("full_attention")})
    return Qwen35(config, synthetic_tensors(config, layers), "bfloat16", layer_indices=layers)


def _route_on_random_rows(step: Step) -> None:
    """Synthetic weights are zeros, so the router would send every token to the same experts: route on random
    embedding rows instead, as kernels.qwen35.projection does (the tiny model has real weights)."""
    if step.model != TINY:
        from kernels.qwen35.projection import router_stand_in

        router_stand_in(build_model(step.model), step.tokens)


def library_problem(name: str, options: dict) -> TuneProblem:
    """jit.tune's library hook: model `name`, options phase=, tokens=, launch= -> that launch as a TuneProblem."""
    step = Step(name, str(options["phase"]), int(options["tokens"]))
    launch = captured(step)[int(options["launch"])]
    return TuneProblem(launch.kernel, args=launch.args, kwargs=launch.kwargs, grid=launch.grid,
                       outputs=[], modeled_only=True, builder=builder_of(launch.kernel),
                       description=f"{step} {config_table.kernel_id(launch.kernel)}")
