"""Inputs made by ``affine_ir.testing`` are arrays for every memref, rank 0 included."""

from __future__ import annotations

import numpy as np

import affine_ir as air
from affine_ir.testing import library_inputs


def test_library_inputs_rank0_memref_is_a_0d_array():
    m = air.library.reduce("sum", (7,), 0)
    args = library_inputs(m, 1)
    ranks = [a.ndim for a in args]
    assert all(isinstance(a, np.ndarray) for a in args), [type(a) for a in args]
    assert 0 in ranks

