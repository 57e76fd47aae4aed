#!/usr/bin/python3
"""Writes one folder per malformed .npy case into OUT: OUT/CASE/x.npy is the
broken file, OUT/CASE/labels.npy a good one. Each header here once aborted the
training executable with an uncaught exception or made it read out of bounds.

usage: make_bad_npy.py OUT
"""
import os
import sys

import numpy as np

out = sys.argv[1]


def npy(header, data=b""):
    """A version-1 .npy file with `header` as its dict text."""
    text = header.encode("latin1")
    pad = 64 - (10 + len(text) + 1) % 64
    text += b" " * pad + b"\n"
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text + data


good_x = np.zeros((8, 6), np.float32).tobytes()
cases = {
    "structured": npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (8,), }", good_x),
    "huge_itemsize": npy("{'descr': '<f99999999999', 'fortran_order': False, 'shape': (8, 6), }"),
    "bad_itemsize": npy("{'descr': '<fx', 'fortran_order': False, 'shape': (8, 6), }"),
    "negative_shape": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-8, 6), }"),
    "huge_shape": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999, 6), }"),
    "text_shape": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (eight, 6), }"),
    "list_shape": npy("{'descr': '<f4', 'fortran_order': False, 'shape': [8, 6], }", good_x),
    "unclosed": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (8, 6), ", good_x),
    # The product 2^80 wraps int64; the old reader allocated the wrapped size.
    "overflow": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }", good_x),
    "truncated": npy("{'descr': '<f4', 'fortran_order': False, 'shape': (8, 6), }", good_x[:100]),
    "header_len": b"\x93NUMPY\x01\x00\xff\xff{'descr'",
}
nan = np.zeros((8, 6), np.float32)
nan[3, 2] = np.nan
for name, data in cases.items():
    os.makedirs(os.path.join(out, name), exist_ok=True)
    with open(os.path.join(out, name, "x.npy"), "wb") as f:
        f.write(data)
    np.save(os.path.join(out, name, "labels.npy"), np.zeros(8, np.int64))
os.makedirs(os.path.join(out, "nan"), exist_ok=True)
np.save(os.path.join(out, "nan", "x.npy"), nan)
np.save(os.path.join(out, "nan", "labels.npy"), np.zeros(8, np.int64))
