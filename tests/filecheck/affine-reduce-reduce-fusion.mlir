// RUN: affine-opt %s -split-input-file -affine-reduce-reduce-fusion -explain 2>&1 | filecheck %s
// RUN: affine-opt %s -split-input-file -affine-reduce-reduce-fusion | affine-opt -split-input-file | filecheck %s --check-prefix=ROUNDTRIP

// Reduce-reduce fusion (online softmax): the max loop and the later sum of exp(x - max) become one loop,
// the sum multiplied by exp(m_old - m_new) whenever the max changes (the max's -inf identity taken as 0).
// Upstream MLIR has no such pass (its affine-loop-fusion refuses the pair: the sum reads the max's final
// value). tests/test_fuse_reductions.py runs these shapes against the unfused on the interpreter.

// CHECK: remark: affine-reduce-reduce-fusion: applied: fused the maximumf of %M in %j and the sums %S (rescaled by exp(-m)) of %k that read it: one pass, the sums rebased when the maximumf changes
// CHECK-LABEL: func.func @online_softmax_statistics
// CHECK:         affine.store %ninf, %M[0]
// CHECK-NEXT:    affine.store %zero, %S[0]
// CHECK-NEXT:    affine.for %j = 0 to 8 {
// CHECK:           %r = arith.maximumf %acc, %a : f32
// CHECK-NEXT:      affine.store %r, %M[0]
// CHECK:           %[[OLD:.*]] = arith.select %{{.*}}, %{{.*}}, %acc : f32
// CHECK:           %[[NEW:.*]] = arith.select %{{.*}}, %{{.*}}, %r : f32
// CHECK-NEXT:      %[[D:.*]] = arith.subf %[[OLD]], %[[NEW]] : f32
// CHECK-NEXT:      %[[RATIO:.*]] = math.exp %[[D]] : f32
// CHECK:           %u = arith.subf %x, %[[NEW]] : f32
// CHECK-NEXT:      %e = math.exp %u : f32
// CHECK-NEXT:      %s = affine.load %S[0]
// CHECK:           %[[SCALED:.*]] = arith.mulf %s, %[[RATIO]] : f32
// CHECK-NEXT:      %[[KEPT:.*]] = arith.select %{{.*}}, %s, %[[SCALED]] : f32
// CHECK-NEXT:      %s1 = arith.addf %[[KEPT]], %e : f32
// CHECK-NEXT:      affine.store %s1, %S[0]
// CHECK-NEXT:    }
// CHECK-NOT:     affine.for
// ROUNDTRIP-LABEL: func.func @online_softmax_statistics
// ROUNDTRIP-COUNT-1: affine.for
func.func @online_softmax_statistics(%X: memref<8xf32>, %M: memref<1xf32>, %S: memref<1xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  affine.store %ninf, %M[0] : memref<1xf32>
  affine.for %j = 0 to 8 {
    %a = affine.load %X[%j] : memref<8xf32>
    %acc = affine.load %M[0] : memref<1xf32>
    %r = arith.maximumf %acc, %a : f32
    affine.store %r, %M[0] : memref<1xf32>
  }
  affine.store %zero, %S[0] : memref<1xf32>
  affine.for %k = 0 to 8 {
    %x = affine.load %X[%k] : memref<8xf32>
    %m = affine.load %M[0] : memref<1xf32>
    %u = arith.subf %x, %m : f32
    %e = math.exp %u : f32
    %s = affine.load %S[0] : memref<1xf32>
    %s1 = arith.addf %s, %e : f32
    affine.store %s1, %S[0] : memref<1xf32>
  }
  return
}

// -----

// A term that is not a product of exponentials of the max (a log) cannot be rebased: refused, the loops
// as they were.
// CHECK: remark: affine-reduce-reduce-fusion: refused: cannot fuse the reductions of %j and %k: the sum into %S: 'math.log' of the producer's value is not a product of exponentials of it
// CHECK-LABEL: func.func @log_terms
// CHECK-COUNT-2: affine.for
func.func @log_terms(%X: memref<8xf32>, %M: memref<1xf32>, %S: memref<1xf32>) {
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  affine.store %ninf, %M[0] : memref<1xf32>
  affine.for %j = 0 to 8 {
    %a = affine.load %X[%j] : memref<8xf32>
    %acc = affine.load %M[0] : memref<1xf32>
    %r = arith.maximumf %acc, %a : f32
    affine.store %r, %M[0] : memref<1xf32>
  }
  affine.store %zero, %S[0] : memref<1xf32>
  affine.for %k = 0 to 8 {
    %x = affine.load %X[%k] : memref<8xf32>
    %m = affine.load %M[0] : memref<1xf32>
    %u = arith.subf %x, %m : f32
    %e = math.log %u : f32
    %s = affine.load %S[0] : memref<1xf32>
    %s1 = arith.addf %s, %e : f32
    affine.store %s1, %S[0] : memref<1xf32>
  }
  return
}

// -----

// Layer norm's statistics: the mean's sum (divided by the trip count between the loops) and the sum of
// squared deviations fuse by Welford's update; the mean's division moves after the loop.
// CHECK: remark: affine-reduce-reduce-fusion: applied: fused the sum of %S in %j (a mean) and the sums of squared deviations %V of %k (Welford's update): one pass, the squares taken against the running mean
// CHECK-LABEL: func.func @variance
// CHECK:         affine.for %j = 0 to 16 {
// CHECK:           %[[N:.*]] = arith.sitofp %{{.*}} : i64 to f32
// CHECK:           %[[AOLD:.*]] = arith.divf %s, %{{.*}} : f32
// CHECK:           %[[ANEW:.*]] = arith.divf %s1, %{{.*}} : f32
// CHECK:           %[[DOLD:.*]] = arith.subf %x, %[[AOLD]] : f32
// CHECK-NEXT:      %[[DNEW:.*]] = arith.subf %x, %[[ANEW]] : f32
// CHECK-NEXT:      %[[W:.*]] = arith.mulf %[[DOLD]], %[[DNEW]] : f32
// CHECK-NEXT:      %v1 = arith.addf %v, %[[W]] : f32
// CHECK:         }
// CHECK-NEXT:    %t = affine.load %S[0]
// CHECK-NEXT:    %mean = arith.divf %t, %N : f32
// CHECK-NEXT:    affine.store %mean, %S[0]
func.func @variance(%X: memref<16xf32>, %S: memref<1xf32>, %V: memref<1xf32>) {
  %N = arith.constant 16.0 : f32
  %zero = arith.constant 0.0 : f32
  affine.store %zero, %S[0] : memref<1xf32>
  affine.for %j = 0 to 16 {
    %e = affine.load %X[%j] : memref<16xf32>
    %s = affine.load %S[0] : memref<1xf32>
    %s1 = arith.addf %s, %e : f32
    affine.store %s1, %S[0] : memref<1xf32>
  }
  %t = affine.load %S[0] : memref<1xf32>
  %mean = arith.divf %t, %N : f32
  affine.store %mean, %S[0] : memref<1xf32>
  affine.store %zero, %V[0] : memref<1xf32>
  affine.for %k = 0 to 16 {
    %x = affine.load %X[%k] : memref<16xf32>
    %a = affine.load %S[0] : memref<1xf32>
    %u = arith.subf %x, %a : f32
    %sq = arith.mulf %u, %u : f32
    %v = affine.load %V[0] : memref<1xf32>
    %v1 = arith.addf %v, %sq : f32
    affine.store %v1, %V[0] : memref<1xf32>
  }
  return
}
