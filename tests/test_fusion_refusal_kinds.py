"""Fusion decides on the kind of a refusal, never on its wording (transforms/fusion/fuse.py).

A slice failure carries a :class:`analysis.SliceErrorKind`; fusion maps it to a
:class:`transforms.RefusalKind` and stops its search over depths on DEPTH_EXCEEDS and
NO_DEPENDENCE. Rewording every slice message leaves each decision as it was; keeping the
wording but changing the kind changes the decision.
"""

from __future__ import annotations

import pytest

import affine_ir as air
import analysis
from analysis import SliceError, SliceErrorKind
from transforms import PassManager, RefusalKind, TransformError
from transforms.fusion import fuse_loops, fusion_refusals

# The consumer loads T outside its inner loop: only one consumer loop encloses the accesses
# that depend on the producer, so depth 2 exceeds (and the depth search ends there).
SHALLOW_READ = """
func.func @f(%A: memref<8xf32>, %B: memref<8x4xf32>) {
  %T = memref.alloc() : memref<8xf32>
  affine.for %i = 0 to 8 {
    %a = affine.load %A[%i] : memref<8xf32>
    affine.store %a, %T[%i] : memref<8xf32>
  }
  affine.for %i2 = 0 to 8 {
    %t = affine.load %T[%i2] : memref<8xf32>
    affine.for %j = 0 to 4 {
      affine.store %t, %B[%i2, %j] : memref<8x4xf32>
    }
  }
  return
}
"""

# Two nests with no memref in common: no dependence at any depth.
UNRELATED = """
func.func @g(%A: memref<4x4xf32>, %B: memref<4x4xf32>, %C: memref<4x4xf32>) {
  affine.for %i = 0 to 4 {
    affine.for %j = 0 to 4 {
      %a = affine.load %A[%i, %j] : memref<4x4xf32>
      affine.store %a, %B[%i, %j] : memref<4x4xf32>
    }
  }
  affine.for %i2 = 0 to 4 {
    affine.for %j2 = 0 to 4 {
      %a2 = affine.load %A[%i2, %j2] : memref<4x4xf32>
      affine.store %a2, %C[%i2, %j2] : memref<4x4xf32>
    }
  }
  return
}
"""


def patch_slice_errors(monkeypatch, kind_of=lambda kind: kind) -> None:
    """Make every SliceError of compute_slice say something else, of kind ``kind_of(kind)``."""
    real = analysis.compute_slice

    def compute_slice(*args, **kwargs):
        try:
            return real(*args, **kwargs)
        except SliceError as e:
            raise SliceError(f"reworded ({len(e.reason)} characters)", kind_of(e.kind)) from None

    monkeypatch.setattr(analysis, "compute_slice", compute_slice)


def decision(text: str) -> tuple[list[int], dict[int, RefusalKind], list[str]]:
    """The legal depths, the refused depths with their kinds, and the refusal messages."""
    src, dst = [op for op in air.parse(text).functions[0].body.ops if op.name == "affine.for"]
    legal, refusals = fusion_refusals(src, dst)
    return [c.depth for c in legal], {d: r.kind for d, r in refusals.items()}, [r.reason for r in refusals.values()]


def test_depth_exceeds_ends_the_search_whatever_the_message(monkeypatch):
    src, dst = [op for op in air.parse(SHALLOW_READ).functions[0].body.ops if op.name == "affine.for"]
    with pytest.raises(SliceError) as info:
        analysis.compute_slice(src, dst, 2)
    assert info.value.kind is SliceErrorKind.DEPTH_EXCEEDS
    assert decision(SHALLOW_READ)[:2] == ([1], {})
    fused = str(PassManager.parse("affine-loop-fusion").run(air.parse(SHALLOW_READ)))
    patch_slice_errors(monkeypatch)
    assert decision(SHALLOW_READ)[:2] == ([1], {})
    assert str(PassManager.parse("affine-loop-fusion").run(air.parse(SHALLOW_READ))) == fused


def test_depth_exceeds_message_of_another_kind_does_not_end_the_search(monkeypatch):
    patch_slice_errors(monkeypatch, lambda kind: SliceErrorKind.BOUNDS)
    legal, kinds, reasons = decision(SHALLOW_READ)
    assert legal == [1] and kinds == {2: RefusalKind.UNSUPPORTED}
    assert reasons[0].startswith("reworded")


def test_no_dependence_ends_the_search_whatever_the_message(monkeypatch):
    legal, kinds, reasons = decision(UNRELATED)
    assert legal == [] and kinds == {1: RefusalKind.NO_DEPENDENCE} and reasons[0].startswith("no dependence")
    patch_slice_errors(monkeypatch)
    legal, kinds, reasons = decision(UNRELATED)
    assert legal == [] and kinds == {1: RefusalKind.NO_DEPENDENCE} and reasons[0].startswith("reworded")
    patch_slice_errors(monkeypatch, lambda kind: SliceErrorKind.NOT_AFFINE)
    assert decision(UNRELATED)[1] == {1: RefusalKind.UNSUPPORTED, 2: RefusalKind.UNSUPPORTED}


def test_transform_error_carries_the_kind():
    src, dst = [op for op in air.parse(UNRELATED).functions[0].body.ops if op.name == "affine.for"]
    with pytest.raises(TransformError) as info:
        fuse_loops(src, dst)
    assert info.value.kind is RefusalKind.NO_DEPENDENCE
    assert info.value.reason.endswith("the consumer loads nothing the producer stores")
    assert TransformError("p", "r").kind is RefusalKind.OTHER
