"""Compile errors point at the kernel's line with a caret and say why in plain words."""

import pytest

import dsl as tl
from dsl import dtypes as T
from dsl.errors import CompilationError
from dsl.frontend import compile_kernel
from dsl.ir.core import TileType
from jit import jit

F32P = TileType(T.pointer_type(T.float32))
I32 = TileType(T.int32)


def compile_error(kernel, **signature) -> CompilationError:
    with pytest.raises(CompilationError) as info:
        compile_kernel(kernel, signature)
    return info.value


@jit
def uses_break(x_ptr, n):
    for _ in range(n):
        break


@jit
def unknown_name(x_ptr):
    tl.load(x_ptr + tl.aranged(0, 16))


@jit
def bad_broadcast(x_ptr):
    a = tl.arange(0, 16)
    b = tl.arange(0, 32)
    tl.store(x_ptr + a, (a + b).to(tl.float32))


@jit
def not_pow2(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)


@jit
def tensor_as_constexpr(x_ptr, n):
    tl.zeros((n,), dtype=tl.float32)


@jit
def chained(x_ptr, n):
    if 0 < n < 5:
        tl.store(x_ptr, 1.0)


@jit
def carried_type_change(x_ptr, n):
    acc = 0
    for i in range(n):
        acc += tl.load(x_ptr + i)
    tl.store(x_ptr, acc)


@jit
def block_if(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    if x > 0:
        tl.store(x_ptr, 1.0)


@jit
def fp16_exp(x_ptr):
    x = tl.load(x_ptr + tl.arange(0, 16))
    tl.store(x_ptr + tl.arange(0, 16), tl.exp(x.to(tl.float16)))


@jit
def item_assign(x_ptr):
    x = tl.zeros((16,), dtype=tl.float32)
    x[0] = 1.0


@jit
def static_fail(x_ptr, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK > 64, "BLOCK too small")


def test_break_is_unsupported_with_caret():
    e = compile_error(uses_break, x_ptr=F32P, n=I32)
    text = str(e)
    assert "break is not supported" in text
    assert "uses_break" in text
    line = [ln for ln in text.splitlines() if "|" in ln][-1]
    assert line.strip().endswith("break")
    caret = text.splitlines()[text.splitlines().index(line) + 1]
    assert caret.index("^") == line.index("break")


def test_unknown_tl_name():
    assert "aranged" in str(compile_error(unknown_name, x_ptr=F32P))


def test_broadcast_mismatch_names_shapes():
    text = str(compile_error(bad_broadcast, x_ptr=F32P))
    assert "[16]" in text and "[32]" in text and "(a + b)" in text


def test_non_power_of_two_block():
    assert "power of 2" in str(compile_error(not_pow2, x_ptr=F32P, BLOCK=12))


def test_runtime_value_where_constexpr_needed():
    assert "constexpr" in str(compile_error(tensor_as_constexpr, x_ptr=F32P, n=I32))


def test_chained_comparison():
    assert "chained comparisons" in str(compile_error(chained, x_ptr=F32P, n=I32))


def test_loop_carried_type_change():
    text = str(compile_error(carried_type_change, x_ptr=F32P, n=I32))
    assert "acc" in text and "one type" in text


def test_if_on_block_is_ambiguous():
    assert "ambiguous" in str(compile_error(block_if, x_ptr=F32P))


def test_math_rejects_fp16_like_triton():
    assert "fp16" in str(compile_error(fp16_exp, x_ptr=F32P))


def test_item_assignment():
    assert "item" in str(compile_error(item_assign, x_ptr=F32P))


def test_static_assert_message():
    e = compile_error(static_fail, x_ptr=F32P, BLOCK=16)
    assert isinstance(e, tl.CompileTimeAssertionFailure)
    assert "BLOCK too small" in str(e)


def test_error_pickles():
    import pickle

    e = compile_error(uses_break, x_ptr=F32P, n=I32)
    again = pickle.loads(pickle.dumps(e))
    assert str(again) == str(e)
