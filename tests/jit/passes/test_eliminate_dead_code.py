"""eliminate_dead_code on IR text: unused pure ops go (transitively, in loop bodies too); memory
effects stay even when their results are unused."""

from ir_text import assert_pass

from jit.passes import eliminate_dead_code


def test_unused_pure_chains_go_and_effects_stay():
    assert_pass(eliminate_dead_code, """
func @k(%x: ptr<f32>, %n: i32) {
  %r = tile.arange() {end = 8, start = 0} : tensor<8xi32>
  %p = tile.splat(%x) : tensor<8xptr<f32>>
  %q = tile.addptr(%p, %r) : tensor<8xptr<f32>>
  %m = arith.constant() {value = true} : tensor<8xi1>
  %z = arith.constant() {value = 0.0} : tensor<8xf32>
  %v = tile.load(%q, %m, %z) {cache = "", eviction = "", volatile = false} : tensor<8xf32>
  %w = arith.mul(%v, %v) : tensor<8xf32>
  %u = arith.add(%w, %v) : tensor<8xf32>
  %one = arith.constant() {value = 1.0} : tensor<8xf32>
  %old = tile.atomic(%q, %one, %m) {kind = "fadd", scope = "gpu", sem = "acq_rel"} : tensor<8xf32>
}""", """
func @k(%x: ptr<f32>, %n: i32) {
  %r = tile.arange() {end = 8, start = 0} : tensor<8xi32>
  %p = tile.splat(%x) : tensor<8xptr<f32>>
  %q = tile.addptr(%p, %r) : tensor<8xptr<f32>>
  %m = arith.constant() {value = true} : tensor<8xi1>
  %z = arith.constant() {value = 0.0} : tensor<8xf32>
  %v = tile.load(%q, %m, %z) {cache = "", eviction = "", volatile = false} : tensor<8xf32>
  %one = arith.constant() {value = 1.0} : tensor<8xf32>
  %old = tile.atomic(%q, %one, %m) {kind = "fadd", scope = "gpu", sem = "acq_rel"} : tensor<8xf32>
}""")


def test_dead_ops_inside_a_loop_body_go_but_the_loop_stays():
    assert_pass(eliminate_dead_code, """
func @k(%out: ptr<i32>, %n: i32) {
  %zero = arith.constant() {value = 0} : i32
  %one = arith.constant() {value = 1} : i32
  %unused = arith.mul(%n, %n) : i32
  %s = scf.for(%zero, %n, %one, %zero) : i32 ({
  ^(%i: i32, %a: i32):
    %dead = arith.mul(%i, %i) : i32
    %next = arith.add(%a, %i) : i32
    scf.yield(%next)
  })
  %m = arith.constant() {value = true} : i1
  tile.store(%out, %s, %m) {cache = "", eviction = ""}
}""", """
func @k(%out: ptr<i32>, %n: i32) {
  %zero = arith.constant() {value = 0} : i32
  %one = arith.constant() {value = 1} : i32
  %s = scf.for(%zero, %n, %one, %zero) : i32 ({
  ^(%i: i32, %a: i32):
    %next = arith.add(%a, %i) : i32
    scf.yield(%next)
  })
  %m = arith.constant() {value = true} : i1
  tile.store(%out, %s, %m) {cache = "", eviction = ""}
}""")
