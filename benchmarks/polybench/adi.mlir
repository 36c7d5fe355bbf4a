// PolyBench/C 4.2 adi: alternating-direction implicit solver of a 2-D heat equation, TSTEPS steps of a
// column sweep then a row sweep (each a tridiagonal solve: forward elimination into p, q, then back
// substitution). u, v, p, q: N x N. PolyBench's c = a and f = d are written as a and d.
#rev = affine_map<(d0)[s0] -> (s0 - d0 - 2)>
func.func @adi(%tsteps: index, %n: index, %u: memref<?x?xf32>, %v: memref<?x?xf32>, %p: memref<?x?xf32>,
               %q: memref<?x?xf32>) {
  %zero = arith.constant 0.000000e+00 : f32
  %one = arith.constant 1.000000e+00 : f32
  %two = arith.constant 2.000000e+00 : f32
  %n_i = arith.index_cast %n : index to i32
  %n_f = arith.sitofp %n_i : i32 to f32
  %t_i = arith.index_cast %tsteps : index to i32
  %t_f = arith.sitofp %t_i : i32 to f32
  %DX = arith.divf %one, %n_f : f32
  %DY = arith.divf %one, %n_f : f32
  %DT = arith.divf %one, %t_f : f32
  %B1 = arith.constant 2.000000e+00 : f32
  %B2 = arith.constant 1.000000e+00 : f32
  %b1dt = arith.mulf %B1, %DT : f32
  %dx2 = arith.mulf %DX, %DX : f32
  %mul1 = arith.divf %b1dt, %dx2 : f32
  %b2dt = arith.mulf %B2, %DT : f32
  %dy2 = arith.mulf %DY, %DY : f32
  %mul2 = arith.divf %b2dt, %dy2 : f32
  %nmul1 = arith.negf %mul1 : f32
  %a = arith.divf %nmul1, %two : f32
  %b = arith.addf %one, %mul1 : f32
  %nmul2 = arith.negf %mul2 : f32
  %d = arith.divf %nmul2, %two : f32
  %e = arith.addf %one, %mul2 : f32
  affine.for %t = 1 to affine_map<()[s0] -> (s0 + 1)>()[%tsteps] {
    // Column sweep.
    affine.for %i = 1 to affine_map<()[s0] -> (s0 - 1)>()[%n] {
      affine.store %one, %v[0, %i] : memref<?x?xf32>
      affine.store %zero, %p[%i, 0] : memref<?x?xf32>
      %v0 = affine.load %v[0, %i] : memref<?x?xf32>
      affine.store %v0, %q[%i, 0] : memref<?x?xf32>
      affine.for %j = 1 to affine_map<()[s0] -> (s0 - 1)>()[%n] {
        %nc = arith.negf %a : f32  // -c, c = a
        %pp = affine.load %p[%i, %j - 1] : memref<?x?xf32>
        %ap = arith.mulf %a, %pp : f32
        %den = arith.addf %ap, %b : f32
        %pn = arith.divf %nc, %den : f32
        affine.store %pn, %p[%i, %j] : memref<?x?xf32>
        %nd = arith.negf %d : f32
        %u0 = affine.load %u[%j, %i - 1] : memref<?x?xf32>
        %x0 = arith.mulf %nd, %u0 : f32
        %d2 = arith.mulf %two, %d : f32
        %cd = arith.addf %one, %d2 : f32
        %u1 = affine.load %u[%j, %i] : memref<?x?xf32>
        %x1 = arith.mulf %cd, %u1 : f32
        %s1 = arith.addf %x0, %x1 : f32
        %u2 = affine.load %u[%j, %i + 1] : memref<?x?xf32>
        %x2 = arith.mulf %d, %u2 : f32  // f = d
        %s2 = arith.subf %s1, %x2 : f32
        %qp = affine.load %q[%i, %j - 1] : memref<?x?xf32>
        %x3 = arith.mulf %a, %qp : f32
        %s3 = arith.subf %s2, %x3 : f32
        %pp2 = affine.load %p[%i, %j - 1] : memref<?x?xf32>
        %ap2 = arith.mulf %a, %pp2 : f32
        %den2 = arith.addf %ap2, %b : f32
        %qn = arith.divf %s3, %den2 : f32
        affine.store %qn, %q[%i, %j] : memref<?x?xf32>
      }
      affine.store %one, %v[symbol(%n) - 1, %i] : memref<?x?xf32>
      affine.for %jj = 0 to affine_map<()[s0] -> (s0 - 2)>()[%n] {
        // j = n - 2 - jj: from n - 2 down to 1.
        %j = affine.apply #rev(%jj)[%n]
        %pj = affine.load %p[%i, %j] : memref<?x?xf32>
        %vn = affine.load %v[%j + 1, %i] : memref<?x?xf32>
        %pv = arith.mulf %pj, %vn : f32
        %qj = affine.load %q[%i, %j] : memref<?x?xf32>
        %vj = arith.addf %pv, %qj : f32
        affine.store %vj, %v[%j, %i] : memref<?x?xf32>
      }
    }
    // Row sweep.
    affine.for %i = 1 to affine_map<()[s0] -> (s0 - 1)>()[%n] {
      affine.store %one, %u[%i, 0] : memref<?x?xf32>
      affine.store %zero, %p[%i, 0] : memref<?x?xf32>
      %u0 = affine.load %u[%i, 0] : memref<?x?xf32>
      affine.store %u0, %q[%i, 0] : memref<?x?xf32>
      affine.for %j = 1 to affine_map<()[s0] -> (s0 - 1)>()[%n] {
        %nf = arith.negf %d : f32  // -f, f = d
        %pp = affine.load %p[%i, %j - 1] : memref<?x?xf32>
        %dp = arith.mulf %d, %pp : f32
        %den = arith.addf %dp, %e : f32
        %pn = arith.divf %nf, %den : f32
        affine.store %pn, %p[%i, %j] : memref<?x?xf32>
        %na = arith.negf %a : f32
        %v0 = affine.load %v[%i - 1, %j] : memref<?x?xf32>
        %x0 = arith.mulf %na, %v0 : f32
        %a2 = arith.mulf %two, %a : f32
        %ca = arith.addf %one, %a2 : f32
        %v1 = affine.load %v[%i, %j] : memref<?x?xf32>
        %x1 = arith.mulf %ca, %v1 : f32
        %s1 = arith.addf %x0, %x1 : f32
        %v2 = affine.load %v[%i + 1, %j] : memref<?x?xf32>
        %x2 = arith.mulf %a, %v2 : f32  // c = a
        %s2 = arith.subf %s1, %x2 : f32
        %qp = affine.load %q[%i, %j - 1] : memref<?x?xf32>
        %x3 = arith.mulf %d, %qp : f32
        %s3 = arith.subf %s2, %x3 : f32
        %pp2 = affine.load %p[%i, %j - 1] : memref<?x?xf32>
        %dp2 = arith.mulf %d, %pp2 : f32
        %den2 = arith.addf %dp2, %e : f32
        %qn = arith.divf %s3, %den2 : f32
        affine.store %qn, %q[%i, %j] : memref<?x?xf32>
      }
      affine.store %one, %u[%i, symbol(%n) - 1] : memref<?x?xf32>
      affine.for %jj = 0 to affine_map<()[s0] -> (s0 - 2)>()[%n] {
        // j = n - 2 - jj: from n - 2 down to 1.
        %j = affine.apply #rev(%jj)[%n]
        %pj = affine.load %p[%i, %j] : memref<?x?xf32>
        %un = affine.load %u[%i, %j + 1] : memref<?x?xf32>
        %pu = arith.mulf %pj, %un : f32
        %qj = affine.load %q[%i, %j] : memref<?x?xf32>
        %uj = arith.addf %pu, %qj : f32
        affine.store %uj, %u[%i, %j] : memref<?x?xf32>
      }
    }
  }
  return
}
