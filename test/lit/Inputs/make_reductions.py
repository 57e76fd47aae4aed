#!/usr/bin/python3
"""The reductions ONNX has beyond sum and mean, at opset 18 (axes as an
input) and 13 (axes as an attribute): h = x * w [N, 3, 4];
y = ReduceMax(h, [2]) + ReduceMin(h, [2]) + ReduceL1(h, [2]) + ReduceL2(h, [2])
  + ReduceSumSquare(h, [2]) + ReduceLogSumExp(h, [2]) + ReduceLogSum(h * h + 1, [2])
[N, 3]; its data (with a tie for the maximum in sample 0); and w after SGD
from float64 central finite differences of a numpy forward, the tie's
gradient split evenly as PyTorch's amax does.

usage: make_reductions.py OPSET OUT.onnx DATA_DIR STEPS LR EXPECTED.npz
"""
import sys
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import batch, save_data, save_model, sgd

opset, out, data = int(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
steps, lr, expected = int(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
rng = np.random.default_rng(13)
params = {"w": rng.normal(0, 0.5, (3, 4)).astype(np.float32)}
params["w"][0, 1:3] = 0.7  # with x[0, 0, 1:3] = 3: a tie for the maximum
n = helper.make_node


def reduce(op, x, y):
    if opset >= 18:
        return n(op, [x, "axes"], [y], keepdims=0)
    return n(op, [x], [y], axes=[2], keepdims=0)


nodes = [n("Constant", [], ["one"], value=numpy_helper.from_array(np.array(1, np.float32))),
         n("Mul", ["x", "w"], ["h"]), n("Mul", ["h", "h"], ["hh"]), n("Add", ["hh", "one"], ["hh1"]),
         reduce("ReduceMax", "h", "a"), reduce("ReduceMin", "h", "b"), reduce("ReduceL1", "h", "c"),
         reduce("ReduceL2", "h", "d"), reduce("ReduceSumSquare", "h", "e"),
         reduce("ReduceLogSumExp", "h", "f"), reduce("ReduceLogSum", "hh1", "g")]
total = "a"
for k, v in enumerate("bcdefg"):
    nodes.append(n("Add", [total, v], [f"s{k}"]))
    total = f"s{k}"
nodes.append(n("Identity", [total], ["y"]))
inits = [numpy_helper.from_array(params["w"], "w"), numpy_helper.from_array(np.array([2], np.int64), "axes")]
graph = helper.make_graph(nodes, "reductions",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])], inits)
save_model(graph, out, opset=opset, check=opset <= 17)  # libonnx 1.12 stops at opset 17

x = rng.normal(0, 1, (8, 3, 4)).astype(np.float32)
x[0, 0] = [0.1, 3.0, 3.0, -0.2]
t = rng.normal(0, 1, (8, 3)).astype(np.float32)
save_data(data, x=x, targets=t)


def forward(p, xb):
    h = xb * p["w"]
    m = h.max(2, keepdims=True)
    lse = np.log(np.exp(h - m).sum(2)) + m[..., 0]
    return (h.max(2) + h.min(2) + np.abs(h).sum(2) + np.sqrt((h * h).sum(2)) + (h * h).sum(2)
            + lse + np.log((h * h + 1).sum(2)))


def step_loss(p, s):
    return ((forward(p, batch(x, s).astype(np.float64)) - batch(t, s)) ** 2).mean()


np.savez(expected, **sgd(params, step_loss, steps, lr))
