"""The IR's text form: print -> parse -> print is the identity, and parse(print(f)) equals f structurally."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dsl import dtypes as dt
from dsl.ir import OPS, Block, Builder, Function, Loc, Operation, TileType, Value, VerifyError, verify
from dsl.ir.parser import IRParseError, parse_function
from dsl.ir.printer import format_attr_value, print_function, print_op


def T(dtype: dt.dtype, *shape: int) -> TileType:
    return TileType(dtype, tuple(shape))


F32, I32, I1 = T(dt.float32), T(dt.int32), T(dt.int1)
PF32, PI32 = dt.pointer_type(dt.float32), dt.pointer_type(dt.int32)


def new_function(name: str, args: dict[str, TileType], **kw) -> tuple[Function, Builder]:
    body = Block()
    for arg_name, type in args.items():
        body.add_arg(type, arg_name)
    return Function(name, list(args), body, **kw), Builder(body)


# -- structural equality -------------------------------------------------------------------------

def same_attr(a: object, b: object) -> bool:
    """Equal and of the same kind: 1 != 1.0 != True here, -0.0 != 0.0, and nan equals nan."""
    if isinstance(a, (tuple, list)):
        return isinstance(b, tuple) and len(a) == len(b) and all(map(same_attr, a, b))
    if isinstance(a, float):
        return isinstance(b, float) and (math.isnan(a) and math.isnan(b) or repr(a) == repr(b))
    return type(a) is type(b) and a == b


def same_attrs(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(same_attr(a[k], b[k]) for k in a)


def assert_same_ir(f: Function, g: Function) -> None:
    assert (f.name, f.arg_names, f.source_file) == (g.name, g.arg_names, g.source_file)
    assert same_attrs(f.attrs, g.attrs), (f.attrs, g.attrs)
    _assert_same_block(f.body, g.body, {})


def _assert_same_block(a: Block, b: Block, seen: dict[Value, Value]) -> None:
    assert [v.type for v in a.args] == [v.type for v in b.args]
    assert [v.index for v in b.args] == list(range(len(b.args))) and all(v.owner is b for v in b.args)
    seen.update(zip(a.args, b.args, strict=True))
    assert [op.name for op in a.ops] == [op.name for op in b.ops]
    for x, y in zip(a.ops, b.ops, strict=True):
        assert y.parent is b
        assert [seen[u] for u in x.operands] == y.operands
        assert same_attrs(x.attrs, y.attrs), (x.name, x.attrs, y.attrs)
        assert [r.type for r in x.results] == [r.type for r in y.results]
        assert x.loc == y.loc
        assert len(x.regions) == len(y.regions)
        for ra, rb in zip(x.regions, y.regions, strict=True):
            assert rb.parent is y
            _assert_same_block(ra, rb, seen)
        seen.update(zip(x.results, y.results, strict=True))


def round_trip(f: Function) -> str:
    verify(f)
    text = print_function(f)
    g = parse_function(text)
    assert print_function(g) == text
    assert_same_ir(f, g)
    return text


# -- one valid instance of every op --------------------------------------------------------------

def _yield(b: Builder, block: Block, values: list[Value]) -> Block:
    with b.at(block):
        b.create("scf.yield", values, [])
    return block


def _combine(b: Builder, n: int, types: list[TileType], op: str = "arith.add") -> Block:
    """A reduce/scan combine region: (lhs..., rhs...) -> (op(lhs_i, rhs_i)...)."""
    block = Block(types + types)
    with b.at(block):
        attrs = {"propagate_nan": True} if op in ("arith.min", "arith.max") else {}
        out = [b.value(op, [block.args[i], block.args[n + i]], types[i], **attrs) for i in range(n)]
    return _yield(b, block, out)


def every_op_function() -> Function:
    f, b = new_function("every_op", {"x_ptr": T(PF32), "i_ptr": T(PI32), "n": I32}, source_file="/k/every.py")
    x_ptr, i_ptr, n = f.args
    v16, i16, m16 = T(dt.float32, 16), T(dt.int32, 16), T(dt.int1, 16)
    pid = b.value("tile.program_id", [], I32, axis=0)
    b.value("tile.num_programs", [], I32, axis=2)
    offs = b.value("tile.arange", [], i16, start=0, end=16)
    base = b.value("arith.mul", [pid, b.constant(16, I32)], I32)
    offs = b.value("arith.add", [offs, b.value("tile.splat", [base], i16)], i16)
    ptrs = b.value("tile.addptr", [b.value("tile.splat", [x_ptr], T(PF32, 16)), offs], T(PF32, 16))
    iptrs = b.value("tile.addptr", [b.value("tile.splat", [i_ptr], T(PI32, 16)), offs], T(PI32, 16))
    mask = b.value("arith.cmp", [offs, b.value("tile.splat", [n], i16)], m16, predicate="lt")
    zero = b.constant(0.0, v16)
    x = b.value("tile.load", [ptrs, mask, zero], v16, cache="", eviction="evict_last", volatile=False)
    ints = b.value("tile.load", [iptrs, mask, b.constant(0, i16)], i16,
                   cache=".cg", eviction="", volatile=True)

    # elementwise rows, driven by the table so every one of them appears
    special = {"arith.cmp", "arith.select", "arith.cast", "arith.bitcast", "tile.addptr", "arith.fma"}
    for name, info in OPS.items():
        if not info.elementwise or name in special:
            continue
        src, type = (ints, i16) if info.cls.startswith("integer") else (x, v16)
        attrs = {"propagate_nan": name == "arith.max"} if "propagate_nan" in info.attrs else {}
        b.value(name, [src] * info.operands, type, **attrs)
    b.value("arith.fma", [x, x, zero], v16)
    b.value("arith.select", [mask, x, zero], v16)
    b.value("arith.cast", [x], T(dt.float16, 16), rounding="rtz")
    b.value("arith.bitcast", [x], i16)

    # shapes
    row = b.value("tile.expand_dims", [x], T(dt.float32, 1, 16), axis=0)
    tile = b.value("tile.broadcast", [row], T(dt.float32, 4, 16))
    b.value("tile.reshape", [b.value("tile.permute", [tile], T(dt.float32, 16, 4), order=(1, 0))],
            T(dt.float32, 64))
    pair = b.value("tile.join", [x, zero], T(dt.float32, 16, 2))
    b.create("tile.split", [pair], [v16, v16])
    b.value("tile.cat", [x, zero], T(dt.float32, 32))
    b.value("tile.flip", [x], v16, axis=0)
    b.value("tile.gather", [x, ints], v16, axis=0)
    b.value("tile.sort", [x], v16, descending=True)
    b.value("tile.histogram", [ints, mask], T(dt.int32, 8), num_bins=8)
    mapped = Block([F32, F32])
    with b.at(mapped):
        b.create("scf.yield", [mapped.args[1], mapped.args[0]], [])
    b.create("tile.map_elementwise", [x], [v16], {"pack": 2}, [mapped])

    # reductions, scans (one with two operands, argmax-style) and the dot
    b.create("tile.reduce", [tile], [v16], {"axis": 0}, [_combine(b, 1, [F32], "arith.max")])
    b.create("tile.reduce", [x, ints], [F32, I32], {"axis": 0}, [_combine(b, 2, [F32, I32])])
    b.create("tile.scan", [x], [v16], {"axis": 0, "reverse": False}, [_combine(b, 1, [F32])])
    a, bm = b.constant(1.0, T(dt.float16, 16, 8)), b.constant(-2.5, T(dt.float16, 8, 32))
    b.value("tile.dot", [a, bm, b.constant(0.0, T(dt.float32, 16, 32))], T(dt.float32, 16, 32),
            input_precision="tf32")

    # memory and debugging
    b.create("tile.store", [ptrs, x, mask], [], {"cache": "", "eviction": ""})
    b.value("tile.atomic", [ptrs, x, mask], v16, kind="add", sem="acq_rel", scope="gpu")
    b.value("tile.atomic_cas", [iptrs, ints, ints], i16, sem="relaxed", scope="cta")
    b.value("tile.atomic_load", [ptrs, mask], v16, sem="acquire", scope="gpu")
    b.create("tile.atomic_store", [ptrs, x, mask], [], {"sem": "release", "scope": "sys"})
    b.value("tile.atomic_poll", [iptrs, ints, b.constant(-1, T(dt.int64))], T(dt.int1, 16), sem="relaxed",
            scope="cta")
    b.create("tile.print", [pid, x], [], {"prefix": 'pid "x" =\n', "hex": False})
    b.create("tile.assert", [mask], [], {"message": "mask must hold\t\\ here"})
    b.create("tile.barrier", [], [])

    # control flow: for with carried values, if with and without results, while
    lb, ub, step = b.constant(0, I32), n, b.constant(1, I32)
    body = Block([I32, v16])
    with b.at(body):
        acc = b.value("arith.add", [body.args[1], x], v16)
    loop = b.create("scf.for", [lb, ub, step, zero], [v16], regions=[_yield(b, body, [acc])])
    cond = b.value("arith.cmp", [pid, lb], I1, predicate="eq")
    b.create("scf.if", [cond], [v16], regions=[_yield(b, Block(), [loop.result]), _yield(b, Block(), [x])])
    b.create("scf.if", [cond], [], regions=[_yield(b, Block(), []), _yield(b, Block(), [])])
    before, after = Block([I32]), Block([I32])
    with b.at(before):
        keep = b.value("arith.cmp", [before.args[0], n], I1, predicate="lt")
        b.create("scf.condition", [keep, before.args[0]], [])
    with b.at(after):
        nxt = b.value("arith.add", [after.args[0], step], I32)
    b.create("scf.while", [lb], [I32], regions=[before, _yield(b, after, [nxt])])
    return f


def test_every_op_round_trips():
    f = every_op_function()
    assert {op.name for op in f.walk()} == set(OPS), "every op of the table needs an instance here"
    text = round_trip(f)
    assert text.startswith('func @every_op(%x_ptr: ptr<f32>, %i_ptr: ptr<i32>, %n: i32) '
                           'attributes {source = "/k/every.py"} {\n')


SPEC_TEXT = """\
func @add_kernel(%x_ptr: ptr<f32>, %y_ptr: ptr<f32>, %n: i32) attributes {source = "/path/k.py"} {
  %0 = tile.program_id() {axis = 0} : i32 loc(3:10)
  %1 = arith.constant() {value = 1024} : i32
  %2 = arith.mul(%0, %1) : i32 loc(4:10)
  %3 = tile.arange() {end = 1024, start = 0} : tensor<1024xi32>
  %4 = tile.splat(%2) : tensor<1024xi32>
  %5 = arith.add(%4, %3) : tensor<1024xi32> loc(5:12)
  %6 = tile.splat(%n) : tensor<1024xi32>
  %7 = arith.cmp(%5, %6) {predicate = "lt"} : tensor<1024xi1>
  %8 = tile.splat(%x_ptr) : tensor<1024xptr<f32>>
  %9 = tile.addptr(%8, %5) : tensor<1024xptr<f32>>
  %10 = arith.constant() {value = 0.0} : tensor<1024xf32>
  %11 = tile.load(%9, %7, %10) {cache = "", eviction = "", volatile = false} : tensor<1024xf32> loc(7:8)
  %12 = arith.constant() {value = 0} : i32
  %13 = arith.constant() {value = 4} : i32
  %14 = arith.constant() {value = 1} : i32
  %15 = scf.for(%12, %13, %14, %11) : tensor<1024xf32> ({
  ^(%16: i32, %17: tensor<1024xf32>):
    %18 = arith.add(%17, %17) : tensor<1024xf32>
    %19 = arith.cmp(%16, %12) {predicate = "eq"} : i1
    %20 = scf.if(%19) : tensor<1024xf32> ({
    ^():
      scf.yield(%18)
    }, {
    ^():
      scf.yield(%17)
    })
    scf.yield(%20)
  }) loc(8:4)
  %21 = tile.splat(%y_ptr) : tensor<1024xptr<f32>>
  %22 = tile.addptr(%21, %5) : tensor<1024xptr<f32>>
  tile.store(%22, %15, %7) {cache = "", eviction = ""} loc(9:4)
}"""


def test_spec_example_is_a_fixed_point():
    f = parse_function(SPEC_TEXT)
    assert print_function(f) == SPEC_TEXT
    assert str(f) == SPEC_TEXT
    assert f.source_file == "/path/k.py" and f.attrs == {} and f.arg_names == ["x_ptr", "y_ptr", "n"]
    loop = f.body.ops[15]
    assert loop.name == "scf.for" and loop.loc == Loc(8, 4) and len(loop.regions[0].args) == 2


def test_nested_regions_round_trip():
    f, b = new_function("nest", {"n": I32})
    (n,) = f.args
    zero, one = b.constant(0, I32), b.constant(1, I32)
    outer = Block([I32, I32])
    with b.at(outer):
        inner = Block([I32, I32])
        with b.at(inner):
            c = b.value("arith.cmp", [inner.args[0], outer.args[0]], I1, predicate="gt")
            then, other = Block(), Block()
            with b.at(then):
                s = b.value("arith.add", [inner.args[1], outer.args[1]], I32)
            sel = b.create("scf.if", [c], [I32], regions=[_yield(b, then, [s]), _yield(b, other, [zero])])
        loop = b.create("scf.for", [zero, outer.args[0], one, outer.args[1]], [I32],
                        regions=[_yield(b, inner, [sel.result])])
    b.create("scf.for", [zero, n, one, zero], [I32], regions=[_yield(b, outer, [loop.result])])
    assert round_trip(f) == """\
func @nest(%n: i32) {
  %0 = arith.constant() {value = 0} : i32
  %1 = arith.constant() {value = 1} : i32
  %2 = scf.for(%0, %n, %1, %0) : i32 ({
  ^(%3: i32, %4: i32):
    %5 = scf.for(%0, %3, %1, %4) : i32 ({
    ^(%6: i32, %7: i32):
      %8 = arith.cmp(%6, %3) {predicate = "gt"} : i1
      %9 = scf.if(%8) : i32 ({
      ^():
        %10 = arith.add(%7, %4) : i32
        scf.yield(%10)
      }, {
      ^():
        scf.yield(%0)
      })
      scf.yield(%9)
    })
    scf.yield(%5)
  })
}"""


def test_empty_function_and_regions():
    f, b = new_function("empty", {})
    assert round_trip(f) == "func @empty() {\n}"
    b.create("scf.if", [b.constant(True, I1)], [], regions=[_yield(b, Block(), []), _yield(b, Block(), [])])
    assert round_trip(f).endswith(
        "  scf.if(%0) ({\n  ^():\n    scf.yield()\n  }, {\n  ^():\n    scf.yield()\n  })\n}")


ATTR_VALUES = {
    "int": 7, "neg": -3, "big": 2**100, "zero": 0,
    "one_f": 1.0, "neg_zero": -0.0, "tiny": 5e-324, "huge": 1e300, "third": 1 / 3, "exp": 1.5e-7,
    "inf": math.inf, "ninf": -math.inf, "nan": math.nan,
    "t": True, "f": False, "nothing": None,
    "empty_s": "", "quotes": 'say "hi"', "newline": "a\nb\r\tc", "backslash": "C:\\dir\\",
    "unicode": "π ≈ 3.14 🙂",
    "surrogate": "\ud800", "looks_like_code": '}) loc(1:2) "',
    "order": (1, 0), "empty": (), "mixed": (1, 2.0, "s", True, None, (3, (4,))),
    "none": 1, "true": 2, "loc": 3, "func": 4,  # keywords are fine as keys
    "needs quotes": 5, "": 6, "a.b": 7,
}


def test_attribute_values_round_trip():
    f, b = new_function("attrs", {}, attrs={"num_warps": 4, "tag": 'a "b"', "flags": (True, 2.5)})
    b.create("tile.print", [], [], dict(ATTR_VALUES, prefix="", hex=True))
    text = round_trip(f)
    g = parse_function(text)
    attrs = g.body.ops[0].attrs
    assert type(attrs["one_f"]) is float and type(attrs["int"]) is int and type(attrs["t"]) is bool
    assert attrs["order"] == (1, 0) and isinstance(attrs["mixed"][5], tuple)
    assert math.copysign(1.0, attrs["neg_zero"]) == -1.0 and math.isnan(attrs["nan"])
    assert attrs["surrogate"] == "\ud800" and attrs["big"] == 2**100
    assert g.attrs == {"num_warps": 4, "tag": 'a "b"', "flags": (True, 2.5)} and g.source_file == ""
    assert '"needs quotes" = 5' in text and '"" = 6' in text and '"a.b" = 7' in text


@pytest.mark.parametrize("value, text", [
    (1.0, "1.0"), (1e20, "1e+20"), (-2.5e-8, "-2.5e-08"), (math.inf, "inf"), (-math.inf, "-inf"),
    (math.nan, "nan"), (3, "3"), (True, "true"), (None, "none"), ([1, 0], "[1, 0]"), ('"', '"\\""'),
])
def test_attr_value_spelling(value, text):
    assert format_attr_value(value) == text


def test_lists_parse_as_tuples_and_sorted_keys():
    f, b = new_function("k", {})
    x = b.constant(0.0, T(dt.float32, 2, 3))
    b.create("tile.permute", [x], [T(dt.float32, 3, 2)], {"order": [1, 0], "b": 1, "a": 2})
    text = print_function(f)
    assert "{a = 2, b = 1, order = [1, 0]}" in text
    assert parse_function(text).body.ops[1].attrs["order"] == (1, 0)


def test_types_round_trip():
    types = [T(dt.float32), T(PF32), T(dt.pointer_type(PF32)), T(dt.float16, 128, 64), T(PF32, 128),
             T(dt.pointer_type(dt.pointer_type(dt.bfloat16)), 2, 1), T(dt.float8e4nv, 0)] + \
        [T(d, 3) for d in dt.ALL_DTYPES]
    f, _ = new_function("types", {f"a{i}": t for i, t in enumerate(types)})
    text = round_trip(f)
    assert "%a3: tensor<128x64xf16>, %a4: tensor<128xptr<f32>>" in text and "%a2: ptr<ptr<f32>>" in text


def test_unicode_identifiers():
    f, b = new_function("ядро", {"α": I32})
    b.value("arith.add", [f.args[0], f.args[0]], I32)
    assert round_trip(f).startswith("func @ядро(%α: i32) {")


def test_quoted_function_name_and_source_attr():
    f, _ = new_function("my kernel", {}, source_file='/tmp/a "b".py', attrs={"z": 1})
    text = round_trip(f)
    assert text == 'func @"my kernel"() attributes {source = "/tmp/a \\"b\\".py", z = 1} {\n}'


def test_names_comments_and_whitespace_are_accepted():
    text = """
    // a hand-written kernel
    func @k(%n: i32) {
      %one = arith.constant() {value = 1} : i32   // named values are fine
      %7 = arith.add(%n,%one):i32 loc( 2 : 3 )
      %sum, %other = tile.split(%pair) : f32, f32
    }"""
    with pytest.raises(IRParseError, match="undefined value %pair"):
        parse_function(text)
    f = parse_function(text.replace("      %sum, %other = tile.split(%pair) : f32, f32\n", ""))
    assert print_function(f) == ("func @k(%n: i32) {\n  %0 = arith.constant() {value = 1} : i32\n"
                                 "  %1 = arith.add(%n, %0) : i32 loc(2:3)\n}")
    assert f.body.ops[0].result.name_hint == "one"


def test_print_op():
    f = parse_function(SPEC_TEXT)
    loop = f.body.ops[15]
    text = print_op(loop)
    assert text.startswith("%0 = scf.for(%?, %?, %?, %?) : tensor<1024xf32> ({\n"
                           "^(%1: i32, %2: tensor<1024xf32>):\n")
    assert text.endswith("  scf.yield(%5)\n}) loc(8:4)")


def test_printing_undefined_values_does_not_parse():
    f, b = new_function("k", {})
    stray = Value(I32, name_hint="lost")
    b.create("arith.add", [stray, stray], [I32])
    text = print_function(f)
    assert "arith.add(%?lost, %?lost)" in text
    with pytest.raises(IRParseError, match="line 2, column 18: unexpected character '%'"):
        parse_function(text)


def test_bad_arg_names_refuse_to_print():
    f, _ = new_function("k", {"a": I32, "b": I32})
    f.arg_names = ["a", "a"]
    with pytest.raises(ValueError, match="not a unique identifier"):
        print_function(f)


# -- errors --------------------------------------------------------------------------------------

HEADER = "func @k(%n: i32, %p: ptr<f32>) {\n"


@pytest.mark.parametrize("body, message", [
    ("  %0 = arith.frobnicate(%n) : i32\n", r"line 2, column 8: unknown op 'arith.frobnicate'"),
    ("  %0 = arith.add(%n, %n) : i33\n", r"line 2, column 28: bad type 'i33': unknown element type 'i33'"),
    ("  %0 = arith.add(%n, %n) : tensor<4xf32\n", r"bad type 'tensor<4xf32'"),
    ("  %0 = tile.splat(%n) : tensor<i32>\n", r"bad type 'tensor<i32>' \(the canonical spelling is 'i32'\)"),
    ("  %0 = arith.add(%n, %m) : i32\n", r"line 2, column 22: use of undefined value %m"),
    ("  %0 = arith.add(%0, %n) : i32\n", r"use of undefined value %0"),
    ("  %0 = arith.add(%n, %n) : i32\n" * 2, r"line 3, column 3: redefinition of %0"),
    ("  %n = arith.add(%n, %n) : i32\n", r"redefinition of %n"),
    ("  %0, %1 = arith.add(%n, %n) : i32\n", r"arith.add names 2 results but lists 1 result types"),
    ("  arith.add(%n, %n) : i32\n", r"names 0 results but lists 1"),
    ("  %0 = arith.add(%n %n) : i32\n", r"line 2, column 21: unexpected '%n', expected one of: '\)', ','"),
    ("  %0 = arith.add(%n, %n) : i32 $\n", r"line 2, column 32: unexpected character '\$'"),
    ("  %0 = arith.add(%n, %n) : i32\n", None),
    ("  %x1y = arith.add(%n, %n) : i32\n", None),
    ("  %1x = arith.add(%n, %n) : i32\n", r"bad value name '%1x'"),
    ('  tile.assert(%n) {message = "\\q"}\n', r"bad string literal"),
    ("  tile.barrier() {a = 1, a = 2}\n", r"duplicate attribute 'a'"),
    ("  %0 = arith.constant() {value = 1.} : f32\n", None),
    ("  %0 = arith.constant() {value = 01x} : f32\n", r"unexpected"),
])
def test_parse_errors(body, message):
    text = HEADER + body + "}"
    if message is None:
        parse_function(text)
        return
    with pytest.raises(IRParseError, match=message) as info:
        parse_function(text)
    assert isinstance(info.value, ValueError)
    assert info.value.line is not None and info.value.column is not None


def test_scoping_region_values_do_not_escape():
    text = HEADER + """\
  %0 = arith.constant() {value = true} : i1
  scf.if(%0) ({
  ^():
    %1 = arith.add(%n, %n) : i32
    scf.yield()
  }, {
  ^():
    %2 = arith.add(%1, %n) : i32
    scf.yield()
  })
  %3 = arith.add(%1, %n) : i32
}"""
    with pytest.raises(IRParseError, match=r"line 9, column 20: use of undefined value %1"):
        parse_function(text)
    with pytest.raises(IRParseError, match=r"line 12, column 18: use of undefined value %1"):
        parse_function(text.replace("%2 = arith.add(%1, %n)", "%2 = arith.add(%n, %n)"))


def test_error_shows_the_line():
    with pytest.raises(IRParseError) as info:
        parse_function(HEADER + "  %0 = arith.nope(%n) : i32\n}")
    assert str(info.value).endswith("\n    %0 = arith.nope(%n) : i32\n         ^")
    assert (info.value.line, info.value.column) == (2, 8)


@pytest.mark.parametrize("text, message", [
    ("", "unexpected end of input"),
    ("func @k() {", "unexpected end of input"),
    ("func k() {}", "line 1, column 6: unexpected 'k', expected one of: symbol"),
    ("func @1k() {\n}", "bad function name '@1k'"),
    ("func @k(%0: i32) {\n}", "function arguments are named by identifiers, not %0"),
    ("func @k() {\n  scf.if() ({\n  }) \n}", r"line 3, column 3: unexpected '}', expected one of: '\^'"),
])
def test_malformed_functions(text, message):
    with pytest.raises(IRParseError, match=message):
        parse_function(text)


@pytest.mark.parametrize("body, message", [
    ("  %0 = arith.add(%n) : i32\n", "arith.add takes 2 operands, got 1"),
    ("  %0 = arith.add(%n, %n) : f32\n", "must share one element type"),
    ("  %0 = tile.program_id() : i32\n", r"tile.program_id is missing attributes \['axis'\]"),
    ("  scf.yield(%n)\n", "a kernel body ends without a terminator"),
    ("  %0 = tile.splat(%p) : tensor<4xi32>\n", "tile.splat: takes a scalar of the result's element type"),
])
def test_verify_failures(body, message):
    with pytest.raises(VerifyError, match=message):
        parse_function(HEADER + body + "}")


def test_grammar_is_generic():
    grammar = (Path(__file__).parents[3] / "dsl" / "ir" / "grammar.lark").read_text()
    assert not any(name in grammar for name in OPS)


# -- random IR -----------------------------------------------------------------------------------

DTYPES = [dt.int1, dt.int8, dt.int32, dt.int64, dt.uint8, dt.uint32, dt.float16, dt.bfloat16, dt.float32,
          dt.float64, dt.float8e5]
SHAPES = [(4,), (16,), (2, 8), (1, 4, 2)]
_SPECIAL = ("arith.cmp", "tile.addptr", "arith.cast", "arith.bitcast")
BINARY = [n for n, i in OPS.items() if i.elementwise and i.operands == 2 and n not in _SPECIAL]
UNARY = [n for n, i in OPS.items() if i.elementwise and i.operands == 1 and n not in _SPECIAL]
PREDICATES = ["eq", "ne", "lt", "le", "gt", "ge"]
text_attrs = st.text(max_size=12)


class _RandomIR:
    """Draws ops into a block from a pool of visible values; a region sees the pool plus its arguments,
    and what it defines stays inside it."""

    def __init__(self, draw, builder: Builder):
        self.draw, self.b = draw, builder

    def pick(self, values: list):
        return self.draw(st.sampled_from(values))

    def new(self, pool: list[Value], name: str, operands: list[Value], types: list[TileType],
            attrs: dict | None = None, regions: list[Block] | None = None) -> Operation:
        loc = self.draw(st.none() | st.builds(Loc, st.integers(1, 500), st.integers(0, 80)))
        with self.b.located(loc):
            op = self.b.create(name, operands, types, attrs, regions)
        pool.extend(op.results)
        return op

    def constant(self, pool: list[Value], type: TileType) -> Value:
        if type.dtype.is_bool():
            value = self.draw(st.booleans())
        elif type.dtype.is_floating():
            value = self.draw(st.floats(allow_nan=True, allow_infinity=True))
        else:
            value = self.draw(st.integers(-(2**70), 2**70))
        return self.new(pool, "arith.constant", [], [type], {"value": value}).result

    def bool_scalar(self, pool: list[Value]) -> Value:
        return self.pick([v for v in pool if v.type == I1] or [self.constant(pool, I1)])

    def yield_(self, pool: list[Value], types: list[TileType]) -> None:
        self.new(pool, "scf.yield", [self.pick([v for v in pool if v.type == t]) for t in types], [])

    def fill(self, pool: list[Value], depth: int) -> None:
        kinds = ["const", "splat", "cmp", "select", "cast", "debug"] + ["binary"] * 3 + ["unary"] * 2
        kinds += ["for", "if"] if depth < 2 else []
        for _ in range(self.draw(st.integers(0, 8 if depth == 0 else 4))):
            kind = self.pick(kinds) if pool else "const"
            getattr(self, "op_" + kind)(pool, depth)

    def op_const(self, pool: list[Value], depth: int) -> None:
        self.constant(pool, T(self.pick(DTYPES), *self.pick([()] + SHAPES)))

    def op_splat(self, pool: list[Value], depth: int) -> None:
        src = self.pick([v for v in pool if v.type.is_scalar] or [self.constant(pool, I32)])
        self.new(pool, "tile.splat", [src], [src.type.with_shape(self.pick(SHAPES))])

    def op_unary(self, pool: list[Value], depth: int) -> None:
        a = self.pick(pool)
        self.new(pool, self.pick(UNARY), [a], [a.type])

    def op_binary(self, pool: list[Value], depth: int) -> None:
        a = self.pick(pool)
        name = self.pick(BINARY)
        attrs = {"propagate_nan": self.draw(st.booleans())} if "propagate_nan" in OPS[name].attrs else {}
        self.new(pool, name, [a, self.pick([v for v in pool if v.type == a.type])], [a.type], attrs)

    def op_cmp(self, pool: list[Value], depth: int) -> None:
        a = self.pick(pool)
        b = self.pick([v for v in pool if v.type == a.type])
        attrs = {"predicate": self.pick(PREDICATES)}
        self.new(pool, "arith.cmp", [a, b], [a.type.with_dtype(dt.int1)], attrs)

    def op_select(self, pool: list[Value], depth: int) -> None:
        conds = [v for v in pool if v.type.dtype == dt.int1]
        if conds:
            cond = self.pick(conds)
            a = self.pick([v for v in pool if v.type.shape == cond.type.shape])
            self.new(pool, "arith.select", [cond, a, a], [a.type])

    def op_cast(self, pool: list[Value], depth: int) -> None:
        a = self.pick(pool)
        rounding = self.pick(["rtne", "rtz"])
        self.new(pool, "arith.cast", [a], [a.type.with_dtype(self.pick(DTYPES))], {"rounding": rounding})

    def op_debug(self, pool: list[Value], depth: int) -> None:
        """String attributes: any text must survive the round trip."""
        self.new(pool, "tile.assert", [self.bool_scalar(pool)], [], {"message": self.draw(text_attrs)})
        values = self.draw(st.lists(st.sampled_from(pool), max_size=3))
        attrs = {"prefix": self.draw(text_attrs), "hex": self.draw(st.booleans())}
        self.new(pool, "tile.print", values, [], attrs)

    def op_for(self, pool: list[Value], depth: int) -> None:
        bound = T(self.pick([dt.int32, dt.int64]))
        bounds = [self.constant(pool, bound) for _ in range(3)]
        inits = self.draw(st.lists(st.sampled_from(pool), max_size=2))
        types = [v.type for v in inits]
        body = Block([bound] + types)
        inner = pool + body.args
        with self.b.at(body):
            self.fill(inner, depth + 1)
            self.yield_(inner, types)
        self.new(pool, "scf.for", bounds + inits, types, regions=[body])

    def op_if(self, pool: list[Value], depth: int) -> None:
        cond = self.bool_scalar(pool)
        types = [v.type for v in self.draw(st.lists(st.sampled_from(pool), max_size=2))]
        regions = [Block(), Block()]
        for region in regions:
            inner = list(pool)
            with self.b.at(region):
                self.fill(inner, depth + 1)
                self.yield_(inner, types)
        self.new(pool, "scf.if", [cond], types, regions=regions)


@st.composite
def random_functions(draw) -> Function:
    arg_types = draw(st.lists(st.sampled_from([T(d) for d in DTYPES] + [T(PF32), T(dt.pointer_type(PI32))]),
                              max_size=4))
    f, b = new_function(draw(st.sampled_from(["k", "kernel_2", "_fused"])),
                        {f"arg{i}": t for i, t in enumerate(arg_types)},
                        source_file=draw(st.sampled_from(["", "/src/k.py"])))
    _RandomIR(draw, b).fill(list(f.args), 0)
    return f


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_functions())
def test_random_ir_round_trips(f):
    round_trip(f)
