"""The stored H200 sweeps scored as `python -m simulator.validate` scores them, for the tests that pin the figures
the README quotes."""

from pathlib import Path

from simulator import validate

SWEEPS = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu"


def old_unrolling():
    """The H200 spec with the unrolling rule before stop 45: a body's loads not counted, unrolled up to 40."""
    return validate.get_spec("h200").replace(unroll_load_instructions=0.0, unroll_instructions=40.0)


def uniform_gather_waits():
    """The H200 spec as of stop 49: a squeezed loop that gathers waits as many times as any other loop."""
    spec = validate.get_spec("h200")
    return spec.replace(serialized_gather_waits={1: spec.serialized_load_waits})


def split_scores(split: str, csv_name: str, compiled_registers: bool = False, compiled_waits: bool = False,
                 spec=None) -> list:
    """Each group's score in `split` of the sweep `csv_name`, modeled with `spec` (the H200's), optionally with
    Triton's register counts or the machine code's waits in place of the model's own."""
    spec = spec or validate.get_spec("h200")
    groups = [g for g in validate.load(validate.DATA / csv_name, validate.DATA / "h200_counters.jsonl")
              if g.split == split]
    if compiled_registers:
        groups = validate.with_compiled_registers(groups, spec, validate.DATA / "h200_compile_facts.jsonl")
    if compiled_waits:
        groups = validate.with_compiled_waits(groups, validate.DATA / "h200_sass_loops.jsonl")
    spread = 0.0 if compiled_registers else validate.REGISTER_SPREAD
    return [validate.score_group(g, validate.model_seconds(spec, spread)) for g in groups]


def held_out_scores(**options) -> tuple[list, dict]:
    """Every held-out group's score (scored as split_scores does with `options`), and each set's summary by split."""
    by_split = {split: split_scores(split, csv_name, **options) for split, csv_name in validate.HELD_OUT.items()}
    return sum(by_split.values(), []), {split: validate.summary(mine) for split, mine in by_split.items()}


def split_figures(split: str, csv_name: str) -> dict:
    """A set's summary: the figures the README quotes for it."""
    return validate.summary(split_scores(split, csv_name))
