#!/usr/bin/python3
"""CumSum at run time and host folds of shape arithmetic: h = x * w [N, 5];
y = CumSum(h, axis 1, exclusive, reverse) * CumSum(h, axis 1) + f, where
f = Cast(CumSum(Mod(Slice(Range(0, 5), step -1), 3))) = [1, 1, 3, 4, 4]
folds on the host; an int64 path at run time, p = CumSum(Cast(x > 0)) * 2,
enters through Cast(p) as a factor. Its data, and w after SGD from float64
central finite differences of a numpy forward.

usage: make_scan.py OUT.onnx DATA_DIR STEPS LR EXPECTED.npz
"""
import sys
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import batch, save_data, save_model, sgd

out, data, steps, lr, expected = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
rng = np.random.default_rng(12)
params = {"w": rng.normal(0, 0.5, (5,)).astype(np.float32)}
n = helper.make_node
i64 = lambda name, vals: numpy_helper.from_array(np.array(vals, np.int64), name)
nodes = [n("Mul", ["x", "w"], ["h"]),
         n("CumSum", ["h", "one"], ["back"], exclusive=1, reverse=1),
         n("CumSum", ["h", "one"], ["fwd"]),
         n("Mul", ["back", "fwd"], ["bf"]),
         n("Range", ["zero", "five", "one"], ["r"]),
         n("Slice", ["r", "m1", "lowest", "zero1", "m1"], ["rev"]),
         n("Mod", ["rev", "three"], ["md"]),
         n("CumSum", ["md", "zero"], ["cs"]),
         n("Cast", ["cs"], ["f"], to=TensorProto.FLOAT),
         n("Greater", ["x", "zerof"], ["pos"]),
         n("Cast", ["pos"], ["posi"], to=TensorProto.INT64),
         n("CumSum", ["posi", "one"], ["pc"]),
         n("Mul", ["pc", "two"], ["p2"]),
         n("Add", ["p2", "onei"], ["p"]),
         n("Cast", ["p"], ["pf"], to=TensorProto.FLOAT),
         n("Mul", ["bf", "pf"], ["bfp"]),
         n("Add", ["bfp", "f"], ["y"])]
inits = [numpy_helper.from_array(params["w"], "w"), i64("one", 1), i64("zero", 0), i64("five", 5),
         i64("m1", [-1]), i64("lowest", [np.iinfo(np.int64).min]), i64("zero1", [0]),
         i64("three", 3), i64("two", 2), i64("onei", 1),
         numpy_helper.from_array(np.array(0, np.float32), "zerof")]
graph = helper.make_graph(nodes, "scan", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 5])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])], inits)
save_model(graph, out, opset=14)

x = rng.normal(0, 1, (8, 5)).astype(np.float32)
t = rng.normal(0, 1, (8, 5)).astype(np.float32)
save_data(data, x=x, targets=t)
folded = np.cumsum(np.mod(np.arange(5)[::-1], 3)).astype(np.float64)


def forward(p, xb):
    h = xb * p["w"]
    back = np.flip(np.cumsum(np.flip(h, 1), 1), 1) - h  # exclusive, reverse
    fwd = np.cumsum(h, 1)
    pf = np.cumsum(xb > 0, 1) * 2 + 1
    return back * fwd * pf + folded


def step_loss(p, s):
    return ((forward(p, batch(x, s).astype(np.float64)) - batch(t, s)) ** 2).mean()


np.savez(expected, **sgd(params, step_loss, steps, lr))
