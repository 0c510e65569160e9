"""combine_dot_add on IR text: `x + dot(a, b)` with a zero accumulator becomes `dot(a, b, x)`, as
Triton's combine pass does; not when the dot has other users, a non-zero accumulator, or x comes
later."""

from ir_text import assert_pass

from jit.passes import combine_dot_add

HEADER = """
func @k(%x: ptr<f32>) {
  %r = tile.arange() {end = 16, start = 0} : tensor<16xi32>
  %e0 = tile.expand_dims(%r) {axis = 1} : tensor<16x1xi32>
  %e1 = tile.expand_dims(%r) {axis = 0} : tensor<1x16xi32>
  %b0 = tile.broadcast(%e0) : tensor<16x16xi32>
  %b1 = tile.broadcast(%e1) : tensor<16x16xi32>
  %i = arith.add(%b0, %b1) : tensor<16x16xi32>
  %p = tile.splat(%x) : tensor<16x16xptr<f32>>
  %q = tile.addptr(%p, %i) : tensor<16x16xptr<f32>>
  %m = arith.constant() {value = true} : tensor<16x16xi1>
  %zero = arith.constant() {value = 0.0} : tensor<16x16xf32>
  %a = tile.load(%q, %m, %zero) {cache = "", eviction = "", volatile = false} : tensor<16x16xf32>
"""


def test_add_of_a_fresh_dot_becomes_its_accumulator_in_a_loop():
    assert_pass(combine_dot_add, HEADER + """
  %c0 = arith.constant() {value = 0} : i32
  %c1 = arith.constant() {value = 1} : i32
  %c4 = arith.constant() {value = 4} : i32
  %acc = scf.for(%c0, %c4, %c1, %zero) : tensor<16x16xf32> ({
  ^(%k: i32, %acc_in: tensor<16x16xf32>):
    %d = tile.dot(%a, %a, %zero) {input_precision = "tf32"} : tensor<16x16xf32>
    %next = arith.add(%acc_in, %d) : tensor<16x16xf32>
    scf.yield(%next)
  })
  tile.store(%q, %acc, %m) {cache = "", eviction = ""}
}""", HEADER + """
  %c0 = arith.constant() {value = 0} : i32
  %c1 = arith.constant() {value = 1} : i32
  %c4 = arith.constant() {value = 4} : i32
  %acc = scf.for(%c0, %c4, %c1, %zero) : tensor<16x16xf32> ({
  ^(%k: i32, %acc_in: tensor<16x16xf32>):
    %d = tile.dot(%a, %a, %acc_in) {input_precision = "tf32"} : tensor<16x16xf32>
    scf.yield(%d)
  })
  tile.store(%q, %acc, %m) {cache = "", eviction = ""}
}""")


def test_either_operand_order_combines():
    assert_pass(combine_dot_add, HEADER + """
  %d = tile.dot(%a, %a, %zero) {input_precision = "ieee"} : tensor<16x16xf32>
  %s = arith.add(%d, %a) : tensor<16x16xf32>
  tile.store(%q, %s, %m) {cache = "", eviction = ""}
}""", HEADER + """
  %d = tile.dot(%a, %a, %a) {input_precision = "ieee"} : tensor<16x16xf32>
  tile.store(%q, %d, %m) {cache = "", eviction = ""}
}""")


def test_no_combine_when_the_dot_is_used_twice_or_accumulates_already():
    text = HEADER + """
  %d = tile.dot(%a, %a, %zero) {input_precision = "tf32"} : tensor<16x16xf32>
  %s = arith.add(%a, %d) : tensor<16x16xf32>
  tile.store(%q, %d, %m) {cache = "", eviction = ""}
  tile.store(%q, %s, %m) {cache = "", eviction = ""}
  %d2 = tile.dot(%a, %a, %a) {input_precision = "tf32"} : tensor<16x16xf32>
  %s2 = arith.add(%a, %d2) : tensor<16x16xf32>
  tile.store(%q, %s2, %m) {cache = "", eviction = ""}
}"""
    assert_pass(combine_dot_add, text, text)


def test_no_combine_when_the_addend_is_defined_after_the_dot():
    text = HEADER + """
  %d = tile.dot(%a, %a, %zero) {input_precision = "tf32"} : tensor<16x16xf32>
  %late = arith.mul(%a, %a) : tensor<16x16xf32>
  %s = arith.add(%late, %d) : tensor<16x16xf32>
  tile.store(%q, %s, %m) {cache = "", eviction = ""}
}"""
    assert_pass(combine_dot_add, text, text)
