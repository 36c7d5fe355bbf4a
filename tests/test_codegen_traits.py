"""The printers and the runtime ask what an op is (traits, effects, declared class facts), so an op
class declared here with traits or effects only is placed, refused and judged the way its
declarations say; an op without a lowering gets an EmitError naming it and its location."""

from __future__ import annotations

import pytest

import affine_ir as air
from affine_ir.core import OP_REGISTRY, Operation
from affine_ir.dialects import arith
from affine_ir.dialects.affine_apply import AffineMapValueOp
from affine_ir.traits import EffectKind, IsTerminator, MemoryEffect, Pure, ReturnLike
from codegen import cuda, llvm
from codegen.cuda import HostRole, host_role, host_value
from runtime.arg_checks import written_arguments


class _TestOp(Operation):
    @classmethod
    def from_generic(cls, operands, result_types, attributes, location):
        return cls(operands, result_types, attributes, location=location)


class _PureOp(_TestOp):
    name = "test.pure"
    traits = frozenset({Pure})


class _FreesOp(_TestOp):
    name = "test.frees"

    def memory_effects(self):
        return (MemoryEffect(EffectKind.FREE, self.operands[0]),)


class _AllocatesOp(_TestOp):
    name = "test.allocates"

    def memory_effects(self):
        return (MemoryEffect(EffectKind.ALLOCATE, self.results[0]),)


class _WritesOp(_TestOp):
    name = "test.writes"

    def memory_effects(self):
        return (MemoryEffect(EffectKind.WRITE, self.operands[0]),)


class _ReadsOp(_TestOp):
    name = "test.reads"

    def memory_effects(self):
        return (MemoryEffect(EffectKind.READ, self.operands[0]),)


class _UnknownOp(_TestOp):
    name = "test.unknown"  # declares nothing: its effects are unknown


class _ReturnsOp(_TestOp):
    name = "test.returns"
    traits = frozenset({IsTerminator, ReturnLike})


TEST_OPS = (_PureOp, _FreesOp, _AllocatesOp, _WritesOp, _ReadsOp, _UnknownOp, _ReturnsOp)


@pytest.fixture(autouse=True, scope="module")
def _registered_test_ops():
    for cls in TEST_OPS:
        OP_REGISTRY[cls.name] = cls
    yield
    for cls in TEST_OPS:
        OP_REGISTRY.pop(cls.name, None)


HOST = """
func.func @f(%A: memref<8xf32>) {{
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  {before}
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {{
    {inside}
    gpu.terminator
  }}
  {after}
  return
}}
"""


def _host(before: str = "", inside: str = "", after: str = "") -> air.ModuleOp:
    return air.parse(HOST.format(before=before, inside=inside, after=after), "input.mlir")


def test_host_roles_follow_the_traits_and_effects():
    m = _host(before='%p = "test.pure"(%c1) : (index) -> index\n'
                     '%t = "test.allocates"() : () -> memref<4xf32>\n'
                     '%s = memref.alloca() : memref<4xf32>\n'
                     '%g = memref.alloc() : memref<4xf32>\n'
                     '%a = affine.min affine_map<(d0) -> (d0, 3)>(%c8)',
              after='"test.frees"(%t) : (memref<4xf32>) -> ()\n"test.unknown"(%A) : (memref<8xf32>) -> ()\n'
                    'memref.dealloc %g : memref<4xf32>')
    roles = {op.name: host_role(op) for op in m.functions[0].body.ops}
    assert roles == {"arith.constant": HostRole.VALUE, "test.pure": None, "test.allocates": HostRole.ALLOCATE,
                     "memref.alloca": None, "memref.alloc": HostRole.ALLOCATE, "affine.min": HostRole.VALUE,
                     "gpu.launch": HostRole.LAUNCH, "test.frees": HostRole.FREE, "test.unknown": None,
                     "memref.dealloc": HostRole.FREE, "func.return": HostRole.RETURN}
    assert host_role(_ReturnsOp([], [])) is HostRole.RETURN


def test_host_values_are_computed_by_the_ops():
    ops = {op.name: op for op in _host(before="%a = affine.min affine_map<(d0) -> (d0, 3)>(%c8)\n"
                                              "%b = affine.max affine_map<(d0) -> (d0, 3)>(%c8)\n"
                                              "%d = affine.apply affine_map<(d0) -> (d0 * 2 + 1)>(%c8)"
                                       ).functions[0].body.ops}
    c8 = ops["arith.constant"].results[0]  # the last constant: %c8
    values = {c8: host_value(ops["arith.constant"], {})}
    assert values[c8] == 8
    assert [host_value(ops[n], values) for n in ("affine.min", "affine.max", "affine.apply")] == [3, 8, 17]
    assert all(isinstance(ops[n], AffineMapValueOp) for n in ("affine.min", "affine.max", "affine.apply"))


def test_a_new_freeing_op_stays_on_the_host():
    program = cuda.emit(_host(before='%t = "test.allocates"() : () -> memref<4xf32>',
                              after='"test.frees"(%t) : (memref<4xf32>) -> ()'))
    assert len(program.kernels) == 1


@pytest.mark.parametrize("before, line, what", [
    ('%p = "test.pure"(%c1) : (index) -> index', 5, "'test.pure'"),
    ("%s = memref.alloca() : memref<4xf32>", 5, "'memref.alloca'"),
])
def test_an_op_the_host_cannot_run_is_refused_where_it_is(before, line, what):
    with pytest.raises(cuda.EmitError) as e:
        cuda.emit(_host(before=before))
    assert f"cannot emit @f as CUDA: {what} at the top level of a host function is not mapped to the GPU" in \
        e.value.message
    assert (e.value.location.file, e.value.location.line) == ("input.mlir", line)


def test_a_new_op_without_a_cuda_lowering_is_named_with_its_location():
    with pytest.raises(cuda.EmitError) as e:
        cuda.emit(_host(inside='%p = "test.pure"(%tx) : (index) -> index\n'
                               '%v = arith.index_cast %p : index to i32'))
    assert e.value.message == "cannot emit 'test.pure' as CUDA: no CUDA lowering for this op"
    assert (e.value.location.file, e.value.location.line) == ("input.mlir", 8)


def test_a_new_op_without_a_cpu_lowering_is_named_with_its_location():
    m = air.parse('func.func @f(%n: index) -> index {\n'
                  '  %p = "test.pure"(%n) : (index) -> index\n'
                  '  return %p : index\n}', "cpu.mlir")
    with pytest.raises(llvm.EmitError) as e:
        llvm.emit(m)
    assert "cannot compile 'test.pure' for the CPU: no CPU lowering for this op" in e.value.message
    assert (e.value.location.file, e.value.location.line) == ("cpu.mlir", 2)


@pytest.mark.parametrize("op_text, written", [
    ('"test.writes"(%A) : (memref<8xf32>) -> ()', True),
    ('"test.frees"(%A) : (memref<8xf32>) -> ()', True),
    ('"test.unknown"(%A) : (memref<8xf32>) -> ()', True),
    ('%r = "test.reads"(%A) : (memref<8xf32>) -> f32', False),
    ('%c0 = arith.constant 0 : index\n%d = memref.dim %A, %c0 : memref<8xf32>', False),
    ('%v = affine.load %A[0] : memref<8xf32>', False),
    ('%z = arith.constant 0.0 : f32\naffine.store %z, %A[0] : memref<8xf32>', True),
])
def test_written_arguments_follow_the_effects(op_text, written):
    m = air.parse(f"func.func @f(%A: memref<8xf32>, %B: memref<8xf32>) {{\n{op_text}\nreturn\n}}")
    assert written_arguments(m.functions[0]) == (frozenset({0}) if written else frozenset())


def test_arith_ops_declare_how_they_read_integers():
    unsigned = {cls.name for cls in arith.OPS.values() if getattr(cls, "unsigned", False)}
    assert unsigned == {"arith.divui", "arith.remui", "arith.maxui", "arith.minui", "arith.shrui", "arith.uitofp",
                        "arith.fptoui", "arith.extui"}
    assert arith.ExtsiOp.unsigned is False and arith.DivsiOp.unsigned is False and arith.SitofpOp.unsigned is False


def test_llvm_extension_follows_the_declared_signedness():
    m = air.parse("func.func @f(%x: i8) -> (i32, i32) {\n"
                  "  %u = arith.extui %x : i8 to i32\n  %s = arith.extsi %x : i8 to i32\n"
                  "  return %u, %s : i32, i32\n}")
    text = str(llvm.emit(m))
    assert "zext i8" in text and "sext i8" in text


HOST_PROGRAM = """
func.func @f(%A: memref<8xf32>, %n: index) {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  %g = affine.min affine_map<(d0) -> (d0, 3)>(%n)
  %t = memref.alloc() : memref<4xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %g, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %v = affine.load %t[%tx] : memref<4xf32>
    affine.store %v, %A[%tx] : memref<8xf32>
    gpu.terminator
  }
  memref.dealloc %t : memref<4xf32>
  return
}
"""


class _FakeDriver:
    """Stands for runtime.cuda_driver: allocations get made-up pointers, launches are recorded."""

    def __init__(self):
        self.launches, self.buffers = [], []
        driver = self

        class DeviceBuffer:
            def __init__(self, nbytes):
                self.nbytes, self.ptr, self.freed = nbytes, 0x9000 + 0x100 * len(driver.buffers), False
                driver.buffers.append(self)

            @classmethod
            def alloc(cls, nbytes):
                return cls(nbytes)

            def free(self):
                self.freed = True

        self.DeviceBuffer = DeviceBuffer

    def launch(self, fn, grid, block, args, shared_bytes=0):
        self.launches.append((fn, grid, block, args))


@pytest.mark.parametrize("keep_temporaries", [False, True])
def test_the_cuda_host_side_runs_what_host_role_says(keep_temporaries):
    from types import SimpleNamespace

    from runtime.cuda import CudaExecutable

    m = air.parse(HOST_PROGRAM)
    program = cuda.emit(m)
    exe = CudaExecutable(m, m.functions[0], program, image=None)
    exe._functions[program.kernels[0].name] = "kernel"  # no GPU: the kernel is not loaded
    A, n = m.functions[0].args
    drv, temporaries = _FakeDriver(), []
    exe._run_host({A: SimpleNamespace(ptr=0x1000, dims=(8,)), n: 5}, temporaries, drv, keep_temporaries)
    (buf,) = drv.buffers
    assert buf.nbytes == 16
    ((fn, grid, block, args),) = drv.launches
    assert (fn, grid, block) == ("kernel", (3, 1, 1), (4, 1, 1))
    assert sorted(ptr for ctype, ptr in args if ctype == "void*") == [0x1000, buf.ptr]
    assert not buf.freed and (temporaries == [buf]) is keep_temporaries
    # the dealloc gives the buffer back to the executable's pool (the next call reuses it); bind's
    # kept temporaries are freed by its caller
    assert (exe._pool.get(16) == [buf]) is not keep_temporaries
