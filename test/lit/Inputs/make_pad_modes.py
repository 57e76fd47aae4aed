#!/usr/bin/python3
"""Pad's opset 18-19 forms: the axes input, and the edge, reflect and wrap
modes, with a crop; a constant pad whose value is a trained scalar.
h = x * s [2, 2, 3, 4]; p1 = Pad(h, [1, 2], axes [2], edge);
p2 = Pad(p1, [2, -1], axes [-1], reflect); p3 = Pad(p2, [1, 3], axes [3],
wrap); y = Pad(p3, [0, 1, 1, 0], c, axes [1, 2]) [2, 3, 7, 9]. Its data,
and s and c after SGD from float64 central finite differences of a numpy
forward.

usage: make_pad_modes.py OUT.onnx DATA_DIR STEPS LR EXPECTED.npz
"""
import sys
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import batch, save_data, save_model, sgd

out, data, steps, lr, expected = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
rng = np.random.default_rng(17)
params = {"s": rng.normal(1, 0.3, (3, 4)).astype(np.float32), "c": np.array(0.3, np.float32)}
n = helper.make_node
ints = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
nodes = [n("Mul", ["x", "s"], ["h"]),
         n("Pad", ["h", "pads1", "", "axes1"], ["p1"], mode="edge"),
         n("Pad", ["p1", "pads2", "", "axes2"], ["p2"], mode="reflect"),
         n("Pad", ["p2", "pads3", "", "axes3"], ["p3"], mode="wrap"),
         n("Pad", ["p3", "pads4", "c", "axes4"], ["y"])]
graph = helper.make_graph(
    nodes, "pad_modes",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 2, 3, 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 7, 9])],
    [numpy_helper.from_array(params["s"], "s"), numpy_helper.from_array(params["c"], "c"),
     ints("pads1", [1, 2]), ints("axes1", [2]), ints("pads2", [2, -1]), ints("axes2", [-1]),
     ints("pads3", [1, 3]), ints("axes3", [3]), ints("pads4", [0, 1, 1, 0]), ints("axes4", [1, 2])])
# libonnx 1.12 checks opset 17 at most: otc checks Pad-19 as Pad-13.
save_model(graph, out, opset=19, check=False)

x = rng.normal(0, 1, (8, 2, 3, 4)).astype(np.float32)
t = rng.normal(0, 1, (8, 3, 7, 9)).astype(np.float32)
save_data(data, x=x, targets=t)


def forward(p, xb):
    h = xb * p["s"]
    p1 = np.pad(h, ((0, 0), (0, 0), (1, 2), (0, 0)), mode="edge")
    p2 = np.pad(p1, ((0, 0), (0, 0), (0, 0), (2, 0)), mode="reflect")[..., :-1]
    p3 = np.pad(p2, ((0, 0), (0, 0), (0, 0), (1, 3)), mode="wrap")
    c = p["c"]
    y = np.full((2, 3, 7, 9), 0.0) + c
    y[:, :2, 1:, :] = p3
    return y


def step_loss(p, s):
    return ((forward(p, batch(x, s).astype(np.float64)) - batch(t, s)) ** 2).mean()


np.savez(expected, **sgd(params, step_loss, steps, lr))
