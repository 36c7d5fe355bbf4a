// RUN: affine-opt %s | filecheck %s

// Module and function attributes, private declarations, attribute dictionaries on ops
// (sorted by name, as MLIR sorts them), quoted symbol names.

// CHECK:      module @kernels attributes {gpu.container_module, test.list = [1 : i64, "two", @helper], test.name = "a\"b"} {
module @kernels attributes {test.name = "a\"b", gpu.container_module, test.list = [1 : i64, "two", @helper]} {
  // CHECK-NEXT: func.func private @helper(memref<4xf32>) -> f32 attributes {test.pure}
  func.func private @helper(memref<4xf32>) -> f32 attributes {test.pure}
  // CHECK-NEXT: func.func @"entry point"(%A: memref<4xf32>) -> f32 attributes {llvm.emit_c_interface} {
  func.func @"entry point"(%A: memref<4xf32>) -> f32 attributes {llvm.emit_c_interface} {
    // CHECK-NEXT: %c = arith.constant {test.tag = 3 : index} 2.000000e+00 : f32
    %c = arith.constant {test.tag = 3 : index} 2.0 : f32
    // CHECK-NEXT: %r = func.call @helper(%A) {test.a, test.b} : (memref<4xf32>) -> f32
    %r = func.call @helper(%A) {test.b, test.a} : (memref<4xf32>) -> f32
    // CHECK-NEXT: %s = arith.mulf %r, %c {test.fast = true} : f32
    %s = arith.mulf %r, %c {test.fast = true} : f32
    // CHECK-NEXT: return %s : f32
    return %s : f32
  }
}
