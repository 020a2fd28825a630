#!/usr/bin/python3
"""Writes the .npy fixtures for tests/core/npy_test.cpp with numpy itself (the oracle).
Run from anywhere with Debian's python: /usr/bin/python3 tests/data/npy/make_fixtures.py"""
import os

import numpy as np
from numpy.lib import format as npy_format

HERE = os.path.dirname(os.path.abspath(__file__))


def save(name, arr, version=None):
    with open(os.path.join(HERE, name), "wb") as f:
        if version is None:
            np.save(f, arr)
        else:
            npy_format.write_array(f, arr, version=version)


save("f32_2x3.npy", (np.arange(6, dtype="<f4").reshape(2, 3) * 0.5 - 1))
save("f64_be_2x2.npy", np.array([[1.5, -2.25], [1e300, -0.0]], dtype=">f8"))
save("i64_scalar.npy", np.array(-42, dtype="<i8"))
save("u8_5.npy", np.arange(5, dtype=np.uint8) * 50)
save("bool_4.npy", np.array([True, False, False, True]))
save("f16_3_v2.npy", np.array([1, -2, 65504], dtype="<f2"), version=(2, 0))
save("i32_be_3_v3.npy", np.array([1, -2, 70000], dtype=">i4"), version=(3, 0))
save("i16_be_2x2.npy", np.array([[1, -1], [300, -32768]], dtype=">i2"))
save("u16_2.npy", np.array([1, 65535], dtype="<u2"))
save("fortran_2x3.npy", np.asfortranarray(np.arange(6, dtype="<f4").reshape(2, 3)))
