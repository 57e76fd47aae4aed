#!/usr/bin/python3
"""Expand and Tile as exports write them: h = x W^T [N, 3];
r = Reshape(Expand(Unsqueeze(h, 1), [1, 2, 1]), [-1, 6]); t = Tile(h, [1, 2]);
y = r * t + Tile(Expand(b, Shape(h)), [1, 2]); its data; and W and b after
SGD from float64 central finite differences of a numpy forward.

usage: make_expand.py OUT.onnx DATA_DIR STEPS LR EXPECTED.npz
"""
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import batch, save_data, save_model, sgd

out, data, steps, lr, expected = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
rng = np.random.default_rng(11)
params = {"w": rng.normal(0, 0.5, (3, 4)).astype(np.float32), "b": rng.normal(0, 0.5, (3,)).astype(np.float32)}
n = helper.make_node
i64 = lambda name, vals: numpy_helper.from_array(np.array(vals, np.int64), name)
nodes = [n("Gemm", ["x", "w"], ["h"], transB=1),
         n("Unsqueeze", ["h", "ax1"], ["u"]),
         n("Expand", ["u", "e121"], ["e"]),
         n("Reshape", ["e", "m16"], ["r"]),
         n("Tile", ["h", "rep"], ["t"]),
         n("Mul", ["r", "t"], ["rt"]),
         n("Shape", ["h"], ["hs"]),
         n("Expand", ["b", "hs"], ["bb"]),
         n("Tile", ["bb", "rep"], ["bt"]),
         n("Add", ["rt", "bt"], ["y"])]
graph = helper.make_graph(
    nodes, "expand",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 6])],
    [numpy_helper.from_array(v, k) for k, v in params.items()] +
    [i64("ax1", [1]), i64("e121", [1, 2, 1]), i64("m16", [-1, 6]), i64("rep", [1, 2])])
save_model(graph, out, opset=13, ir_version=7)

x = rng.normal(size=(8, 4)).astype(np.float32)
t = rng.normal(size=(8, 6)).astype(np.float32)
save_data(data, x=x, targets=t)


def loss(p, xb, tb):
    h = xb @ p["w"].T
    y = np.tile(h, (1, 2)) ** 2 + np.tile(np.broadcast_to(p["b"], h.shape), (1, 2))
    return ((y - tb) ** 2).mean()


p = sgd(params, lambda p, s: loss(p, batch(x, s).astype(np.float64), batch(t, s).astype(np.float64)),
        steps, lr)
np.savez(expected, **p)
