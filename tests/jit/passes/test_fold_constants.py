"""fold_constants on IR text: shape ops of a constant become constant tiles; anything else stays."""

from ir_text import assert_pass

from jit.passes import fold_constants


def test_splat_and_broadcast_chains_of_a_constant_fold_to_constant_tiles():
    assert_pass(fold_constants, """
func @k(%out: ptr<f32>) {
  %c = arith.constant() {value = 5.0} : f32
  %s = tile.splat(%c) : tensor<1xf32>
  %e = tile.expand_dims(%s) {axis = 0} : tensor<1x1xf32>
  %b = tile.broadcast(%e) : tensor<4x8xf32>
  %r = tile.arange() {end = 32, start = 0} : tensor<32xi32>
  %p = tile.splat(%out) : tensor<32xptr<f32>>
  %q = tile.addptr(%p, %r) : tensor<32xptr<f32>>
  %f = tile.reshape(%b) : tensor<32xf32>
  %m = arith.constant() {value = true} : tensor<32xi1>
  tile.store(%q, %f, %m) {cache = "", eviction = ""}
}""", """
func @k(%out: ptr<f32>) {
  %c = arith.constant() {value = 5.0} : f32
  %s = arith.constant() {value = 5.0} : tensor<1xf32>
  %e = arith.constant() {value = 5.0} : tensor<1x1xf32>
  %b = arith.constant() {value = 5.0} : tensor<4x8xf32>
  %r = tile.arange() {end = 32, start = 0} : tensor<32xi32>
  %p = tile.splat(%out) : tensor<32xptr<f32>>
  %q = tile.addptr(%p, %r) : tensor<32xptr<f32>>
  %f = arith.constant() {value = 5.0} : tensor<32xf32>
  %m = arith.constant() {value = true} : tensor<32xi1>
  tile.store(%q, %f, %m) {cache = "", eviction = ""}
}""")


def test_splats_of_arguments_and_of_computed_values_stay():
    text = """
func @k(%out: ptr<i32>, %n: i32) {
  %one = arith.constant() {value = 1} : i32
  %n1 = arith.add(%n, %one) : i32
  %s = tile.splat(%n1) : tensor<8xi32>
  %t = tile.splat(%n) : tensor<8xi32>
  %v = arith.add(%s, %t) : tensor<8xi32>
  %r = tile.arange() {end = 8, start = 0} : tensor<8xi32>
  %p = tile.splat(%out) : tensor<8xptr<i32>>
  %q = tile.addptr(%p, %r) : tensor<8xptr<i32>>
  %m = arith.constant() {value = true} : tensor<8xi1>
  tile.store(%q, %v, %m) {cache = "", eviction = ""}
}"""
    assert_pass(fold_constants, text, text)


def test_folds_inside_loop_bodies_too():
    assert_pass(fold_constants, """
func @k(%out: ptr<f32>, %n: i32) {
  %zero = arith.constant() {value = 0} : i32
  %one = arith.constant() {value = 1} : i32
  %init = arith.constant() {value = 0.0} : tensor<4xf32>
  %acc = scf.for(%zero, %n, %one, %init) : tensor<4xf32> ({
  ^(%i: i32, %a: tensor<4xf32>):
    %h = arith.constant() {value = 0.5} : f32
    %hs = tile.splat(%h) : tensor<4xf32>
    %next = arith.add(%a, %hs) : tensor<4xf32>
    scf.yield(%next)
  })
  %r = tile.arange() {end = 4, start = 0} : tensor<4xi32>
  %p = tile.splat(%out) : tensor<4xptr<f32>>
  %q = tile.addptr(%p, %r) : tensor<4xptr<f32>>
  %m = arith.constant() {value = true} : tensor<4xi1>
  tile.store(%q, %acc, %m) {cache = "", eviction = ""}
}""", """
func @k(%out: ptr<f32>, %n: i32) {
  %zero = arith.constant() {value = 0} : i32
  %one = arith.constant() {value = 1} : i32
  %init = arith.constant() {value = 0.0} : tensor<4xf32>
  %acc = scf.for(%zero, %n, %one, %init) : tensor<4xf32> ({
  ^(%i: i32, %a: tensor<4xf32>):
    %h = arith.constant() {value = 0.5} : f32
    %hs = arith.constant() {value = 0.5} : tensor<4xf32>
    %next = arith.add(%a, %hs) : tensor<4xf32>
    scf.yield(%next)
  })
  %r = tile.arange() {end = 4, start = 0} : tensor<4xi32>
  %p = tile.splat(%out) : tensor<4xptr<f32>>
  %q = tile.addptr(%p, %r) : tensor<4xptr<f32>>
  %m = arith.constant() {value = true} : tensor<4xi1>
  tile.store(%q, %acc, %m) {cache = "", eviction = ""}
}""")
