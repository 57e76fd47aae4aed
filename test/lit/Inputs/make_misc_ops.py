#!/usr/bin/python3
"""Clip with a trained lower bound (a run-time scalar), ThresholdedRelu,
Mean and OneHot with trained values: h = x * w [2, 5];
m = Mean(Clip(h, lo, 0.8), ThresholdedRelu(h, 0.3), h);
y = m + ReduceSum(OneHot(ids, 5, v), axis 1) with ids [2, 3] an int64 input
(negative ones counted from the end). Its data, and w, lo and v after SGD
from float64 central finite differences of a numpy forward.

usage: make_misc_ops.py OUT.onnx DATA_DIR STEPS LR EXPECTED.npz
"""
import sys
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import batch, save_data, save_model, sgd

out, data, steps, lr, expected = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
rng = np.random.default_rng(19)
params = {"w": rng.normal(0, 1, (5,)).astype(np.float32), "lo": np.array(-0.4, np.float32),
          "v": np.array([0.2, 1.3], np.float32)}
n = helper.make_node
f32 = lambda name, v: n("Constant", [], [name], value=numpy_helper.from_array(np.array(v, np.float32)))
nodes = [f32("hi", 0.8), f32("depth", 5),
         n("Constant", [], ["one"], value=numpy_helper.from_array(np.array([1], np.int64))),
         n("Mul", ["x", "w"], ["h"]),
         n("Clip", ["h", "lo", "hi"], ["c"]),
         n("ThresholdedRelu", ["h"], ["t"], alpha=0.3),
         n("Mean", ["c", "t", "h"], ["m"]),
         n("OneHot", ["ids", "depth", "v"], ["oh"]),
         n("ReduceSum", ["oh", "one"], ["s"], keepdims=0),
         n("Add", ["m", "s"], ["y"])]
graph = helper.make_graph(
    nodes, "misc",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 5]),
     helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 3])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 5])],
    [numpy_helper.from_array(v, k) for k, v in params.items()])
save_model(graph, out, opset=13)

x = rng.normal(0, 1, (8, 5)).astype(np.float32)
ids = rng.integers(-5, 5, (8, 3)).astype(np.int64)
t = rng.normal(0, 1, (8, 5)).astype(np.float32)
save_data(data, x=x, ids=ids, targets=t)


def forward(p, xb, ib):
    h = xb * p["w"]
    c = np.minimum(np.maximum(h, p["lo"]), 0.8)
    th = np.where(h > 0.3, h, 0)
    hot = np.where(np.where(ib < 0, ib + 5, ib)[..., None] == np.arange(5), p["v"][1], p["v"][0])
    return (c + th + h) / 3 + hot.sum(1)


def step_loss(p, s):
    return ((forward(p, batch(x, s).astype(np.float64), batch(ids, s)) - batch(t, s)) ** 2).mean()


np.savez(expected, **sgd(params, step_loss, steps, lr))
