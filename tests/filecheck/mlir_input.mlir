// RUN: affine-opt %s | filecheck %s

// Text as mlir-opt prints it (%arg names, numbered values, #map aliases, %0:2 groups,
// 'call' without 'func.', hex floats) parses; numbered values are numbered again in
// order of definition, as mlir-opt numbers them.

#map = affine_map<(d0) -> (d0 * 2, 0)>
#map1 = affine_map<(d0)[s0] -> (d0 + 32, s0)>
#set = affine_set<(d0)[s0] : (d0 >= 0, -d0 + s0 - 1 >= 0)>
module {
  func.func private @ext(f32) -> f32
  // CHECK-LABEL: func.func @f(%arg0: memref<?x64xf32>, %arg1: index) -> f32 {
  func.func @f(%arg0: memref<?x64xf32>, %arg1: index) -> f32 {
    // CHECK-NEXT: %cst = arith.constant 0x7FC00000 : f32
    %cst = arith.constant 0x7FC00000 : f32
    // CHECK-NEXT: %0:2 = affine.for %arg2 = 0 to %arg1 iter_args(%arg3 = %cst, %arg4 = %cst) -> (f32, f32) {
    %0:2 = affine.for %arg2 = 0 to %arg1 iter_args(%arg3 = %cst, %arg4 = %cst) -> (f32, f32) {
      // CHECK-NEXT: affine.for %arg5 = max #map(%arg2) to min #map1(%arg2)[%arg1] {
      affine.for %arg5 = max #map(%arg2) to min #map1(%arg2)[%arg1] {
        // CHECK-NEXT: %1 = affine.if #set(%arg5)[%arg1] -> f32 {
        %4 = affine.if #set(%arg5)[%arg1] -> f32 {
          // CHECK-NEXT: %2 = affine.load %arg0[%arg2, %arg5 mod 64] : memref<?x64xf32>
          %5 = affine.load %arg0[%arg2, %arg5 mod 64] : memref<?x64xf32>
          affine.yield %5 : f32
        } else {
          affine.yield %cst : f32
        }
      }
      %3 = arith.addf %arg3, %arg4 : f32
      affine.yield %3, %arg4 : f32, f32
    }
    // CHECK: %4 = arith.addf %0#0, %0#1 : f32
    %1 = arith.addf %0#0, %0#1 : f32
    // CHECK-NEXT: %5 = func.call @ext(%4) : (f32) -> f32
    %2 = call @ext(%1) : (f32) -> f32
    return %2 : f32
  }
}
