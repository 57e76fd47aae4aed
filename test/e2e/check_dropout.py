#!/usr/bin/python3
"""Checks an `otc kernel` build of kernels/dropout_f32.mlir against an
independent numpy implementation of Philox4x32-10 (Salmon et al., SC'11):
the mask must be the same bit for bit, the kept values x / (1 - p) exactly
(as float32 multiplies by the rounded scale), the rest 0, and the kept
fraction within 5 standard deviations of 1 - p.

usage: check_dropout.py EXE
"""
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from philox_reference import uniform  # noqa: E402

ratio = 0.3
x = np.random.default_rng(12).normal(size=(64, 50)).astype(np.float32)
with tempfile.TemporaryDirectory() as tmp:
    np.save(Path(tmp) / "arg0.npy", x)
    subprocess.run([sys.argv[1], tmp], check=True)
    y, mask = np.load(Path(tmp) / "result0.npy"), np.load(Path(tmp) / "result1.npy")

keep = uniform(0, 0, 5, np.arange(x.size)).reshape(x.shape) >= np.float32(ratio)
want = np.where(keep, x * np.float32(1 / (1 - ratio)), np.float32(0))
n, kept = x.size, int(keep.sum())
sigma = (n * ratio * (1 - ratio)) ** 0.5
checks = {
    "mask equals numpy's Philox": np.array_equal(mask, keep),
    "values are x / (1 - p) or 0": np.array_equal(y, want),
    f"kept {kept} of {n} within 5 sigma of {n * (1 - ratio):.0f}": abs(kept - n * (1 - ratio)) < 5 * sigma,
}
for name, ok in checks.items():
    print(("ok " if ok else "FAIL ") + name)
sys.exit(0 if all(checks.values()) else 1)
