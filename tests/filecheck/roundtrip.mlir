// RUN: %roundtrip | filecheck %s
// RUN: affine-opt %s > %t.once && affine-opt %t.once > %t.twice && diff %t.once %t.twice

// Printing is a fixpoint: the printed text parses back and prints the same.

// CHECK:      #map = affine_map<(d0)[s0] -> (d0 * 4, s0)>
// CHECK:      #set = affine_set<(d0) : (d0 mod 2 == 0)>
// CHECK-LABEL: func.func @rt(%A: memref<?x8xf32>, %n: index) -> f32 attributes {llvm.emit_c_interface} {
// CHECK:        %r:2 = affine.for %i = 0 to %n iter_args(%a = %cst, %b = %cst) -> (f32, f32) {
// CHECK:          affine.for %j = max #map(%i)[%n] to 8 {
// CHECK:            affine.if #set(%j) {
// CHECK:              %x = affine.load %A[%i, %j] {nontemporal} : memref<?x8xf32>
// CHECK:        } {unroll = 2 : i64}
// CHECK:        %e = math.exp %r#1 : f32
// CHECK:        %c = func.call @g(%e) : (f32) -> f32
// CHECK:      func.func private @g(f32) -> f32
func.func @rt(%A: memref<?x8xf32>, %n: index) -> f32 attributes {llvm.emit_c_interface} {
  %cst = arith.constant 0.0 : f32
  %r:2 = affine.for %i = 0 to %n iter_args(%a = %cst, %b = %cst) -> (f32, f32) {
    affine.for %j = max affine_map<(d0)[s0] -> (d0 * 4, s0)>(%i)[%n] to 8 {
      affine.if affine_set<(d0) : (d0 mod 2 == 0)>(%j) {
        %x = affine.load %A[%i, %j] {nontemporal} : memref<?x8xf32>
      }
    }
    %s = arith.addf %a, %b : f32
    affine.yield %s, %b : f32, f32
  } {unroll = 2 : i64}
  %e = math.exp %r#1 : f32
  %c = func.call @g(%e) : (f32) -> f32
  return %c : f32
}
func.func private @g(f32) -> f32
