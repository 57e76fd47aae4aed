#!/usr/bin/python3
"""Checks weights trained in 16-bit mixed precision against the float32
reference of the same 3 steps.

  check_16bit.py TRAINED.onnx EXPECTED.npz INITIAL.onnx fp16|bf16

Mixed precision rounds activations and their gradients to the 16-bit type,
so each step's update carries a relative error of a few unit roundoffs u
per rounding along its path. The bound is 32 u (2^-11 for fp16, 2^-8 for
bf16) times the model's largest update: errors in one tensor come from
sums over terms as large as that, not from its own update (as the float32
floor in make_models.py). A broken 16-bit path (a gradient lost, scaled
twice, or not applied) is off by a whole update and fails.
"""
import sys

import numpy as np
import onnx
from onnx import numpy_helper

UNIT = {"fp16": 2.0**-11, "bf16": 2.0**-8}


def initializers(path):
    return {t.name: numpy_helper.to_array(t).astype(np.float64) for t in onnx.load(path).graph.initializer}


def main():
    trained, expected, initial, precision = sys.argv[1:5]
    got, init = initializers(trained), initializers(initial)
    with np.load(expected) as z:
        want = {k: z[k].astype(np.float64) for k in z.files if not k.startswith("tol/")}
    largest = max(np.abs(w - init[k]).max() for k, w in want.items() if k in init)
    bound = 32 * UNIT[precision] * largest
    worst = max((np.abs(got[k] - w).max(), k) for k, w in want.items())
    ok = worst[0] <= bound
    print(f"{precision}: worst |w - w32| {worst[0]:.3g} at {worst[1]}, bound {bound:.3g} "
          f"(32 u x largest update {largest:.3g}): {'ok' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
