"""``analysis.band_box``: the constant bounding box of a band's domain (exact, isl), and whether
the domain projected onto some of its loops fills their part of the box."""

from __future__ import annotations

import affine_ir as air
from analysis import band_box, perfect_band

BAND = """
func.func @f(%A: memref<40x40xf32>) {{
  %z = arith.constant 0.0 : f32
  affine.for %i = 0 to 30 {{
    affine.for %j = {bounds} {{
      affine.store %z, %A[%i, %j] : memref<40x40xf32>
    }}
  }}
  return
}}
"""


def _box(bounds: str):
    m = air.parse(BAND.format(bounds=bounds))
    nest = [op for op in m.functions[0].body.ops if op.name == "affine.for"][0]
    return band_box(perfect_band(nest))


def test_lower_triangle():
    box = _box("0 to affine_map<(d0) -> (d0 + 1)>(%i)")
    assert (box.lows, box.highs) == ((0, 0), (30, 30))
    assert box.fills([0]) and box.fills([1]) and not box.fills([0, 1])


def test_strict_upper_triangle_drops_the_empty_last_row():
    box = _box("affine_map<(d0) -> (d0 + 1)>(%i) to 30")
    assert (box.lows, box.highs) == ((0, 1), (29, 30))
    assert box.fills([0]) and box.fills([1])


def test_a_diagonal_does_not_fill_its_columns():
    box = _box("affine_map<(d0) -> (d0 * 2)>(%i) to affine_map<(d0) -> (d0 * 2 + 1)>(%i)")
    assert (box.lows, box.highs) == ((0, 0), (30, 59))
    assert box.fills([0]) and not box.fills([1])


def test_a_rectangle_fills_everything():
    box = _box("5 to 12")
    assert (box.lows, box.highs) == ((0, 5), (30, 12)) and box.fills([0, 1])


def test_symbolic_bounds_have_no_box():
    text = BAND.format(bounds="0 to %n").replace("(%A: memref<40x40xf32>)", "(%A: memref<40x40xf32>, %n: index)")
    m = air.parse(text)
    nest = [op for op in m.functions[0].body.ops if op.name == "affine.for"][0]
    assert band_box(perfect_band(nest)) is None
