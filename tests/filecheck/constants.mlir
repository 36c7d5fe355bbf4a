// RUN: affine-opt %s | filecheck %s

// Unnamed constants are named as MLIR names them: %c<value> for index, %c<value>_<type>
// for integers, %true/%false, %cst for floats and vectors (made unique with _0, _1...).
// Floats print in %e form, or as hex bit patterns for inf and nan.

// CHECK-LABEL: func.func @constants() {
func.func @constants() {
  // CHECK-NEXT: %c0 = arith.constant 0 : index
  %0 = arith.constant 0 : index
  // CHECK-NEXT: %c_1 = arith.constant -1 : index
  %1 = arith.constant -1 : index
  // CHECK-NEXT: %c42_i32 = arith.constant 42 : i32
  %2 = arith.constant 42 : i32
  // CHECK-NEXT: %c_1_i8 = arith.constant -1 : i8
  %3 = arith.constant 255 : i8
  // CHECK-NEXT: %true = arith.constant true
  %4 = arith.constant true
  // CHECK-NEXT: %false = arith.constant false
  %5 = arith.constant 0 : i1
  // CHECK-NEXT: %cst = arith.constant 1.500000e+00 : f32
  %6 = arith.constant 1.5 : f32
  // CHECK-NEXT: %cst_0 = arith.constant 1.000000e-01 : f64
  %7 = arith.constant 0.1 : f64
  // CHECK-NEXT: %cst_1 = arith.constant 9.997559e-02 : f16
  %8 = arith.constant 0.1 : f16
  // CHECK-NEXT: %cst_2 = arith.constant 0x7F800000 : f32
  %9 = arith.constant 0x7F800000 : f32
  // CHECK-NEXT: %cst_3 = arith.constant 0x7FC00000 : f32
  %10 = arith.constant 0x7FC00000 : f32
  // CHECK-NEXT: %cst_4 = arith.constant 0xFF80 : bf16
  %11 = arith.constant 0xFF80 : bf16
  // CHECK-NEXT: %cst_5 = arith.constant dense<0.000000e+00> : vector<8xf32>
  %12 = arith.constant dense<0.0> : vector<8xf32>
  // CHECK-NEXT: %cst_6 = arith.constant dense<[1, 2, 3, 4]> : vector<4xi32>
  %13 = arith.constant dense<[1, 2, 3, 4]> : vector<4xi32>
  // CHECK-NEXT: %c0_0 = arith.constant 0 : index
  %14 = arith.constant 0 : index
  // Names given in the input are kept.
  // CHECK-NEXT: %zero = arith.constant 0 : index
  %zero = arith.constant 0 : index
  return
}
