#!/usr/bin/python3
"""Shrink, MeanVarianceNormalization, LRN and Hardmax, trained: with x
[2, 4, 3, 3] and w [4, 1, 1], h = x * w; s = Shrink(h, lambd 0.4, bias
0.1); m = MVN(s) over N, H and W; l = LRN(m, size 4, alpha 0.5, beta 0.75,
bias 2: one channel before, two after); y = l + Hardmax(l, axis 1) * v (opset 13), v [1]. Its data, and
w and v after SGD from float64 central finite differences of a numpy
forward. With `--flat`, a forward-only model of Hardmax at opset 11 (the
dims from axis 1 flattened) and its expected output.

usage: make_norm_ops.py OUT.onnx DATA_DIR STEPS LR EXPECTED.npz
       make_norm_ops.py --flat OUT.onnx DATA_DIR EXPECTED.npz
"""
import sys
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import batch, save_data, save_model, sgd

n = helper.make_node
rng = np.random.default_rng(23)


def hardmax(a, axis):
    first = np.argmax(a, axis=axis)  # the first maximum
    return (np.expand_dims(first, axis) == np.arange(a.shape[axis]).reshape(
        [-1 if d == axis else 1 for d in range(a.ndim)])).astype(a.dtype)


if sys.argv[1] == "--flat":
    out, data, expected = sys.argv[2], Path(sys.argv[3]), sys.argv[4]
    graph = helper.make_graph(
        [n("Hardmax", ["x"], ["y"], axis=1)], "flat",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3, 4])])
    save_model(graph, out, opset=11)
    x = rng.normal(0, 1, (2, 3, 4)).astype(np.float32)
    x[1, 2, 1] = x[1].max() + 1  # a row's maximum in its last block
    save_data(data, x=x)
    np.savez(expected, y=hardmax(x.reshape(2, 12), 1).reshape(2, 3, 4))
    sys.exit(0)

out, data, steps, lr, expected = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
# Channel 3 starts at w = 0: a constant slice into MVN (variance 0), whose
# gradient must stay finite.
params = {"w": (rng.normal(1, 0.5, (4, 1, 1)) * [[[1]], [[1]], [[1]], [[0]]]).astype(np.float32),
          "v": np.array([0.7], np.float32)}
nodes = [n("Mul", ["x", "w"], ["h"]),
         n("Shrink", ["h"], ["s"], lambd=0.4, bias=0.1),
         n("MeanVarianceNormalization", ["s"], ["m"]),
         n("LRN", ["m"], ["l"], size=4, alpha=0.5, beta=0.75, bias=2.0),
         n("Hardmax", ["l"], ["hm"], axis=1),
         n("Mul", ["hm", "v"], ["hv"]),
         n("Add", ["l", "hv"], ["y"])]
graph = helper.make_graph(
    nodes, "norms", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4, 3, 3])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4, 3, 3])],
    [numpy_helper.from_array(v, k) for k, v in params.items()])
save_model(graph, out, opset=13)
x = rng.normal(0, 1, (6, 4, 3, 3)).astype(np.float32)
t = rng.normal(0, 1, (6, 4, 3, 3)).astype(np.float32)
save_data(data, x=x, targets=t)


def forward(p, xb):
    h = xb * p["w"]
    s = np.where(h < -0.4, h + 0.1, np.where(h > 0.4, h - 0.1, 0))
    mean = s.mean(axis=(0, 2, 3), keepdims=True)
    var = (s * s).mean(axis=(0, 2, 3), keepdims=True) - mean * mean
    m = (s - mean) / (np.sqrt(np.maximum(var, 0)) + 1e-9)
    sq = np.pad(m * m, [(0, 0), (1, 2), (0, 0), (0, 0)])
    total = sq[:, 0:4] + sq[:, 1:5] + sq[:, 2:6] + sq[:, 3:7]
    l = m / (2.0 + 0.5 / 4 * total) ** 0.75
    return l + hardmax(l, 1) * p["v"]


def step_loss(p, s):
    return ((forward(p, batch(x, s).astype(np.float64)) - batch(t, s)) ** 2).mean()


np.savez(expected, **sgd(params, step_loss, steps, lr))
