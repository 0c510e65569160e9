"""The op table is the one source of truth for what an op is: its traits are known ones, every op has
an OP constant, and the code base names ops only through those constants (a misspelt OP.X is an
AttributeError caught here, a quoted op name in a compare would be a silent miss)."""

from __future__ import annotations

import pathlib
import re

import pytest

from dsl.ir import ops
from dsl.ir.ops import OP, OPS, Trait, with_trait

ROOT = pathlib.Path(__file__).parents[3]
PACKAGES = ("dsl", "jit", "kernels", "simulator")
QUOTED_NAME = re.compile(r"""["']((?:arith|tile|math|scf)\.[a-z_0-9]+)["']""")
CONSTANT_USE = re.compile(r"\bOP\.([A-Z][A-Z_0-9]*)\b")


def _sources():
    for package in PACKAGES:
        yield from sorted((ROOT / package).rglob("*.py"))


def test_every_trait_of_a_row_is_a_declared_trait():
    declared = {v for k, v in vars(Trait).items() if not k.startswith("_")}
    for name, info in OPS.items():
        assert info.traits <= declared, f"{name}: unknown traits {sorted(info.traits - declared)}"


def test_with_trait_rejects_an_unknown_trait():
    with pytest.raises(ValueError, match="unknown op traits"):
        with_trait("reindx")


def test_op_constants_are_exactly_the_rows():
    constants = {k: v for k, v in vars(OP).items() if not k.startswith("_")}
    assert sorted(constants.values()) == sorted(OPS)
    assert all(ops.constant_name(v) == k for k, v in constants.items())
    with pytest.raises(AttributeError):
        OP.ARITH_ADDD  # noqa: B018


def test_traits_agree_with_the_rows_they_imply():
    assert with_trait(Trait.REINDEX) <= with_trait(Trait.SAME_VALUES)
    assert with_trait(Trait.REPEATS) <= with_trait(Trait.SAME_VALUES)
    for name in with_trait(Trait.SAME_VALUES) | with_trait(Trait.FROM_INDEX):
        assert OPS[name].pure and not OPS[name].elementwise, name
    for name in with_trait(Trait.READS_MEMORY) | with_trait(Trait.WRITES_MEMORY):
        assert not OPS[name].pure, name
    for name in with_trait(Trait.INDEX_ARITH) | with_trait(Trait.SELECTS):
        assert OPS[name].elementwise, name


def test_carried_operands_exist():
    for name, info in OPS.items():
        assert all(0 <= i < info.operands for i in info.carries), name


def test_the_code_names_ops_only_through_op_constants():
    quoted, unknown = [], []
    for path in _sources():
        if path == ROOT / "dsl/ir/ops.py":
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            where = f"{path.relative_to(ROOT)}:{number}"
            quoted += [f"{where}: {m.group(0)}" for m in QUOTED_NAME.finditer(line) if m.group(1) in OPS]
            unknown += [f"{where}: OP.{m.group(1)}" for m in CONSTANT_USE.finditer(line)
                        if not hasattr(OP, m.group(1))]
    assert not unknown, "OP constants that name no op:\n" + "\n".join(unknown)
    assert not quoted, "op names written as strings (use OP.<NAME>):\n" + "\n".join(quoted)
