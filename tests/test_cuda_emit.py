"""``codegen.cuda.emit``: golden checks of the printed CUDA C for small mapped kernels, NVRTC
compiles every test kernel for sm_90 without a single warning (every arith/math op on every
type, fast-math variants, >= 100 random programs moved into a 1x1x1 ``gpu.launch``), clear
errors for unmapped or unsupported input, and -- on a GPU (``-m gpu``) -- the kernels' results
against the interpreter."""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings

import affine_ir as air
from affine_ir.dialects import arith as arith_d
from affine_ir.dialects.gpu import LaunchOp, TerminatorOp
from affine_ir.testing import programs_with_inputs
from affine_ir.types import index
from codegen.cuda import (
    CudaProgram,
    EmitError,
    HostRole,
    KernelParam,
    KernelSpec,
    emit,
    host_if_branch,
    host_loop_range,
    host_role,
)

nvrtc = pytest.importorskip("cuda.bindings.nvrtc")


# ----------------------------------------------------------------------------------------------
# NVRTC (a local helper until runtime.nvrtc exists): compile for sm_90, fail on any log output
# ----------------------------------------------------------------------------------------------


def _include_dir() -> str:
    import cuda.pathfinder

    return cuda.pathfinder.find_nvidia_header_directory("cudart")


def nvrtc_compile(source: str, arch: str = "sm_90") -> tuple[bytes, str]:
    """(cubin, log) of ``source``; AssertionError with the log and the numbered source on failure."""
    opts = [f"-arch={arch}", f"-I{_include_dir()}", "-std=c++17", "-default-device"]
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), b"kernel.cu", 0, [], [])
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS, err
    try:
        (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
        _, n = nvrtc.nvrtcGetProgramLogSize(prog)
        buf = b" " * n
        nvrtc.nvrtcGetProgramLog(prog, buf)
        log = buf.decode(errors="replace").rstrip("\x00").strip()
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise AssertionError(f"NVRTC failed:\n{log}\n{numbered(source)}")
        _, size = nvrtc.nvrtcGetCUBINSize(prog)
        cubin = b" " * size
        nvrtc.nvrtcGetCUBIN(prog, cubin)
        return cubin, log
    finally:
        nvrtc.nvrtcDestroyProgram(prog)


def numbered(source: str) -> str:
    return "\n".join(f"{k + 1:4} | {line}" for k, line in enumerate(source.splitlines()))


def assert_clean_compile(program: CudaProgram | str) -> bytes:
    source = program if isinstance(program, str) else program.source
    cubin, log = nvrtc_compile(source)
    assert log == "", f"NVRTC warnings:\n{log}\n{numbered(source)}"
    return cubin


def body_lines(program: CudaProgram, kernel: int = 0) -> list[str]:
    """The stripped lines of kernel ``kernel``'s body (between its signature and closing brace)."""
    name = program.kernels[kernel].name
    lines = program.source.splitlines()
    start = next(k for k, ln in enumerate(lines) if f" {name}(" in ln)
    while not lines[start].endswith("{"):
        start += 1
    end = lines.index("}", start)
    return [ln.strip() for ln in lines[start + 1:end]]


def signature(program: CudaProgram, kernel: int = 0) -> str:
    """The kernel's signature on one line."""
    name = program.kernels[kernel].name
    text = program.source
    start = text.index('extern "C" __global__', text.index("// @"))
    for _ in range(kernel):
        start = text.index('extern "C" __global__', start + 1)
    sig = re.sub(r"\(\s+", "(", text[start:text.index("{", start)])
    assert f" {name}(" in sig
    return re.sub(r"\s+", " ", sig).strip()


# ----------------------------------------------------------------------------------------------
# Golden checks of small kernels
# ----------------------------------------------------------------------------------------------

ELEMENTWISE = """
func.func @f(%A: memref<64x?xf32>, %B: memref<64x?xf32>, %N: index) {
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c256 = arith.constant 256 : index
  %gx = affine.apply affine_map<()[s0] -> (s0 ceildiv 256)>()[%N]
  %t = memref.alloc(%N) : memref<64x?xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%sgx = %gx, %sgy = %c64, %sgz = %c1)
             threads(%tx, %ty, %tz) in (%sbx = %c256, %sby = %c1, %sbz = %c1) {
    %j = affine.apply affine_map<(d0, d1) -> (d0 * 256 + d1)>(%bx, %tx)
    affine.if affine_set<(d0)[s0] : (s0 - d0 - 1 >= 0)>(%j)[%N] {
      %v = affine.load %A[%by, %j] : memref<64x?xf32>
      %two = arith.constant 2.0 : f32
      %w = arith.mulf %v, %two : f32
      affine.store %w, %t[%by, %j] : memref<64x?xf32>
      %e = math.exp %w : f32
      affine.store %e, %B[%by, %j] : memref<64x?xf32>
    }
    gpu.terminator
  }
  memref.dealloc %t : memref<64x?xf32>
  return
}
"""


def test_elementwise_kernel_text_and_spec():
    m = air.parse(ELEMENTWISE)
    p = emit(m)
    assert isinstance(p, CudaProgram) and p.functions == [m.functions[0]]
    (k,) = p.kernels
    assert isinstance(k, KernelSpec) and k.name == "f_kernel0" and k.block == (256, 1, 1)
    assert k.launch is next(op for op in m.functions[0].body.ops if op.name == "gpu.launch")
    assert (k.static_shared_bytes, k.dynamic_shared_bytes) == (0, 0)
    f = m.functions[0]
    t = next(op.results[0] for op in f.body.ops if op.name == "memref.alloc")
    A, B, N = f.args
    assert [(q.value, q.kind, q.ctype, q.dim, q.name) for q in k.params] == [
        (A, "ptr", "const float*", None, "A"), (A, "dim", "long long", 1, "A_dim1"),
        (B, "ptr", "float*", None, "B"), (B, "dim", "long long", 1, "B_dim1"),
        (N, "scalar", "long long", None, "N"),
        (t, "ptr", "float*", None, "t"), (t, "dim", "long long", 1, "t_dim1")]
    assert all(isinstance(q, KernelParam) for q in k.params)
    assert signature(p) == ('extern "C" __global__ void __launch_bounds__(256) f_kernel0(const float* __restrict__ A, '
                            'long long A_dim1, float* __restrict__ B, long long B_dim1, long long N, '
                            'float* __restrict__ t, long long t_dim1)')
    assert body_lines(p) == [
        "long long bx = blockIdx.x;",
        "long long by = blockIdx.y;",
        "long long tx = threadIdx.x;",
        "long long j = bx * 256 + tx;",
        "if (j < N) {",
        "float v = A[by * A_dim1 + j];",
        "float w = __fmul_rn(v, 2.0f);",
        "t[by * t_dim1 + j] = w;",
        "float e = (float)exp((double)w);",
        "B[by * B_dim1 + j] = e;",
        "}",
    ]
    assert "#include" not in p.source  # no 16-bit floats, no headers
    assert str(p) == p.source
    assert p.kernel_for(k.launch) is k
    assert_clean_compile(p)


def test_fast_math_and_contract():
    m = air.parse(ELEMENTWISE)
    fast = body_lines(emit(m, fast_math=True))
    assert "float w = v * 2.0f;" in fast and "float e = expf(w);" in fast
    contracted = body_lines(emit(m, contract=True))
    assert "float w = v * 2.0f;" in contracted and "float e = (float)exp((double)w);" in contracted
    assert_clean_compile(emit(m, fast_math=True))


MATMUL = """
func.func @matmul(%A: memref<64x32xf32>, %B: memref<32x48xf32>, %C: memref<64x48xf32>) {
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %c4 = arith.constant 4 : index
  %c16 = arith.constant 16 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c3, %gy = %c4, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c16, %sy = %c16, %sz = %c1) {
    %i = affine.apply affine_map<(d0, d1) -> (d0 * 16 + d1)>(%by, %ty)
    %j = affine.apply affine_map<(d0, d1) -> (d0 * 16 + d1)>(%bx, %tx)
    %zero = arith.constant 0.0 : f32
    %acc = affine.for %k = 0 to 32 iter_args(%s = %zero) -> (f32) {
      %a = affine.load %A[%i, %k] : memref<64x32xf32>
      %b = affine.load %B[%k, %j] : memref<32x48xf32>
      %p = arith.mulf %a, %b : f32
      %s2 = arith.addf %s, %p : f32
      affine.yield %s2 : f32
    }
    affine.store %acc, %C[%i, %j] : memref<64x48xf32>
    gpu.terminator
  }
  return
}
"""


def test_matmul_kernel_with_sequential_k_loop():
    p = emit(air.parse(MATMUL))
    assert p.kernels[0].block == (16, 16, 1)
    assert signature(p) == ('extern "C" __global__ void __launch_bounds__(256) matmul_kernel0('
                            'const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C)')
    assert body_lines(p) == [
        "long long bx = blockIdx.x;",
        "long long by = blockIdx.y;",
        "long long tx = threadIdx.x;",
        "long long ty = threadIdx.y;",
        "long long i = by * 16 + ty;",
        "long long j = bx * 16 + tx;",
        "float s = 0.0f;",
        "for (long long k = 0; k < 32; ++k) {",
        "float a = A[i * 32 + k];",
        "float b = B[k * 48 + j];",
        "float p = __fmul_rn(a, b);",
        "float s2 = s + p;",
        "s = s2;",
        "}",
        "float acc = s;",
        "C[i * 48 + j] = acc;",
    ]
    assert_clean_compile(p)


REDUCTION = """
func.func @rowsum(%X: memref<?x256xf32>, %Y: memref<?xf32>, %M: index) {
  %c1 = arith.constant 1 : index
  %c256 = arith.constant 256 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %M, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c256, %sy = %c1, %sz = %c1) {
    %buf = memref.alloc() : memref<256xf32, #gpu.address_space<workgroup>>
    %v = affine.load %X[%bx, %tx] : memref<?x256xf32>
    affine.store %v, %buf[%tx] : memref<256xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    affine.if affine_set<(d0) : (-d0 + 127 >= 0)>(%tx) {
      %lo = affine.load %buf[%tx] : memref<256xf32, #gpu.address_space<workgroup>>
      %hi = affine.load %buf[%tx + 128] : memref<256xf32, #gpu.address_space<workgroup>>
      %sum = arith.addf %lo, %hi : f32
      affine.store %sum, %buf[%tx] : memref<256xf32, #gpu.address_space<workgroup>>
    }
    gpu.barrier
    affine.if affine_set<(d0) : (d0 == 0)>(%tx) {
      %first = affine.load %buf[0] : memref<256xf32, #gpu.address_space<workgroup>>
      %r = affine.for %k = 1 to 128 iter_args(%a = %first) -> (f32) {
        %x = affine.load %buf[%k] : memref<256xf32, #gpu.address_space<workgroup>>
        %a2 = arith.addf %a, %x : f32
        affine.yield %a2 : f32
      }
      affine.store %r, %Y[%bx] : memref<?xf32>
    }
    gpu.terminator
  }
  return
}
"""


def test_reduction_with_shared_memory_and_barriers():
    p = emit(air.parse(REDUCTION))
    (k,) = p.kernels
    assert (k.static_shared_bytes, k.dynamic_shared_bytes) == (1024, 0)
    assert [q.name for q in k.params] == ["X", "X_dim0", "Y", "Y_dim0"]  # %M only sizes the grid
    assert body_lines(p) == [
        "__shared__ __align__(16) float buf[256];",
        "long long bx = blockIdx.x;",
        "long long tx = threadIdx.x;",
        "float v = X[bx * 256 + tx];",
        "buf[tx] = v;",
        "__syncthreads();",
        "if (tx < 128) {",
        "float lo = buf[tx];",
        "float hi = buf[tx + 128];",
        "float sum = lo + hi;",
        "buf[tx] = sum;",
        "}",
        "__syncthreads();",
        "if (tx == 0) {",
        "float first = buf[0];",
        "float a = first;",
        "for (long long k = 1; k < 128; ++k) {",
        "float x = buf[k];",
        "float a2 = a + x;",
        "a = a2;",
        "}",
        "float r = a;",
        "Y[bx] = r;",
        "}",
    ]
    assert_clean_compile(p)


FEATURES = """
func.func @features(%X: memref<?x?xf16>, %Y: memref<?xbf16>, %Z: memref<?xf32>, %I: memref<?xi32>, %n: index) {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %g = affine.apply affine_map<()[s0] -> (s0 ceildiv 64)>()[%n]
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %g, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
    %t = gpu.thread_id x
    %b = gpu.block_id x
    %d = gpu.block_dim x
    %gd = gpu.grid_dim x
    %i = affine.apply affine_map<(d0, d1) -> (d0 * 64 + d1)>(%b, %t)
    %dd = arith.muli %d, %gd : index
    %ddi = arith.index_cast %dd : index to i32
    %in = affine.min affine_map<(d0)[s0] -> (d0, s0 - 1)>(%i)[%n]
    %c0 = arith.constant 0 : index
    %cols = memref.dim %X, %c1 : memref<?x?xf16>
    %tmp = memref.alloca() : memref<4xf32>
    %zero = arith.constant 0.0 : f32
    %one = arith.constant 1.0 : f32
    %r:2 = affine.for %k = 0 to min affine_map<(d0)[s0] -> (4, s0 - d0)>(%in)[%cols] step 2
        iter_args(%a = %zero, %bb = %one) -> (f32, f32) {
      %h = memref.load %X[%in, %k] : memref<?x?xf16>
      %hf = arith.extf %h : f16 to f32
      affine.store %hf, %tmp[%k] : memref<4xf32>
      %s = arith.addf %bb, %hf : f32
      affine.yield %s, %a : f32, f32
    }
    %p = affine.if affine_set<(d0)[s0] : (s0 - d0 - 1 >= 0, d0 mod 2 == 0)>(%i)[%n] -> f32 {
      %q = affine.load %tmp[0] : memref<4xf32>
      %m = arith.maximumf %r#0, %q : f32
      affine.yield %m : f32
    } else {
      affine.yield %r#1 : f32
    }
    affine.if affine_set<(d0)[s0] : (s0 - d0 - 1 >= 0)>(%i)[%n] {
      %bf = arith.truncf %p : f32 to bf16
      %x2 = arith.mulf %bf, %bf : bf16
      affine.store %x2, %Y[%i] : memref<?xbf16>
      %int = arith.fptosi %p : f32 to i32
      %sum = arith.addi %int, %ddi : i32
      affine.store %sum, %I[%i] : memref<?xi32>
    }
    gpu.terminator
  }
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c2, %sz = %c1) {
    %big = memref.alloc() : memref<64x128xf32, #gpu.address_space<workgroup>>
    %big2 = memref.alloc() : memref<128x64xf32, #gpu.address_space<workgroup>>
    %unused = memref.alloc() : memref<8xf32, #gpu.address_space<workgroup>>
    %v = affine.load %Z[%tx] : memref<?xf32>
    affine.store %v, %big[%tx, %ty] : memref<64x128xf32, #gpu.address_space<workgroup>>
    affine.store %v, %big2[%ty, %tx] : memref<128x64xf32, #gpu.address_space<workgroup>>
    gpu.barrier
    %w = affine.load %big[63 - %tx, %ty] : memref<64x128xf32, #gpu.address_space<workgroup>>
    %w2 = affine.load %big2[%ty, 63 - %tx] : memref<128x64xf32, #gpu.address_space<workgroup>>
    %s = arith.addf %w, %w2 : f32
    affine.store %s, %Z[%tx + %ty * 64] : memref<?xf32>
    gpu.terminator
  }
  return
}
"""


def test_features_kernels_text():
    """Two launches of one function; gpu id ops, affine.min, memref.dim, memref.load with index
    values, a thread-private alloca, swapped iter_args, an if yielding a value, f16/bf16
    loads, stores and arithmetic, workgroup buffers over 48 KiB in dynamic shared memory (an
    unused one left out), names that are C keywords."""
    p = emit(air.parse(FEATURES))
    k0, k1 = p.kernels
    assert (k0.name, k1.name) == ("features_kernel0", "features_kernel1")
    assert (k0.block, k1.block) == ((64, 1, 1), (64, 2, 1))
    assert [q.name for q in k0.params] == ["X", "X_dim0", "X_dim1", "Y", "Y_dim0", "I", "I_dim0", "n"]
    assert [q.ctype for q in k0.params] == ["const __half*", "long long", "long long", "__nv_bfloat16*", "long long",
                                            "int*", "long long", "long long"]
    assert [q.kind for q in k0.params] == ["ptr", "dim", "dim", "ptr", "dim", "ptr", "dim", "scalar"]
    assert [(q.name, q.ctype, q.dim) for q in k1.params] == [("Z", "float*", None), ("Z_dim0", "long long", 0)]
    assert (k0.static_shared_bytes, k0.dynamic_shared_bytes) == (0, 0)
    assert (k1.static_shared_bytes, k1.dynamic_shared_bytes) == (0, 65536)
    assert p.source.count("#include <cuda_fp16.h>\n#include <cuda_bf16.h>") == 1
    b0 = body_lines(p, 0)
    assert b0[:8] == [
        "long long t = threadIdx.x;",
        "long long b = blockIdx.x;",
        "long long gd = gridDim.x;",
        "long long i = b * 64 + t;",
        "long long dd = air_muli(64LL, gd);",  # gpu.block_dim x is the constant block size; index wraps
        "int ddi = (int)dd;",
        "long long in = min(i, n - 1);",
        "float tmp[4] = {};",
    ]
    assert b0[8:19] == [
        "float a = 0.0f;",
        "float bb = 1.0f;",
        "for (long long k = 0; k < min(4LL, X_dim1 - in); k += 2) {",
        "float h = __half2float(X[in * X_dim1 + k]);",  # extf f16 -> f32: h itself
        "tmp[k] = h;",
        "float s = bb + h;",
        "float a_next = s;",  # the yield swaps the carried values: through temporaries
        "float bb_next = a;",
        "a = a_next;",
        "bb = bb_next;",
        "}",
    ]
    assert b0[19:] == [
        "float r_0 = a;",
        "float r_1 = bb;",
        "float p;",
        "if (i < n && air_mod(i, 2) == 0) {",
        "float q = tmp[0];",
        "float m = air_maximumf(r_0, q);",
        "p = m;",
        "} else {",
        "p = r_1;",
        "}",
        "if (i < n) {",
        "float bf = air_round_bf16(p);",
        "float x2 = air_round_bf16(bf * bf);",
        "Y[i] = __float2bfloat16_rn(x2);",
        "int v_int = __float2int_rz(p);",
        "int sum = air_addi(v_int, ddi);",
        "I[i] = sum;",
        "}",
    ]
    assert body_lines(p, 1) == [
        "extern __shared__ __align__(16) unsigned char air_smem[];  // 65536 bytes",
        "float* big = (float*)(air_smem + 0);",
        "float* big2 = (float*)(air_smem + 32768);",
        "long long tx_0 = threadIdx.x;",
        "long long ty_0 = threadIdx.y;",
        "float v = Z[tx_0];",
        "big[tx_0 * 128 + ty_0] = v;",
        "big2[ty_0 * 64 + tx_0] = v;",
        "__syncthreads();",
        "float w = big[ty_0 - tx_0 * 128 + 8064];",
        "float w2 = big2[ty_0 * 64 - tx_0 + 63];",
        "float s_0 = w + w2;",
        "Z[tx_0 + ty_0 * 64] = s_0;",
    ]
    assert_clean_compile(p)


# ----------------------------------------------------------------------------------------------
# Every arith/math op on every type: one kernel whose thread t computes row t
# ----------------------------------------------------------------------------------------------

INT_TYPES = ("i1", "i8", "i16", "i32", "i64", "index")
FLOAT_TYPES = ("f16", "bf16", "f32", "f64")
INT_BINARY = ("addi", "subi", "muli", "andi", "ori", "xori", "maxsi", "minsi", "maxui", "minui", "divsi", "divui",
              "remsi", "remui", "floordivsi", "ceildivsi")
SHIFTS = ("shli", "shrsi", "shrui")
FLOAT_BINARY = ("addf", "subf", "mulf", "divf", "remf", "maximumf", "minimumf")
MATH_UNARY = ("exp", "exp2", "log", "log2", "tanh", "sqrt", "rsqrt", "erf", "absf", "sin", "cos", "floor", "ceil")
CMPI = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
CMPF = ("false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord", "ueq", "ugt", "uge", "ult", "ule", "une", "uno",
        "true")
WIDTH = {"i1": 1, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "index": 64, "f16": 16, "bf16": 16, "f32": 32, "f64": 64}


def _casts(ints=INT_TYPES, floats=FLOAT_TYPES) -> list[tuple[str, str, str]]:
    """(op, source type, result type) of every valid cast between the given types."""
    out = []
    iw = [t for t in ints if t != "index"]
    for s in iw:
        if "index" in ints:
            out += [("index_cast", s, "index"), ("index_cast", "index", s)]
        for d in iw:
            if WIDTH[d] > WIDTH[s]:
                out += [("extsi", s, d), ("extui", s, d), ("trunci", d, s)]
        for f in floats:
            out += [("sitofp", s, f), ("uitofp", s, f), ("fptosi", f, s), ("fptoui", f, s)]
    for s in floats:
        for d in floats:
            if WIDTH[d] > WIDTH[s]:
                out += [("extf", s, d), ("truncf", d, s)]
            if WIDTH[d] == WIDTH[s] and d != s:
                out.append(("bitcast", s, d))
        i = f"i{WIDTH[s]}"
        if i in ints:
            out += [("bitcast", s, i), ("bitcast", i, s)]
    return out


class OpsProgram:
    """A program computing ops on rows of inputs: thread (or, in the host version, loop
    iteration) ``t`` reads ``%in_<ty>[t, 0..3]`` (operands a, b, a shift amount or fma's third
    operand, and a float to convert to integers) and stores each
    result at ``%out_<ty>[t, k]``. ``launch`` gives the gpu.launch form, else an affine.for."""

    def __init__(self, rows: int, int_ops=INT_BINARY + SHIFTS, float_ops=FLOAT_BINARY, math_ops=MATH_UNARY + (
            "powf", "fma"), cmpi=CMPI, cmpf=CMPF, casts=None, ints=INT_TYPES, floats=FLOAT_TYPES, select=True,
                 bool_division: bool = True):
        self.rows = rows
        self.body: list[str] = []
        self.outs: dict[str, list[str]] = {}  # result type -> values stored there
        self.approx: dict[str, list[bool]] = {}  # per stored value: a transcendental function's result
        self.n = 0
        types = ints + floats
        self.types = types
        ld = {}
        for ty in types:
            for k in range(4):
                ld[ty, k] = self.value(f"affine.load %in_{ty}[%t, {k}] : memref<{rows}x4x{ty}>", None)
        for ty in ints:
            a, b, s = ld[ty, 0], ld[ty, 1], ld[ty, 2]
            for op in int_ops:
                if ty == "i1" and not bool_division and op in INT_BINARY[10:]:
                    continue
                self.value(f"arith.{op} {a}, {s if op in SHIFTS else b} : {ty}", ty)
            for p in cmpi:
                self.value(f"arith.cmpi {p}, {a}, {b} : {ty}", "i1")
        for ty in floats:
            a, b, c = ld[ty, 0], ld[ty, 1], ld[ty, 2]
            for op in float_ops:
                self.value(f"arith.{op} {a}, {b} : {ty}", ty)
            self.value(f"arith.negf {a} : {ty}", ty)
            for op in math_ops:
                args = {"powf": f"{a}, {b}", "fma": f"{a}, {b}, {c}"}.get(op, a)
                self.value(f"math.{op} {args} : {ty}", ty, approx=op not in ("sqrt", "absf", "floor", "ceil", "fma"))
            for p in cmpf:
                self.value(f"arith.cmpf {p}, {a}, {b} : {ty}", "i1")
        if select and "i1" in ints:
            cond = ld["i1", 0]
            for ty in types:
                self.value(f"arith.select {cond}, {ld[ty, 0]}, {ld[ty, 1]} : {ty}", ty)
        for op, s, d in (_casts(ints, floats) if casts is None else casts):
            self.value(f"arith.{op} {ld[s, 3 if op in ('fptosi', 'fptoui') else 0]} : {s} to {d}", d)

    def value(self, text: str, result_type: str | None, approx: bool = False) -> str:
        name = f"%v{self.n}"
        self.n += 1
        self.body.append(f"{name} = {text}")
        if result_type is not None:
            self.outs.setdefault(result_type, []).append(name)
            self.approx.setdefault(result_type, []).append(approx)
        return name

    def text(self, launch: bool) -> str:
        args = [f"%in_{ty}: memref<{self.rows}x4x{ty}>" for ty in self.types]
        args += [f"%out_{ty}: memref<{self.rows}x{len(vs)}x{ty}>" for ty, vs in self.outs.items()]
        body = list(self.body)
        for ty, vs in self.outs.items():
            body += [f"affine.store {v}, %out_{ty}[%t, {k}] : memref<{self.rows}x{len(vs)}x{ty}>"
                     for k, v in enumerate(vs)]
        inner = "\n".join("      " + ln for ln in body)
        if launch:
            return (f"func.func @ops({', '.join(args)}) {{\n  %c1 = arith.constant 1 : index\n"
                    f"  %cT = arith.constant {self.rows} : index\n"
                    "  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) "
                    "threads(%tx, %ty, %tz) in (%sx = %cT, %sy = %c1, %sz = %c1) {\n"
                    f"      %t = gpu.thread_id x\n{inner}\n    gpu.terminator\n  }}\n  return\n}}\n")
        return (f"func.func @ops({', '.join(args)}) {{\n  affine.for %t = 0 to {self.rows} {{\n{inner}\n  }}\n"
                "  return\n}\n")


@pytest.mark.parametrize("fast_math", [False, True])
def test_every_arith_and_math_op_compiles_without_warnings(fast_math):
    prog = OpsProgram(4)
    p = emit(air.parse(prog.text(launch=True)), fast_math=fast_math)
    assert "#include <cuda_fp16.h>\n#include <cuda_bf16.h>" in p.source
    lines = body_lines(p)
    n_stores = sum(len(v) for v in prog.outs.values())
    assert sum(1 for ln in lines if ln.startswith("out_")) == n_stores  # every result reaches memory
    assert_clean_compile(p)


# ----------------------------------------------------------------------------------------------
# Random programs, moved naively into a 1x1x1 gpu.launch (one thread runs the whole body)
# ----------------------------------------------------------------------------------------------


def wrap_in_launch(module):
    """``module`` (one function) with its whole body moved into a 1x1x1 ``gpu.launch``."""
    (f,) = module.functions
    body = f.body
    ops = [op for op in body.ops if op.name != "func.return"]
    ret = body.ops[-1]
    one = arith_d.ConstantOp.of(1, index)
    body.insert(0, one)
    launch = LaunchOp([one.results[0]] * 3, [one.results[0]] * 3)
    body.insert_before(ret, launch)
    for op in ops:
        launch.body.append(op.detach())
    launch.body.append(TerminatorOp())
    air.verify(module)
    return module


RANDOM_PROGRAMS = 120


@settings(max_examples=RANDOM_PROGRAMS)
@given(programs_with_inputs())
def test_random_programs_in_one_thread_compile_without_warnings(case):
    module, _ = case
    m = wrap_in_launch(module)
    p = emit(m)
    (k,) = p.kernels
    assert k.block == (1, 1, 1)
    assert_clean_compile(p)


# ----------------------------------------------------------------------------------------------
# On a GPU: the kernels against the interpreter (a minimal launcher through cuda.bindings.driver,
# independent of runtime.cuda_driver)
# ----------------------------------------------------------------------------------------------


def _driver():
    from cuda.bindings import driver

    return driver


def _check(result, what: str):
    drv = _driver()
    err, *rest = result if isinstance(result, tuple) else (result,)
    if err != drv.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"{what}: {err}")
    return rest[0] if len(rest) == 1 else rest


_CONTEXT: list = []


def _gpu_present() -> bool:
    try:
        drv = _driver()
        if drv.cuInit(0)[0] != drv.CUresult.CUDA_SUCCESS:
            return False
        err, n = drv.cuDeviceGetCount()
        return err == drv.CUresult.CUDA_SUCCESS and n > 0
    except Exception:  # no driver library at all
        return False


def _context():
    if not _CONTEXT:
        drv = _driver()
        _check(drv.cuInit(0), "cuInit")
        dev = _check(drv.cuDeviceGet(0), "cuDeviceGet")
        ctx = _check(drv.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
        _CONTEXT.append(ctx)
    _check(_driver().cuCtxSetCurrent(_CONTEXT[0]), "cuCtxSetCurrent")


_CTYPES = {"bool": "c_bool", "signed char": "c_int8", "short": "c_int16", "int": "c_int32", "long long": "c_int64",
           "float": "c_float", "double": "c_double"}


def _host_index(v, env: dict) -> int:
    """The value of host index value ``v`` (a constant, an argument, an affine.apply of those)."""
    if v in env:
        return int(env[v])
    op = v.owner
    if op.name == "arith.constant":
        return int(op.value)
    if op.name in ("affine.apply", "affine.min", "affine.max"):
        vals = op.map.evaluate([_host_index(o, env) for o in op.operands[:op.map.num_dims]],
                               [_host_index(o, env) for o in op.operands[op.map.num_dims:]])
        return {"affine.apply": vals[0], "affine.min": min(vals), "affine.max": max(vals)}[op.name]
    raise NotImplementedError(f"host value computed by {op.name}")


def gpu_run(program: CudaProgram, args: list) -> None:
    """Run ``program``'s only function on the GPU: numpy arrays are copied in and back (in place)."""
    import ctypes

    drv = _driver()
    _context()
    module = _check(drv.cuModuleLoadData(assert_clean_compile(program)), "cuModuleLoadData")
    (f,) = program.functions
    env = dict(zip(f.args, args))
    buffers = {}
    try:
        for a, x in zip(f.args, args):
            if isinstance(x, np.ndarray):
                ptr = _check(drv.cuMemAlloc(max(1, x.nbytes)), "cuMemAlloc")
                buffers[a] = ptr
                if x.nbytes:
                    _check(drv.cuMemcpyHtoD(ptr, np.ascontiguousarray(x).ctypes.data, x.nbytes), "cuMemcpyHtoD")
        for op in f.body.ops:  # device temporaries, zero-filled as the interpreter's
            if op.name == "memref.alloc":
                t = op.results[0].type
                sizes = iter(op.operands)
                shape = tuple(d if d is not None else _host_index(next(sizes), env) for d in t.shape)
                from affine_ir.testing import numpy_dtype

                shadow = env[op.results[0]] = np.zeros(shape, numpy_dtype(t.element_type))
                ptr = buffers[op.results[0]] = _check(drv.cuMemAlloc(max(1, shadow.nbytes)), "cuMemAlloc")
                _check(drv.cuMemsetD8(ptr, 0, max(1, shadow.nbytes)), "cuMemsetD8")

        def launch(k) -> None:
            fn = _check(drv.cuModuleGetFunction(module, k.name.encode()), "cuModuleGetFunction")
            values = []
            for p in k.params:
                if p.kind == "ptr":
                    values.append(ctypes.c_uint64(int(buffers[p.value])))
                elif p.kind == "dim":
                    values.append(ctypes.c_int64(env[p.value].shape[p.dim]))
                else:
                    x = env[p.value] if p.value in env else _host_index(p.value, env)
                    values.append(getattr(ctypes, _CTYPES[p.ctype])(x))
            ptrs = (ctypes.c_void_p * max(1, len(values)))(*[ctypes.addressof(v) for v in values])
            grid = [_host_index(v, env) for v in k.launch.grid_size]
            if min(grid) < 1:  # an empty iteration space: no block runs
                return
            if k.dynamic_shared_bytes:
                _check(drv.cuFuncSetAttribute(
                    fn, drv.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    k.dynamic_shared_bytes), "cuFuncSetAttribute")
            _check(drv.cuLaunchKernel(fn, *grid, *k.block, k.dynamic_shared_bytes, 0, ctypes.addressof(ptrs), 0),
                   f"cuLaunchKernel {k.name}")
            _check(drv.cuCtxSynchronize(), f"running {k.name}")

        specs = {k.launch: k for k in program.kernels}

        def run_host(ops) -> None:  # launches in program order, host loops iterated, host ifs decided
            for op in ops:
                role = host_role(op)
                if op in specs:
                    launch(specs[op])
                elif role is HostRole.LOOP:
                    for iv in host_loop_range(op, env):
                        env[op.induction_var] = iv
                        run_host(op.body.ops)
                elif role is HostRole.IF:
                    branch = host_if_branch(op, {v: _host_index(v, env) for v in op.operands})
                    if branch is not None:
                        run_host(branch.ops)
                elif role not in (HostRole.VALUE, HostRole.ALLOCATE, HostRole.FREE, HostRole.RETURN):
                    raise NotImplementedError(f"gpu_run: host op {op.name}")  # never skipped silently

        run_host(f.body.ops)
        for a, x in zip(f.args, args):
            if a in buffers and x.nbytes:
                out = np.empty_like(x)
                _check(drv.cuMemcpyDtoH(out.ctypes.data, buffers[a], x.nbytes), "cuMemcpyDtoH")
                x[...] = out
    finally:
        for ptr in buffers.values():
            drv.cuMemFree(ptr)
        drv.cuModuleUnload(module)


gpu = pytest.mark.skipif(not _gpu_present(), reason="needs an NVIDIA GPU")


def _same(want: np.ndarray, got: np.ndarray) -> np.ndarray:
    """Elementwise: equal, or both NaN (floats compared by value, -0 == +0 too)."""
    if want.dtype.kind == "f" or str(want.dtype) == "bfloat16":
        w, g = want.astype(np.float64), got.astype(np.float64)
        return (w == g) | (np.isnan(w) & np.isnan(g))
    return want == got


@gpu
@pytest.mark.gpu
@settings(max_examples=2 * RANDOM_PROGRAMS)
@given(programs_with_inputs())
def test_gpu_random_programs_match_the_interpreter(case):
    module, args = case
    want = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    air.interpret(module, *want)
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    gpu_run(emit(wrap_in_launch(module)), got)
    for k, (w, g) in enumerate(zip(want, got)):
        if isinstance(w, np.ndarray):
            assert np.array_equal(w, g), f"argument #{k}: interpreter {w.ravel()} vs GPU {g.ravel()}\n{module}"


def _ops_inputs(prog: OpsProgram, rng) -> list:
    """Arguments for ``prog`` on which the interpreter never traps: nonzero divisors (no
    ``INT_MIN / -1``), shift amounts below the width (0 for i1), floats converted to integers in
    (-1, 128); floats include infinities, signed zeros, subnormals and (as ``b`` only) NaN."""
    from affine_ir.testing import numpy_dtype

    rows = prog.rows
    args = []
    for ty in prog.types:
        dt = numpy_dtype(air.types.scalar(ty)) if ty != "index" else np.dtype(np.int64)
        x = np.zeros((rows, 4), dtype=dt)
        if ty in INT_TYPES:
            w = WIDTH[ty]
            if w == 1:
                x[:, 0] = rng.integers(0, 2, rows)
                x[:, 1] = True  # a divisor
                x[:, 2] = False  # a shift amount below 1
            else:
                lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
                def draw(lo=lo, hi=hi):  # half small values, half anywhere in the range
                    return np.where(rng.random(rows) < 0.5, rng.integers(-9, 10, rows),
                                    rng.integers(lo, hi, rows, endpoint=True))

                x[:, 0] = draw()
                b = draw()
                b[b == 0] = 3
                x[:, 1] = b
                x[:, 0] = np.where((b == -1) & (x[:, 0] == lo), 5, x[:, 0])
                x[:, 2] = rng.integers(0, w, rows)
        else:
            special = np.array([np.inf, -np.inf, 0.0, -0.0, 1e-40, -3e-39, 5e-324, 65504.0, 1e300, -7.5])
            a = rng.standard_normal(rows) * np.exp2(rng.integers(-20, 20, rows))
            a[: len(special)] = special
            b = rng.standard_normal(rows) * 4
            b[:: 7] = np.nan
            b[1:: 11] = 0.0
            with np.errstate(all="ignore"):
                x[:, 0] = a.astype(dt)
                x[:, 1] = b.astype(dt)
                x[:, 2] = (rng.standard_normal(rows) * 3).astype(dt)
                x[:, 3] = rng.uniform(-0.99, 127.99, rows).astype(dt)
        args.append(x)
    for ty, vs in prog.outs.items():
        dt = numpy_dtype(air.types.scalar(ty)) if ty != "index" else np.dtype(np.int64)
        args.append(np.zeros((rows, len(vs)), dtype=dt))
    return args


def _ulps(x: np.ndarray, dtype) -> np.ndarray:
    """Values of float array ``x`` (of ``dtype``) on a monotonic integer scale (1 ulp apart)."""
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[np.dtype(dtype).itemsize]
    i = x.view(bits).astype(np.int64)
    return np.where(i < 0, np.int64(np.iinfo(bits).min) - i, i)


@gpu
@pytest.mark.gpu
def test_gpu_every_op_matches_the_interpreter():
    rng = np.random.default_rng(7)
    prog = OpsProgram(256, bool_division=False, casts=[c for c in _casts() if not (c[0] in ("fptosi", "fptoui")
                                                                                   and c[2] == "i1")])
    args = _ops_inputs(prog, rng)
    want = [a.copy() for a in args]
    air.interpret(air.parse(prog.text(launch=False)), *want)
    got = [a.copy() for a in args]
    gpu_run(emit(air.parse(prog.text(launch=True))), got)
    lines = prog.text(launch=True).splitlines()
    failures = []
    for ty, w, g in zip(prog.outs, want[len(prog.types):], got[len(prog.types):]):
        for k, (name, approx) in enumerate(zip(prog.outs[ty], prog.approx[ty])):
            ok = _same(w[:, k], g[:, k])
            if approx:
                tol = 4 if ty == "f64" else 1
                ok |= np.abs(_ulps(w[:, k], w.dtype) - _ulps(g[:, k], g.dtype)) <= tol
            if not ok.all():
                r = int(np.argmin(ok))
                op = next(ln.strip() for ln in lines if ln.strip().startswith(name + " ="))
                ins = {t: a[r].tolist() for t, a in zip(prog.types, args)}
                failures.append(f"{op}: row {r}: interpreter {w[r, k]!r}, GPU {g[r, k]!r}; inputs {ins}")
    assert not failures, "\n".join(failures[:40])


def _golden_args(name: str, rng) -> list:
    f32 = np.float32
    if name == "ELEMENTWISE":
        return [rng.standard_normal((64, 300)).astype(f32), np.zeros((64, 300), f32), 300]
    if name == "MATMUL":
        return [rng.standard_normal((64, 32)).astype(f32), rng.standard_normal((32, 48)).astype(f32),
                np.zeros((64, 48), f32)]
    if name == "REDUCTION":
        return [rng.standard_normal((5, 256)).astype(f32), np.zeros(5, f32), 5]
    assert name == "FEATURES"
    return [rng.standard_normal((150, 7)).astype(np.float16), np.zeros(150, air.testing.numpy_dtype(air.types.bf16)),
            rng.standard_normal(128).astype(f32), np.zeros(150, np.int32), 150]


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("name", ["ELEMENTWISE", "MATMUL", "REDUCTION", "FEATURES"])
@pytest.mark.parametrize("fast_math", [False, True])
def test_gpu_golden_kernels_match_the_interpreter(name, fast_math):
    """Many blocks and threads, barriers, shared memory (static and dynamic): bit-exact, as the
    kernels have no transcendental functions except ``exp`` (not fast-math) in ELEMENTWISE."""
    text = globals()[name]
    args = _golden_args(name, np.random.default_rng(3))
    want = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    air.interpret(air.parse(text), *want)
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    gpu_run(emit(air.parse(text), fast_math=fast_math), got)
    for k, (w, g) in enumerate(zip(want, got)):
        if not isinstance(w, np.ndarray):
            continue
        if fast_math:  # expf, and FMA contraction in the matmul: a few ulp
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=1e-5, atol=1e-5)
        else:
            assert _same(w, g).all(), f"argument #{k}: {np.argwhere(~_same(w, g))[:5]}"


# ----------------------------------------------------------------------------------------------
# Names, several functions, bounds
# ----------------------------------------------------------------------------------------------

NAMES = """
func.func @"my-func"(%int: memref<8xi32>, %threadIdx: memref<8xi32>, %n: index) {
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %exp = affine.load %int[%tx] : memref<8xi32>
    %air_x = arith.addi %exp, %exp : i32
    %r:2 = affine.for %i = max affine_map<(d0)[s0] -> (d0 - 2, s0 - 8, 0)>(%tx)[%n]
        to min affine_map<(d0) -> (d0 + 3, 8)>(%tx) step 3 iter_args(%a = %air_x, %b = %exp) -> (i32, i32) {
      %__y = arith.muli %a, %b : i32
      affine.yield %__y, %a : i32, i32
    }
    %m = affine.max affine_map<(d0)[s0] -> (d0 floordiv 2, s0 mod 3, -d0 ceildiv 4)>(%tx)[%n]
    %mi = arith.index_cast %m : index to i32
    %s = arith.addi %r#0, %mi : i32
    affine.store %s, %threadIdx[%tx] : memref<8xi32>
    affine.store %r#1, %int[%tx] : memref<8xi32>
    gpu.terminator
  }
  return
}

func.func @second(%A: memref<f64>) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %v = affine.load %A[] : memref<f64>
    %w = arith.mulf %v, %v : f64
    affine.store %w, %A[] : memref<f64>
    gpu.terminator
  }
  return
}
"""


def test_names_bounds_and_several_functions():
    p = emit(air.parse(NAMES))
    assert [k.name for k in p.kernels] == ["my_func_kernel0", "second_kernel0"]
    assert [f.sym_name for f in p.functions] == ["my-func", "second"]
    assert [q.name for q in p.kernels[0].params] == ["v_int", "v_threadIdx", "n"]
    assert body_lines(p, 0) == [
        "long long tx = threadIdx.x;",
        "int v_exp = v_int[tx];",
        "int v_air_x = air_addi(v_exp, v_exp);",
        "int a = v_air_x;",
        "int b = v_exp;",
        "for (long long i = max(tx - 2, max(n - 8, 0LL)); i < min(tx + 3, 8LL); i += 3) {",
        "int v_y = air_muli(a, b);",
        "int a_next = v_y;",
        "int b_next = a;",
        "a = a_next;",
        "b = b_next;",
        "}",
        "int r_0 = a;",
        "int r_1 = b;",
        # tx is below the block size: 32-bit division; n is unbounded: 64-bit
        "long long m = max(air_ufloordiv32(tx, 2), max(air_mod(n, 3), air_ceildiv32(-tx, 4)));",
        "int mi = (int)m;",
        "int s = air_addi(r_0, mi);",
        "v_threadIdx[tx] = s;",
        "v_int[tx] = r_1;",
    ]
    assert body_lines(p, 1) == ["double v = A[0];", "double w = __dmul_rn(v, v);", "A[0] = w;"]
    assert signature(p, 1) == 'extern "C" __global__ void __launch_bounds__(1) second_kernel0(double* __restrict__ A)'
    assert_clean_compile(p)


def test_unused_values_and_dead_loop_results_are_left_out():
    """NVRTC warns about a variable declared and never read: what no store needs is not printed."""
    p = emit(air.parse("""
    func.func @f(%A: memref<4xf32>) {
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
                 threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
        %dead = affine.load %A[%tx] : memref<4xf32>
        %zero = arith.constant 0.0 : f32
        %unused = affine.for %k = 0 to 4 iter_args(%acc = %zero) -> (f32) {
          %x = affine.load %A[%k] : memref<4xf32>
          %y = math.exp %x : f32
          %acc2 = arith.addf %acc, %y : f32
          affine.yield %acc2 : f32
        }
        %i = affine.apply affine_map<(d0) -> (d0 floordiv 2)>(%tx)
        %keep = affine.load %A[%i] : memref<4xf32>
        gpu.barrier
        affine.store %keep, %A[%tx] : memref<4xf32>
        gpu.terminator
      }
      return
    }"""))
    assert body_lines(p) == [
        "long long tx = threadIdx.x;",
        "for (long long k = 0; k < 4; ++k) {",
        "}",
        "long long i = air_ufloordiv32(tx, 2);",
        "float keep = A[i];",
        "__syncthreads();",
        "A[tx] = keep;",
    ]
    assert "air_ufloordiv32" in p.source and "exp" not in p.source
    assert_clean_compile(p)


def test_a_guard_reuses_the_index_it_guards_where_that_index_is_in_scope():
    """A constraint whose terms are those of an affine.apply already printed (or their negation) is
    written over its variable (``s >= 0``, ``s < 8``: no division repeated); one declared in a
    scope that has closed (a branch before) is not visible and is not used."""
    p = emit(air.parse("""
    func.func @f(%A: memref<16xf32>, %B: memref<16xf32>) {
      %c1 = arith.constant 1 : index
      %c16 = arith.constant 16 : index
      %zero = arith.constant 0.0 : f32
      gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
                 threads(%tx, %ty, %tz) in (%sx = %c16, %sy = %c1, %sz = %c1) {
        %s = affine.apply affine_map<(d0) -> (d0 floordiv 2 - 1)>(%tx)
        %v = affine.if affine_set<(d0) : (d0 floordiv 2 - 1 >= 0, -(d0 floordiv 2) + 8 >= 0)>(%tx) -> f32 {
          %x = affine.load %A[%s] : memref<16xf32>
          affine.yield %x : f32
        } else {
          affine.yield %zero : f32
        }
        affine.store %v, %B[%tx] : memref<16xf32>
        affine.if affine_set<(d0) : (d0 - 4 >= 0)>(%tx) {
          %i = affine.apply affine_map<(d0) -> (d0 floordiv 3)>(%tx)
          affine.store %zero, %B[%i] : memref<16xf32>
        }
        affine.if affine_set<(d0) : (d0 floordiv 3 - 2 >= 0)>(%tx) {
          affine.store %zero, %A[%tx] : memref<16xf32>
        }
        gpu.terminator
      }
      return
    }"""))
    lines = body_lines(p)
    assert "if (s >= 0 && s < 8) {" in lines
    assert "if (air_ufloordiv32(tx, 3) >= 2) {" in lines  # %i's scope (the branch before) has closed
    assert_clean_compile(p)


# ----------------------------------------------------------------------------------------------
# Errors name the op and its location
# ----------------------------------------------------------------------------------------------

LAUNCH = """
func.func @f(%A: memref<8xf32>, %n: index) {{
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  {before}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = {bx}, %sy = %c1, %sz = %c1) {{
    {inside}
    gpu.terminator
  }}
  return
}}
"""


@pytest.mark.parametrize("before,inside,bx,line,message", [
    ("affine.for %i = 0 to 8 {\n  }", "", "%c8", 5,
     "cannot emit @f as CUDA: 'affine.for' at the top level of a host function is not mapped to the GPU"),
    ("", "%v = affine.vector_load %A[0] : memref<8xf32>, vector<2x2xf32>\n"
         "affine.vector_store %v, %A[4] : memref<8xf32>, vector<2x2xf32>", "%c8", 8,
     "cannot emit 'affine.vector_load' as CUDA: only 1-D vectors are supported by the CUDA backend"),
    ("", "affine.parallel (%i) = (0) to (8) {\n}", "%c8", 8,
     "cannot emit 'affine.parallel' as CUDA: an affine.parallel left inside a kernel is not supported"),
    ("", "", "%n", 6, "cannot emit 'gpu.launch' as CUDA: the block size in x must be a positive arith.constant"),
    ("", "%m = memref.alloc() : memref<4xf32>", "%c8", 8,
     "cannot emit 'memref.alloc' as CUDA: global memory cannot be allocated inside a kernel (memref<4xf32>)"),
    ("", "%m = memref.alloc(%n) : memref<?xf32, #gpu.address_space<workgroup>>", "%c8", 8,
     "cannot emit 'memref.alloc' as CUDA: a workgroup buffer needs a static shape"),
    ("", "%m = memref.alloca(%n) : memref<?xf32>\n%z = arith.constant 0.0 : f32\n"
         "memref.store %z, %m[%c1] : memref<?xf32>", "%c8", 8,
     "cannot emit 'memref.alloca' as CUDA: a thread-private buffer needs a static shape"),
    ("", "memref.dealloc %A : memref<8xf32>", "%c8", 8,
     "cannot emit 'memref.dealloc' as CUDA: global memory cannot be freed inside a kernel"),
    ("", "%v = affine.load %A[0] : memref<8xf32>\n%o = arith.constant 1 : i32\n"
         "%s, %ok = gpu.shuffle xor %v, %o, %o : f32\naffine.store %s, %A[0] : memref<8xf32>", "%c8", 10,
     "cannot emit 'gpu.shuffle' as CUDA: no CUDA lowering for this op"),
    ("", "%x = arith.constant 3 : i7\n%y = arith.addi %x, %x : i7", "%c8", 8,
     "cannot emit 'arith.constant' as CUDA: type i7 has no CUDA representation"),
    ("%w = memref.alloc() : memref<4xf32, #gpu.address_space<workgroup>>", "", "%c8", 5,
     "cannot emit @f as CUDA: a host allocation must be in global memory"),
])
def test_errors_name_the_op_and_its_location(before, inside, bx, line, message):
    m = air.parse(LAUNCH.format(before=before, inside=inside, bx=bx), "input.mlir")
    with pytest.raises(EmitError) as e:
        emit(m)
    assert message in e.value.message, e.value.message
    assert e.value.location is not None and (e.value.location.file, e.value.location.line) == ("input.mlir", line)
    assert str(e.value).startswith(f"input.mlir:{line}:")


def test_errors_for_results_and_arguments():
    with pytest.raises(EmitError, match=r"it returns %x \(an argument\); a function returning a value is not "
                                         r"supported"):
        emit(air.parse("func.func @f(%x: f32) -> f32 {\n  return %x : f32\n}"))
    with pytest.raises(EmitError, match="expected a module or a func.func op"):
        emit(air.parse(ELEMENTWISE).functions[0].body.ops[0])
    vec = air.parse("""
    func.func @f(%v: vector<4xf32>, %A: memref<4xf32>) {
      %c1 = arith.constant 1 : index
      gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
                 threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
        %x = vector.reduction <add>, %v : vector<4xf32> into f32
        affine.store %x, %A[0] : memref<4xf32>
        gpu.terminator
      }
      return
    }""")
    with pytest.raises(EmitError, match=r"host value %v : vector<4xf32>: type vector<4xf32> has no CUDA"):
        emit(vec)
    # a function without launches is a host function with nothing to run on the GPU
    p = emit(air.parse("func.func @g(%n: index) {\n  return\n}"))
    assert p.kernels == [] and [f.sym_name for f in p.functions] == ["g"]
    assert_clean_compile(p)


# ----------------------------------------------------------------------------------------------
# The command line (used by tests/filecheck/cuda-*.mlir)
# ----------------------------------------------------------------------------------------------


def test_command_line_prints_the_source_and_specs(tmp_path, capsys):
    from codegen.cuda.__main__ import main

    path = tmp_path / "k.mlir"
    path.write_text(MATMUL)
    assert main([str(path), "--specs", "--contract"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(emit(air.parse(MATMUL, str(path)), contract=True).source)
    assert "float p = a * b;" in out
    assert out.endswith("// kernel matmul_kernel0: block (16, 16, 1), static shared 0 B, dynamic shared 0 B, "
                        "params (A, B, C)\n")
    path.write_text("func.func @f(%A: memref<4xf32>) {\n  affine.for %i = 0 to 4 {\n  }\n  return\n}\n")
    assert main([str(path)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{path}:2:3: error: cannot emit @f as CUDA: 'affine.for' at the top level")
    assert main([str(tmp_path / "missing.mlir")]) == 1
    assert "error:" in capsys.readouterr().err


# ----------------------------------------------------------------------------------------------
# With the gpu-map pass (when present): library ops and random programs, mapped and printed
# ----------------------------------------------------------------------------------------------

LIBRARY_CASES = [
    ("matmul", (64, 48, 32), {}), ("matmul", ("M", 48, "K"), {"transpose_b": True}),
    ("softmax", ((8, "N"),), {}), ("layernorm", (8, 64), {}), ("conv2d", (1, 2, 6, 6, 3, 3, 3), {"padding": 1}),
    ("attention", (1, 2, 4, 8), {"causal": True}), ("mlp", (4, 6, 5), {}), ("gelu", ((4, 5),), {"approximate": "tanh"}),
    ("reduce", ("max", (3, 4, 2)), {"axis": 1}), ("max_pool2d", (1, "C", "H", "W", 2), {}),
    ("avg_pool2d", (1, 2, 6, 6, 3), {"stride": 2, "padding": 1}), ("depthwise_conv2d", (1, 3, 6, 5, 3, 3), {}),
]


def _gpu_map():
    gm = pytest.importorskip("transforms.gpu.gpu_map", reason="the gpu-map pass is not there")
    import transforms

    assert gm.PASS == "gpu-map"
    return transforms.PassManager.parse("gpu-map")


@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("name,sizes,kw", LIBRARY_CASES)
def test_library_ops_through_gpu_map_compile_without_warnings(name, sizes, kw, dtype):
    from affine_ir import library

    mapped = _gpu_map().run(getattr(library, name)(*sizes, dtype=dtype, **kw))
    p = emit(mapped)
    assert p.kernels and len(p.kernels) == sum(op.name == "gpu.launch" for op in mapped.functions[0].body.ops)
    assert_clean_compile(p)


MAPPED_PROGRAMS = 60


@settings(max_examples=MAPPED_PROGRAMS)
@given(programs_with_inputs())
def test_random_programs_through_gpu_map_compile_without_warnings(case):
    module, _ = case
    assert_clean_compile(emit(_gpu_map().run(module)))


@gpu
@pytest.mark.gpu
@settings(max_examples=2 * RANDOM_PROGRAMS)
@given(programs_with_inputs())
def test_gpu_random_programs_through_gpu_map_match_the_interpreter(case):
    module, args = case
    mapped = _gpu_map().run(module.clone())
    want = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    air.interpret(module, *want)
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    gpu_run(emit(mapped), got)
    for k, (w, g) in enumerate(zip(want, got)):
        if isinstance(w, np.ndarray):
            assert np.array_equal(w, g), f"argument #{k}: interpreter {w.ravel()} vs GPU {g.ravel()}\n{mapped}"


@settings(max_examples=100, deadline=None)
@given(programs_with_inputs())
def test_random_programs_through_the_gpu_pipeline_print_as_cuda(case):
    """The default GPU pipeline's output always prints (every host op is one the host runs): found
    on the H200 when a value LICM hoisted to the top level was used by a launch that
    gpu-map-reductions had made in a host loop (the value was not re-materialized in it)."""
    import transforms
    from transforms.pipelines import GPU_PIPELINE

    module, _ = case
    emit(transforms.PassManager.parse(GPU_PIPELINE).run(module))


HOISTED_INTO_A_REDUCTION = """func.func @kernel(%A: memref<10xi32>, %N: index) {
  affine.for %i = 0 to min affine_map<()[s0] -> (s0 + 1, 4)>()[%N] {
    %9 = affine.load %A[6] : memref<10xi32>
    %10 = affine.for %k = 2 to %N iter_args(%11 = %9) -> (i32) {
      %12 = arith.index_cast %N : index to i32
      %13 = arith.addi %11, %12 : i32
      affine.yield %13 : i32
    }
    affine.store %10, %A[7] : memref<10xi32>
  }
  return
}"""


def test_a_hoisted_host_value_is_rematerialized_in_a_reduction_launch_of_a_host_loop():
    import transforms
    from affine_ir.testing.checks import assert_same_bits_in_both_thread_orders, run
    from transforms.pipelines import GPU_PIPELINE

    m = air.parse(HOISTED_INTO_A_REDUCTION)
    out = transforms.PassManager.parse(GPU_PIPELINE).run(m)
    program = emit(out)
    assert len(program.kernels) >= 2
    for n in (0, 3, 9):
        args = [np.arange(10, dtype=np.int32) % 3, n]
        assert_same_bits_in_both_thread_orders(run(m, args), out, args, f"N={n}")


SIZES = {"M": 5, "N": 7, "K": 6, "C": 3, "H": 6, "W": 5}
TOL = {"f32": 1e-5, "f16": 2e-3, "bf16": 1.6e-2}


def _concrete(x):
    if isinstance(x, str):
        return SIZES.get(x, x)
    if isinstance(x, tuple):
        return tuple(_concrete(y) for y in x)
    return x


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["f32", "f16", "bf16"])
@pytest.mark.parametrize("name,sizes,kw", LIBRARY_CASES)
def test_gpu_library_ops_through_gpu_map_match_the_interpreter(name, sizes, kw, dtype):
    from affine_ir import library
    from affine_ir.testing import numpy_dtype

    m = getattr(library, name)(*sizes, dtype=dtype, **kw)
    static = getattr(library, name)(*_concrete(sizes), dtype=dtype, **kw)
    rng = np.random.default_rng(11)
    args = [rng.standard_normal(a.type.shape).astype(numpy_dtype(a.type.element_type))
            for a in static.functions[0].args if hasattr(a.type, "shape")]
    args += [SIZES[a.name_hint] for a in m.functions[0].args if str(a.type) == "index"]
    want = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    air.interpret(m, *want)
    got = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    gpu_run(emit(_gpu_map().run(m)), got)
    for w, g in zip(want, got):
        if isinstance(w, np.ndarray):
            np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=TOL[dtype], atol=TOL[dtype])


INT_CONSTANTS = {"i1": ("true", "false")}
FLOAT_CONSTANTS = ("0.0", "-0.0", "1.5", "0x7F800000", "0xFF800000", "0x7FC00000")


def _constants(ty: str) -> list[str]:
    if ty in INT_CONSTANTS:
        return list(INT_CONSTANTS[ty])
    if ty in FLOAT_TYPES:
        hexes = {"f16": ("0x7C00", "0xFC00", "0x7E00"), "bf16": ("0x7F80", "0xFF80", "0x7FC0"),
                 "f64": ("0x7FF0000000000000", "0xFFF0000000000000", "0x7FF8000000000000")}.get(ty)
        vals = list(FLOAT_CONSTANTS[:3]) + list(hexes or FLOAT_CONSTANTS[3:])
        return [f"{v} : {ty}" for v in vals]
    w = WIDTH[ty]
    return [f"{v} : {ty}" for v in (0, -1, 1, 7, (1 << (w - 1)) - 1, -(1 << (w - 1)))]


def constant_ops_text(safe: bool = False) -> tuple[str, int]:
    """A function with one 1x1x1 launch per type computing every op with a loaded value ``x``
    and each constant ``k`` of :func:`_constants` as operands ``(x, k)``, ``(k, x)``, ``(k, k)``,
    every cast and math function of each constant; the results stored to ``%out_<ty>_<rt>``.
    ``safe`` leaves out what the interpreter traps on (integer division, shifts, float to int
    casts) and bitcasts of float constants (the bits of a NaN constant are not kept: its value
    is). Returns the text and the number of stores."""
    types = INT_TYPES + FLOAT_TYPES
    launches, args, n = [], [], 0
    int_ops = INT_BINARY[:10] if safe else INT_BINARY + SHIFTS
    for ty in types:
        body, outs = [], {}

        def value(text, rt, body=body, outs=outs):
            nonlocal n
            body.append(f"%v{n} = {text}")
            outs.setdefault(rt, []).append(f"%v{n}")
            n += 1

        body.append(f"%x_{ty} = affine.load %in_{ty}[0] : memref<4x{ty}>")
        for k, c in enumerate(_constants(ty)):
            body.append(f"%k_{ty}_{k} = arith.constant {c}")
            for x, y in ((f"%x_{ty}", f"%k_{ty}_{k}"), (f"%k_{ty}_{k}", f"%x_{ty}"), (f"%k_{ty}_{k}", f"%k_{ty}_{k}")):
                if ty in INT_TYPES:
                    for op in int_ops:
                        value(f"arith.{op} {x}, {y} : {ty}", ty)
                    for p in CMPI:
                        value(f"arith.cmpi {p}, {x}, {y} : {ty}", "i1")
                else:
                    for op in FLOAT_BINARY:
                        value(f"arith.{op} {x}, {y} : {ty}", ty)
                    for p in CMPF:
                        value(f"arith.cmpf {p}, {x}, {y} : {ty}", "i1")
                    value(f"math.powf {x}, {y} : {ty}", ty)
                    value(f"math.fma {x}, {y}, {x} : {ty}", ty)
            for op, s, d in _casts():
                if s == ty and not (safe and (op in ("fptosi", "fptoui") or (op == "bitcast" and s in FLOAT_TYPES))):
                    value(f"arith.{op} %k_{ty}_{k} : {s} to {d}", d)
            if ty in FLOAT_TYPES:
                for op in MATH_UNARY:
                    value(f"math.{op} %k_{ty}_{k} : {ty}", ty)
        value(f"arith.select %x_i1_sel, %x_{ty}, %k_{ty}_1 : {ty}", ty)
        body.insert(0, "%x_i1_sel = affine.load %in_i1[0] : memref<4xi1>")
        args += [f"%out_{ty}_{rt}: memref<{len(v)}x{rt}>" for rt, v in outs.items()]
        body += [f"affine.store {v}, %out_{ty}_{rt}[{k}] : memref<{len(vs)}x{rt}>" for rt, vs in outs.items()
                 for k, v in enumerate(vs)]
        launches.append("  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1) "
                        "threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {\n"
                        + "\n".join(body) + "\n    gpu.terminator\n  }\n")
    args = [f"%in_{ty}: memref<4x{ty}>" for ty in types] + args
    return f"func.func @k({', '.join(args)}) {{\n  %c1 = arith.constant 1 : index\n" + "".join(launches) + \
        "  return\n}\n", n


@pytest.mark.parametrize("fast_math", [False, True])
def test_ops_with_constant_operands_compile_without_warnings(fast_math):
    """Constants are printed inline, so every op also meets literals (0, -1, extremes, signed
    zeros, infinities, NaN) as one or both operands: no warning either (an unsigned comparison
    with 0 would be a "pointless comparison", a float division by a 0 literal a "division by
    zero", an index sum of two constants an overflow: those are folded or go through functions)."""
    text, n = constant_ops_text()
    p = emit(air.parse(text), fast_math=fast_math)
    assert len(p.kernels) == len(INT_TYPES + FLOAT_TYPES)
    assert sum(1 for k in range(len(p.kernels)) for ln in body_lines(p, k) if ln.startswith("out_")) == n
    assert_clean_compile(p)


@gpu
@pytest.mark.gpu
def test_gpu_ops_with_constant_operands_match_the_interpreter():
    """The folded forms (unsigned comparisons with 0, index constants, division by a 0 literal)
    and the literals themselves (signed zeros, infinities, NaN, extremes) compute what the
    interpreter's emulation of the launches computes."""
    from affine_ir.testing import numpy_dtype

    text, _ = constant_ops_text(safe=True)
    m = air.parse(text)
    (f,) = m.functions
    rng = np.random.default_rng(5)
    args = []
    for a in f.args:
        t = a.type
        dt = np.dtype(np.int64) if str(t.element_type) == "index" else numpy_dtype(t.element_type)
        if a.name_hint.startswith("in_"):
            x = (rng.integers(-100, 100, t.shape) if dt.kind in "iu" else rng.integers(0, 2, t.shape) if dt.kind == "b"
                 else rng.standard_normal(t.shape) * 10)
            args.append(np.asarray(x).astype(dt))
        else:
            args.append(np.zeros(t.shape, dt))
    want = [a.copy() for a in args]
    air.interpret(m, *want)
    got = [a.copy() for a in args]
    gpu_run(emit(m), got)
    approx = {"exp", "exp2", "log", "log2", "tanh", "erf", "sin", "cos", "powf"}
    lines = [ln.strip() for ln in text.splitlines()]
    failures = []
    for a, w, g in zip(f.args, want, got):
        for k in np.flatnonzero(~_same(w, g).ravel()):
            name = f"%out_{a.name_hint[4:]}"
            store = next(ln for ln in lines if ln.startswith("affine.store") and f", {name}[{k}]" in ln)
            v = store.split()[1].rstrip(",")
            op = next(ln for ln in lines if ln.startswith(v + " ="))
            if any(f"math.{fn} " in op for fn in approx):
                tol = 4 if "f64" in op else 1
                if abs(int(_ulps(w.ravel()[k:k + 1], w.dtype)[0]) - int(_ulps(g.ravel()[k:k + 1], g.dtype)[0])) <= tol:
                    continue
            failures.append(f"{op}: interpreter {w.ravel()[k]!r}, GPU {g.ravel()[k]!r}")
    assert not failures, "\n".join(failures[:40])


# ----------------------------------------------------------------------------------------------
# 1-D vectors: struct values, 16-byte accesses when provably aligned, per-lane otherwise
# ----------------------------------------------------------------------------------------------

VECTOR_ADD = """
func.func @vadd(%A: memref<64x{cols}xf32>, %B: memref<64x{cols}xf32>, %C: memref<64x{cols}xf32>) {{
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c2, %gy = %c64, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c32, %sy = %c1, %sz = %c1) {{
    %j = affine.apply affine_map<(d0, d1) -> (d0 * 128 + d1 * 4)>(%bx, %tx)
    %a = affine.vector_load %A[%by, %j] : memref<64x{cols}xf32>, vector<4xf32>
    %b = affine.vector_load %B[%by, %j + {off}] : memref<64x{cols}xf32>, vector<4xf32>
    %s = arith.addf %a, %b : vector<4xf32>
    affine.vector_store %s, %C[%by, %j] : memref<64x{cols}xf32>, vector<4xf32>
    gpu.terminator
  }}
  return
}}
"""


def _vector_add(cols: str = "260", off: int = 0) -> str:
    return VECTOR_ADD.format(cols=cols, off=off)


def test_vector_add_aligned_accesses_are_16_bytes():
    # rows of 260 floats (1040 bytes, a multiple of 16) and j = bx * 128 + tx * 4: every access aligned
    p = emit(air.parse(_vector_add()))
    assert "struct __align__(16) air_v4f32 { float v[4]; };" in p.source.splitlines()
    assert p.source.count("struct ") == 1
    assert body_lines(p) == [
        "long long bx = blockIdx.x;",
        "long long by = blockIdx.y;",
        "long long tx = threadIdx.x;",
        "long long j = bx * 128 + tx * 4;",
        "air_v4f32 a = *reinterpret_cast<const air_v4f32*>(&A[by * 260 + j]);",
        "air_v4f32 b = *reinterpret_cast<const air_v4f32*>(&B[by * 260 + j]);",
        "air_v4f32 s;",
        "s.v[0] = a.v[0] + b.v[0];",
        "s.v[1] = a.v[1] + b.v[1];",
        "s.v[2] = a.v[2] + b.v[2];",
        "s.v[3] = a.v[3] + b.v[3];",
        "*reinterpret_cast<air_v4f32*>(&C[by * 260 + j]) = s;",
    ]
    assert_clean_compile(p)


def test_vector_add_unaligned_accesses_are_per_lane():
    # %B[%by, %j + 1]: off by one float; rows of 258 floats: row starts not 16-byte aligned; ?: unknown
    p = emit(air.parse(_vector_add(off=1)))
    lines = body_lines(p)
    assert "air_v4f32 a = *reinterpret_cast<const air_v4f32*>(&A[by * 260 + j]);" in lines
    k = lines.index("air_v4f32 b;")
    assert lines[k + 1:k + 5] == [f"b.v[{n}] = B[by * 260 + j + {n + 1}];" for n in range(4)]
    assert_clean_compile(p)
    for cols in ("258", "?"):
        p = emit(air.parse(_vector_add(cols=cols)))
        assert "reinterpret_cast" not in p.source, p.source
        lines = body_lines(p)
        row = "by * 258" if cols == "258" else "by * A_dim1"
        k = lines.index("air_v4f32 a;")
        assert lines[k + 1:k + 5] == [f"a.v[{n}] = A[{row} + j{f' + {n}' if n else ''}];" for n in range(4)]
        assert lines[-4:] == [f"C[{row.replace('A_', 'C_')} + j{f' + {n}' if n else ''}] = s.v[{n}];"
                              for n in range(4)]
        assert_clean_compile(p)


# element type, lanes, element-wise op, reduction kind
VECTOR_TYPES = [("f32", 4, "arith.maximumf", "add"), ("f32", 2, "arith.mulf", "mul"),
                ("f16", 8, "arith.addf", "add"), ("bf16", 8, "arith.subf", "maximumf"),
                ("f64", 2, "arith.divf", "minimumf"), ("i32", 4, "arith.addi", "maxsi"),
                ("i8", 16, "arith.muli", "xor"), ("i64", 2, "arith.maxsi", "add"), ("f32", 8, "arith.addf", "add"),
                ("f32", 3, "arith.addf", "mul")]

VECTOR_KERNEL = """
func.func @vops(%A: memref<64x{w}x{t}>, %B: memref<64x{w}x{t}>, %C: memref<64x{w}x{t}>, %R: memref<64x8x{t}>) {{
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %c8 = arith.constant 8 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c64, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {{
    affine.for %j = 0 to {w} step {n} {{
      %a = affine.vector_load %A[%bx, %j] : memref<64x{w}x{t}>, vector<{n}x{t}>
      %b = affine.vector_load %B[%bx, %j] : memref<64x{w}x{t}>, vector<{n}x{t}>
      %s0 = affine.load %A[%bx, %tx] : memref<64x{w}x{t}>
      %s = vector.broadcast %s0 : {t} to vector<{n}x{t}>
      %e = {op} %a, %b : vector<{n}x{t}>
      %f = {op} %e, %s : vector<{n}x{t}>
      %r = vector.reduction <{kind}>, %f : vector<{n}x{t}> into {t}
      affine.if affine_set<(d0) : (d0 == 0)>(%tx) {{
        affine.vector_store %f, %C[%bx, %j] : memref<64x{w}x{t}>, vector<{n}x{t}>
      }}
      affine.store %r, %R[%bx, %tx] : memref<64x8x{t}>
    }}
    gpu.terminator
  }}
  return
}}
"""


def _vector_kernel(t: str, n: int, op: str, kind: str) -> str:
    return VECTOR_KERNEL.format(t=t, n=n, w=8 * n, op=op, kind=kind)


@pytest.mark.parametrize("t,n,op,kind", VECTOR_TYPES)
def test_vector_types_compile_cleanly(t, n, op, kind):
    p = emit(air.parse(_vector_kernel(t, n, op, kind)))
    storage = {"f16": "__half", "bf16": "__nv_bfloat16", "f32": "float", "f64": "double", "i8": "signed char",
               "i32": "int", "i64": "long long"}[t]
    nbytes = n * {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i8": 1, "i32": 4, "i64": 8}[t]
    align = f"__align__({min(nbytes, 16)}) " if nbytes & (nbytes - 1) == 0 else ""
    assert f"struct {align}air_v{n}{t} {{ {storage} v[{n}]; }};" in p.source.splitlines()
    # j steps by n from 0 over static rows of 8 * n elements: aligned when the vector is 4, 8 or 16 bytes
    wide = f"*reinterpret_cast<const air_v{n}{t}*>(&A[" in p.source
    assert wide == (nbytes in (4, 8, 16)), p.source
    assert ("reinterpret_cast<air_v" in p.source) == wide
    assert_clean_compile(p)


def test_vector_reduction_order_and_16_bit_lanes():
    p = emit(air.parse(_vector_kernel("f16", 8, "arith.addf", "add")))
    lines = body_lines(p)
    # lanes left to right from lane 0, each step rounded to f16 as the interpreter's
    assert "float r_1 = air_round_f16(__half2float(f.v[0]) + __half2float(f.v[1]));" in lines
    assert "float r_2 = air_round_f16(r_1 + __half2float(f.v[2]));" in lines
    assert "float r = air_round_f16(r_6 + __half2float(f.v[7]));" in lines
    assert "s.v[3] = __float2half_rn(s0);" in lines
    p = emit(air.parse(_vector_kernel("i32", 4, "arith.addi", "maxsi")))
    lines = body_lines(p)
    assert "int r_1 = f.v[0] >= f.v[1] ? f.v[0] : f.v[1];" in lines
    assert "int r = r_2 >= f.v[3] ? r_2 : f.v[3];" in lines


def test_vector_errors():
    with pytest.raises(EmitError, match=r"reduction <xor> does not apply to f32"):
        emit(air.parse(_vector_kernel("f32", 4, "arith.addf", "xor")))


def _vector_inputs(module, seed: int) -> list:
    from affine_ir.testing import numpy_dtype

    rng = np.random.default_rng(seed)
    args = []
    for a in module.functions[0].args:
        dt = numpy_dtype(a.type.element_type)
        if dt.kind == "f" or str(dt) == "bfloat16":
            x = (rng.standard_normal(a.type.shape) * 3).astype(np.float32).astype(dt)
        else:
            x = rng.integers(-100, 100, a.type.shape).astype(dt)
        args.append(x)
    return args


@pytest.mark.parametrize("t,n,op,kind", VECTOR_TYPES[:3])
def test_vector_kernels_interpret(t, n, op, kind):
    """The GPU tests' reference: the interpreter runs these kernels (and writes every output)."""
    m = air.parse(_vector_kernel(t, n, op, kind))
    args = _vector_inputs(m, 1)
    out = [a.copy() for a in args]
    air.interpret(m, *out)
    assert not np.array_equal(out[2], args[2]) and not np.array_equal(out[3], args[3])


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("t,n,op,kind", VECTOR_TYPES)
def test_gpu_vector_kernels_match_the_interpreter(t, n, op, kind):
    m = air.parse(_vector_kernel(t, n, op, kind))
    args = _vector_inputs(m, 3)
    want = [a.copy() for a in args]
    air.interpret(m, *want)
    got = [a.copy() for a in args]
    gpu_run(emit(m), got)
    for k, (w, g) in enumerate(zip(want, got)):
        assert _same(w, g).all(), f"argument #{k}: interpreter {w.ravel()} vs GPU {g.ravel()}"


@gpu
@pytest.mark.gpu
@pytest.mark.parametrize("cols,off", [("260", 0), ("260", 1), ("258", 0), ("?", 0)])
def test_gpu_vector_add_matches_the_interpreter(cols, off):
    m = air.parse(_vector_add(cols, off))
    shape = (64, 260 if cols == "?" else int(cols))
    rng = np.random.default_rng(5)
    args = [rng.standard_normal(shape).astype(np.float32) for _ in range(3)]
    want = [a.copy() for a in args]
    air.interpret(m, *want)
    got = [a.copy() for a in args]
    gpu_run(emit(m), got)
    assert np.array_equal(want[2], got[2])


def test_vector_iter_args_and_dense_constants():
    src = """
    func.func @f(%A: memref<64xf32>, %R: memref<4xf32>) {
      %c1 = arith.constant 1 : index
      gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
                 threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
        %z = arith.constant dense<0.0> : vector<4xf32>
        %acc = affine.for %i = 0 to 64 step 4 iter_args(%a = %z) -> vector<4xf32> {
          %v = affine.vector_load %A[%i] : memref<64xf32>, vector<4xf32>
          %s = arith.addf %a, %v : vector<4xf32>
          affine.yield %s : vector<4xf32>
        }
        affine.vector_store %acc, %R[0] : memref<4xf32>, vector<4xf32>
        gpu.terminator
      }
      return
    }"""
    p = emit(air.parse(src))
    lines = body_lines(p)
    assert lines[:6] == ["air_v4f32 z;", *[f"z.v[{k}] = 0.0f;" for k in range(4)], "air_v4f32 a = z;"]
    assert "air_v4f32 v = *reinterpret_cast<const air_v4f32*>(&A[i]);" in lines  # i: 0 + 4k
    assert "a = s;" in lines and lines[-1] == "*reinterpret_cast<air_v4f32*>(&R[0]) = acc;"
    assert_clean_compile(p)


def test_index_division_is_32_bit_where_the_dividend_fits():
    """Divisions by constants run in 32 bits when the dividend's range (thread/block ids below
    their sizes, loop IVs within constant bounds) fits in an int, with floor semantics for
    negative values too; otherwise (a loop IV up to 2^40, an unknown size) in 64 bits."""
    p = emit(air.parse("""
    func.func @f(%A: memref<64xi64>, %n: index) {
      %c1 = arith.constant 1 : index
      %c64 = arith.constant 64 : index
      gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
                 threads(%tx, %ty, %tz) in (%sx = %c64, %sy = %c1, %sz = %c1) {
        %small = affine.apply affine_map<(d0) -> ((d0 - 40) floordiv 7 + (d0 - 3) mod 5)>(%tx)
        %s = arith.index_cast %small : index to i64
        affine.store %s, %A[%tx] : memref<64xi64>
        affine.for %k = 1099511627000 to 1099511627776 step 256 {
          %big = affine.apply affine_map<(d0, d1) -> ((d0 + d1) floordiv 3)>(%k, %tx)
          %b = arith.index_cast %big : index to i64
          affine.store %b, %A[%tx] : memref<64xi64>
        }
        %u = affine.apply affine_map<(d0)[s0] -> ((d0 + s0) mod 9)>(%tx)[%n]
        %w = arith.index_cast %u : index to i64
        affine.store %w, %A[%tx] : memref<64xi64>
        gpu.terminator
      }
      return
    }"""))
    src = p.source
    assert "air_floordiv32(tx - 5, 7) + air_umod32(tx + 2, 5) - 5" in src  # tx - 5 may be negative, tx + 2 not
    assert "air_floordiv(k + tx, 3)" in src and "air_floordiv32(k" not in src
    assert "air_mod(tx + n, 9)" in src
    assert_clean_compile(p)


def test_returning_a_loop_result_names_the_value_and_the_loop():
    """Through the GPU pipeline (gpu-map ran): the refusal says what is wrong, not 'run gpu-map'."""
    import runtime

    m = air.parse("""
func.func @ret(%A: memref<10xf32>, %n: index) -> f32 {
  %z = arith.constant 0.0 : f32
  %r = affine.for %i = 0 to %n iter_args(%s = %z) -> (f32) {
    %x = affine.load %A[%i] : memref<10xf32>
    %s2 = arith.addf %s, %x : f32
    affine.yield %s2 : f32
  }
  return %r : f32
}""", "ret.mlir")
    with pytest.raises(runtime.CompileError) as e:
        runtime.cuda.compile(m)
    msg = str(e.value)
    assert msg.startswith("ret.mlir:9:3: error: cannot emit @ret as CUDA: it returns %r, the result of 'affine.for' "
                          "at ret.mlir:4:3; a function returning a value is not supported"), msg
    assert "gpu-map" not in msg


# ----------------------------------------------------------------------------------------------
# Loops whose IV after the last iteration would pass INT64_MAX
# ----------------------------------------------------------------------------------------------

HUGE_STEP = """
func.func @huge(%S: memref<2xi64>, %N: index) {
  %c1 = arith.constant 1 : index
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c1, %sy = %c1, %sz = %c1) {
    %z = arith.constant 0 : i64
    %one = arith.constant 1 : i64
    %r = affine.for %i = 0 to %N step 1152921504606846976 iter_args(%c = %z) -> (i64) {
      %c2 = arith.addi %c, %one : i64
      affine.yield %c2 : i64
    }
    affine.store %r, %S[0] : memref<2xi64>
    %r2 = affine.for %i = 0 to 9223372036854775807 step 4611686018427387904 iter_args(%c = %z) -> (i64) {
      %c2 = arith.addi %c, %one : i64
      affine.yield %c2 : i64
    }
    affine.store %r2, %S[1] : memref<2xi64>
    gpu.terminator
  }
  return
}
"""


def test_loops_stepping_past_int64_max_count_their_iterations():
    """`iv += step` would overflow (undefined in C, an endless loop on the hardware): such loops
    iterate an unsigned trip count; ordinary step-1 loops keep the plain form."""
    p = emit(air.parse(HUGE_STEP))
    lines = body_lines(p)
    counted = [ln for ln in lines if ln.startswith("for (unsigned long long")]
    assert len(counted) == 2, "\n".join(lines)
    assert not any(re.search(r"\+= \d{18}", ln) for ln in lines)
    assert_clean_compile(p)
    plain = emit(air.parse(REDUCTION))
    assert any(ln.startswith("for (long long k = 1; k < 128; ++k)") for ln in body_lines(plain))



def test_counted_loop_whose_iv_is_not_printed_compiles_cleanly():
    """A counted loop (symbolic upper bound, step 2) whose IV only a dead op uses: the body never
    names the IV, and NVRTC must still print no warning (a random GPU program found this)."""
    m = air.parse("""
func.func @k(%A: memref<64xf32>, %n: index) {
  affine.for %i = 0 to 4 {
    affine.for %l = affine_map<(d0) -> (d0)>(%i) to %n step 2 {
      %a = affine.apply affine_map<(d0) -> (d0 + 1)>(%l)
      %x = affine.load %A[0] : memref<64xf32>
      affine.store %x, %A[1] : memref<64xf32>
    }
  }
  return
}""")
    import transforms

    p = emit(transforms.PassManager.parse("gpu-map").run(m))
    assert any(ln.startswith("for (unsigned long long l_k") for ln in body_lines(p)), p.source
    assert_clean_compile(p)

@gpu
@pytest.mark.gpu
def test_gpu_loops_stepping_past_int64_max_match_the_interpreter():
    want = np.zeros(2, np.int64)
    air.interpret(air.parse(HUGE_STEP), want, 2**63 - 1)
    got = np.zeros(2, np.int64)
    gpu_run(emit(air.parse(HUGE_STEP)), [got, 2**63 - 1])
    assert list(got) == list(want) == [8, 2]


def test_an_if_gpu_map_keeps_on_the_host_whose_nest_runs_no_iteration_is_emitted():
    """Found by the random GPU programs (seed 31): gpu-map kept an ``affine.if`` on the host for
    the nest in its branch, then removed that nest (it runs no iteration), leaving an empty host
    if that the CUDA emitter refused. gpu-map now removes such an if too (it runs nothing; the
    function was no host function with it); the program is emitted and computes what it did."""
    m = air.parse("""
    func.func @kernel(%A: memref<8xf32>, %N: index) {
      affine.if affine_set<()[s0] : (s0 - 3 >= 0)>()[%N] {
        affine.for %i = affine_map<()[s0] -> (s0 - 2)>()[%N] to affine_map<()[s0] -> (s0 - 2)>()[%N] {
          affine.for %j = 0 to 4 {
            %c = arith.constant 1.0 : f32
            affine.store %c, %A[%j] : memref<8xf32>
          }
        }
      }
      affine.for %k = 0 to 8 {
        %c = arith.constant 2.0 : f32
        affine.store %c, %A[%k] : memref<8xf32>
      }
      return
    }""")
    mapped = _gpu_map().run(m)
    (f,) = mapped.functions
    assert not any(op.name == "affine.if" for op in f.body.ops)  # its branch emptied: removed
    p = emit(mapped)
    assert len(p.kernels) == 1
    assert_clean_compile(p)
    for n in (2, 6):
        want, got = np.zeros(8, np.float32), np.zeros(8, np.float32)
        air.interpret(m, want, n)
        air.interpret(mapped, got, n)
        np.testing.assert_array_equal(got, want)
