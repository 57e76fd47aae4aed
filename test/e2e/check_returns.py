#!/usr/bin/python3
"""Runs the `otc kernel` build of kernels/returns.mlir and checks each
result exactly against numpy (every result is exact: relu, a product of
small integers, NaN and signed infinities).

usage: check_returns.py EXE
"""
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

rng = np.random.default_rng(5)
x = rng.normal(size=8).astype(np.float32)
x[:4] = np.abs(x[:4]) + 0.5   # positive: relu_grad passes g through
x[4:] = -np.abs(x[4:]) - 0.5  # negative: relu_grad gives 0
g = (np.abs(rng.normal(size=8)) + 0.5).astype(np.float32)
a = rng.integers(-3, 4, (4, 8)).astype(np.float32)
b = rng.integers(-3, 4, (8, 5)).astype(np.float32)
with tempfile.TemporaryDirectory() as tmp:
    for i, v in enumerate([x, g, a, b]):
        np.save(Path(tmp) / f"arg{i}.npy", v)
    subprocess.run([sys.argv[1], tmp], check=True)
    got = [np.load(Path(tmp) / f"result{i}.npy") for i in range(7)]

relu_grad = np.where(x > 0, g, 0).astype(np.float32)
with np.errstate(divide="ignore", invalid="ignore"):
    want = [np.maximum(x, 0), np.maximum(x, 0), a @ b, np.maximum(a @ b, 0),
            np.full(8, np.nan, np.float32), relu_grad / np.float32(-0.0),
            np.full(8, np.nan, np.float32)]
ok = True
for i, (r, w) in enumerate(zip(got, want)):
    # Signs matter (+inf against -inf); a NaN's sign bit is the hardware's.
    finite_or_inf = ~np.isnan(w)
    same = (np.array_equal(r, w, equal_nan=True) and
            np.array_equal(np.signbit(r[finite_or_inf]), np.signbit(w[finite_or_inf])))
    print(f"{'ok' if same else 'FAIL'} result{i}: {r.ravel()[:6]} want {w.ravel()[:6]}")
    ok &= same
sys.exit(0 if ok else 1)
