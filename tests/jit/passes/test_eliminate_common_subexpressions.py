"""eliminate_common_subexpressions on IR text: identical pure ops merge; different attributes, memory
ops, and values defined only inside a region do not."""

from ir_text import assert_pass

from jit.passes import eliminate_common_subexpressions


def test_identical_pure_ops_merge_and_their_users_follow():
    assert_pass(eliminate_common_subexpressions, """
func @k(%x: ptr<f32>, %n: i32) {
  %r = tile.arange() {end = 8, start = 0} : tensor<8xi32>
  %a = tile.splat(%n) : tensor<8xi32>
  %b = tile.splat(%n) : tensor<8xi32>
  %lt = arith.cmp(%r, %a) {predicate = "lt"} : tensor<8xi1>
  %lt2 = arith.cmp(%r, %b) {predicate = "lt"} : tensor<8xi1>
  %le = arith.cmp(%r, %b) {predicate = "le"} : tensor<8xi1>
  %both = arith.and(%lt2, %le) : tensor<8xi1>
  %p = tile.splat(%x) : tensor<8xptr<f32>>
  %q = tile.addptr(%p, %r) : tensor<8xptr<f32>>
  %z = arith.constant() {value = 0.0} : tensor<8xf32>
  %v = tile.load(%q, %lt, %z) {cache = "", eviction = "", volatile = false} : tensor<8xf32>
  %w = tile.load(%q, %lt, %z) {cache = "", eviction = "", volatile = false} : tensor<8xf32>
  %s = arith.add(%v, %w) : tensor<8xf32>
  tile.store(%q, %s, %both) {cache = "", eviction = ""}
}""", """
func @k(%x: ptr<f32>, %n: i32) {
  %r = tile.arange() {end = 8, start = 0} : tensor<8xi32>
  %a = tile.splat(%n) : tensor<8xi32>
  %lt = arith.cmp(%r, %a) {predicate = "lt"} : tensor<8xi1>
  %le = arith.cmp(%r, %a) {predicate = "le"} : tensor<8xi1>
  %both = arith.and(%lt, %le) : tensor<8xi1>
  %p = tile.splat(%x) : tensor<8xptr<f32>>
  %q = tile.addptr(%p, %r) : tensor<8xptr<f32>>
  %z = arith.constant() {value = 0.0} : tensor<8xf32>
  %v = tile.load(%q, %lt, %z) {cache = "", eviction = "", volatile = false} : tensor<8xf32>
  %w = tile.load(%q, %lt, %z) {cache = "", eviction = "", volatile = false} : tensor<8xf32>
  %s = arith.add(%v, %w) : tensor<8xf32>
  tile.store(%q, %s, %both) {cache = "", eviction = ""}
}""")


def test_outer_values_are_reused_inside_a_region_but_not_the_other_way_round():
    assert_pass(eliminate_common_subexpressions, """
func @k(%out: ptr<i32>, %n: i32) {
  %zero = arith.constant() {value = 0} : i32
  %one = arith.constant() {value = 1} : i32
  %sq = arith.mul(%n, %n) : i32
  %s = scf.for(%zero, %n, %one, %zero) : i32 ({
  ^(%i: i32, %a: i32):
    %sq2 = arith.mul(%n, %n) : i32
    %ii = arith.mul(%i, %i) : i32
    %t = arith.add(%sq2, %ii) : i32
    %next = arith.add(%a, %t) : i32
    scf.yield(%next)
  })
  %ii_outside = arith.mul(%s, %s) : i32
  %one_again = arith.constant() {value = 1} : i32
  %u = arith.add(%ii_outside, %one_again) : i32
  %m = arith.constant() {value = true} : i1
  tile.store(%out, %u, %m) {cache = "", eviction = ""}
}""", """
func @k(%out: ptr<i32>, %n: i32) {
  %zero = arith.constant() {value = 0} : i32
  %one = arith.constant() {value = 1} : i32
  %sq = arith.mul(%n, %n) : i32
  %s = scf.for(%zero, %n, %one, %zero) : i32 ({
  ^(%i: i32, %a: i32):
    %ii = arith.mul(%i, %i) : i32
    %t = arith.add(%sq, %ii) : i32
    %next = arith.add(%a, %t) : i32
    scf.yield(%next)
  })
  %ii_outside = arith.mul(%s, %s) : i32
  %u = arith.add(%ii_outside, %one) : i32
  %m = arith.constant() {value = true} : i1
  tile.store(%out, %u, %m) {cache = "", eviction = ""}
}""")


def test_constants_of_different_kinds_stay_apart():
    text = """
func @k(%out: ptr<f32>) {
  %a = arith.constant() {value = 0.0} : f32
  %b = arith.constant() {value = -0.0} : f32
  %c = arith.add(%a, %b) : f32
  %m = arith.constant() {value = true} : i1
  tile.store(%out, %c, %m) {cache = "", eviction = ""}
}"""
    assert_pass(eliminate_common_subexpressions, text, text)
