"""Kernels with matrix-unit and asynchronous-copy ops, shared by the interpreter and CUDA tests."""

from __future__ import annotations

BYTES = {"f16": 2, "bf16": 2, "f32": 4, "i8": 1}


def mma_tile_kernel(el: str, acc: str, k: int, b_trans: bool) -> str:
    """A one-warp kernel: D(16x8) = A(16xk) * B(kx8) + C through shared memory (async copies),
    ldmatrix and one mma.sync; B is given k x 8 (ldmatrix .trans) or transposed, 8 x k."""
    nb = BYTES[el]
    epc, epc8 = 16 // nb, 8 // nb
    bshape = f"{k}x8" if b_trans else f"8x{k}"
    ab = f"{bshape}x{el}"
    p = max(1, 4 // nb)
    afrag, bfrag = f"vector<{k // (2 * p)}x{p}x{el}>", f"vector<{k // (4 * p)}x{p}x{el}>"
    cfrag = f"vector<2x2x{acc}>"
    tf32 = " tf32Enabled" if el == "f32" else ""
    sig = f"({afrag}, {bfrag}, {cfrag}) -> {cfrag}"
    zero = "0" if acc == "i32" else "0.0"
    sa, sb = (f"memref<{shape}, #gpu.address_space<workgroup>>" for shape in (f"16x{k}x{el}", ab))
    bt = "true" if b_trans else "false"
    bcopy = ("affine_map<(d0) -> (d0 floordiv 2)>", f"affine_map<(d0) -> ((d0 mod 2) * {epc8})>") if b_trans else \
        ("affine_map<(d0) -> (d0 floordiv 4)>", f"affine_map<(d0) -> ((d0 mod 4) * {epc8})>")
    bld = ("affine_map<(d0) -> (d0 mod 16)>", "affine_map<(d0) -> (0)>") if b_trans else \
        ("affine_map<(d0) -> (d0 mod 8)>", f"affine_map<(d0) -> (((d0 floordiv 8) mod 2) * {epc})>")
    stores = []
    for r in range(2):
        for e in range(2):
            stores.append(f"""
      %c{r}{e} = memref.load %C[%g{r}, %t{e}] : memref<16x8x{acc}>
      %x{r}{e} = vector.extract %d[{r}, {e}] : {acc} from {cfrag}
      memref.store %x{r}{e}, %D[%g{r}, %t{e}] : memref<16x8x{acc}>""")
    loads = "".join(s.split("\n")[1] + "\n" for s in stores)
    inserts = ""
    prev = "%czero"
    for r in range(2):
        for e in range(2):
            inserts += f"      %ci{r}{e} = vector.insert %c{r}{e}, {prev} [{r}, {e}] : {acc} into {cfrag}\n"
            prev = f"%ci{r}{e}"
    stores_only = "".join("\n".join(s.split("\n")[2:]) + "\n" for s in stores)
    return f"""
func.func @tile(%A: memref<16x{k}x{el}>, %B: memref<{ab}>, %C: memref<16x8x{acc}>, %D: memref<16x8x{acc}>) {{
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {{
      %sA = memref.alloc() : {sa}
      %sB = memref.alloc() : {sb}
      %ar = affine.apply affine_map<(d0) -> (d0 floordiv 2)>(%tx)
      %ac = affine.apply affine_map<(d0) -> ((d0 mod 2) * {epc})>(%tx)
      %ta = nvgpu.device_async_copy %A[%ar, %ac], %sA[%ar, %ac], {epc} bypassL1 : memref<16x{k}x{el}> to {sa}
      %ga = nvgpu.device_async_create_group %ta
      %br = affine.apply {bcopy[0]}(%tx)
      %bc = affine.apply {bcopy[1]}(%tx)
      %tb = nvgpu.device_async_copy %B[%br, %bc], %sB[%br, %bc], {epc8} : memref<{ab}> to {sb}
      %gb = nvgpu.device_async_create_group %tb
      nvgpu.device_async_wait %ga numGroups = 1
      nvgpu.device_async_wait %gb numGroups = 0
      gpu.barrier
      %lr = affine.apply affine_map<(d0) -> (d0 mod 16)>(%tx)
      %lc = affine.apply affine_map<(d0) -> ((d0 floordiv 16) * {epc})>(%tx)
      %a = nvgpu.ldmatrix %sA[%lr, %lc] numTiles = 4 transpose = false : {sa} -> {afrag}
      %mr = affine.apply {bld[0]}(%tx)
      %mc = affine.apply {bld[1]}(%tx)
      %b = nvgpu.ldmatrix %sB[%mr, %mc] numTiles = 2 transpose = {bt} : {sb} -> {bfrag}
      %g0 = affine.apply affine_map<(d0) -> (d0 floordiv 4)>(%tx)
      %g1 = affine.apply affine_map<(d0) -> (d0 floordiv 4 + 8)>(%tx)
      %t0 = affine.apply affine_map<(d0) -> ((d0 mod 4) * 2)>(%tx)
      %t1 = affine.apply affine_map<(d0) -> ((d0 mod 4) * 2 + 1)>(%tx)
      %czero = arith.constant dense<{zero}> : {cfrag}
{loads}{inserts}      %d = nvgpu.mma.sync(%a, %b, %ci11) mmaShape = [16, 8, {k}]{tf32} : {sig}
{stores_only}      gpu.terminator
  }}
  return
}}
"""


def wmma_kernel(el: str, acc: str) -> str:
    """One warp: D = relu(A[16:32, 0:16] * B + Bias) (floats) or A * B + Bias, times Bias (i8 -> i32)
    with the whole-warp ``gpu.subgroup_mma_*`` ops; B is given transposed (8-bit: as is, 16 x 16)."""
    a_t, b_t, c_t = (f'!gpu.mma_matrix<16x16x{t}, "{u}">' for t, u in ((el, "AOp"), (el, "BOp"), (acc, "COp")))
    zero = "0" if acc == "i32" else "0.0"
    if acc == "i32":
        epilogue = f"""      %s = gpu.subgroup_mma_elementwise addi %c, %bias : ({c_t}, {c_t}) -> {c_t}
      %r = gpu.subgroup_mma_elementwise muli %s, %bias : ({c_t}, {c_t}) -> {c_t}"""
    else:
        epilogue = f"""      %s = gpu.subgroup_mma_elementwise addf %c, %bias : ({c_t}, {c_t}) -> {c_t}
      %r = gpu.subgroup_mma_elementwise maxf %s, %z : ({c_t}, {c_t}) -> {c_t}"""
    return f"""
func.func @wmma(%A: memref<32x16x{el}>, %B: memref<16x16x{el}>, %Bias: memref<16x16x{acc}>, %D: memref<16x16x{acc}>) {{
  %c1 = arith.constant 1 : index
  %c32 = arith.constant 32 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {{
      %c0 = arith.constant 0 : index
      %c16 = arith.constant 16 : index
      %zero = arith.constant {zero} : {acc}
      %a = gpu.subgroup_mma_load_matrix %A[%c16, %c0] leadDimension 16 : memref<32x16x{el}> -> {a_t}
      %b = gpu.subgroup_mma_load_matrix %B[%c0, %c0] leadDimension 16 transpose : memref<16x16x{el}> -> {b_t}
      %z = gpu.subgroup_mma_constant_matrix %zero : {c_t}
      %c = gpu.subgroup_mma_compute %a, %b, %z : {a_t}, {b_t} -> {c_t}
      %bias = gpu.subgroup_mma_load_matrix %Bias[%c0, %c0] leadDimension 16 : memref<16x16x{acc}> -> {c_t}
{epilogue}
      gpu.subgroup_mma_store_matrix %r, %D[%c0, %c0] leadDimension 16 : {c_t}, memref<16x16x{acc}>
      gpu.terminator
  }}
  return
}}
"""
