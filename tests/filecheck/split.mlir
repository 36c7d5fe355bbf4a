// RUN: affine-opt %s -split-input-file | filecheck %s

// Each '// -----' chunk is a module of its own; outputs are joined by '// -----'.
// Names are per chunk: both @first and @second get a plain %i.

// CHECK-LABEL: func.func @first
// CHECK: affine.for %i = 0 to 8 {
func.func @first(%A: memref<8xf32>) {
  affine.for %i = 0 to 8 {
  }
  return
}

// -----

// CHECK:       // -----
// CHECK-NEXT:  #map = affine_map<(d0) -> (d0 + 1)>
// CHECK-NEXT:  module {
// CHECK-LABEL: func.func @second
// CHECK:       affine.for %i = 0 to 8 {
// CHECK-NEXT:  affine.for %j = #map(%i) to 9 {
func.func @second() {
  affine.for %i = 0 to 8 {
    affine.for %j = affine_map<(d0) -> (d0 + 1)>(%i) to 9 {
    }
  }
  return
}

// -----

// CHECK: // -----
// CHECK-NEXT: module {
// CHECK-NEXT: }
