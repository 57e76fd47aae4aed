#!/usr/bin/python3
"""Data movement as a transformer's QKV projection exports it: h = x W^T
(W [6, 4]) split into three [N, 2] parts, a strided slice of h (columns 1,
3, 5; the end given as INT64_MAX), and a concat of q * k, v and the slice;
its data; and the weight after SGD from float64 finite differences.

usage: make_split.py OUT.onnx DATA_DIR STEPS LR EXPECTED.npz
"""
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import batch, save_data, save_model, sgd

out, data, steps, lr, expected = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
rng = np.random.default_rng(10)
w0 = rng.normal(0, 0.5, (6, 4)).astype(np.float32)
n = helper.make_node
i64 = lambda name, vals: numpy_helper.from_array(np.array(vals, np.int64), name)
nodes = [n("Gemm", ["x", "w"], ["h"], transB=1),
         n("Split", ["h", "sizes"], ["q", "k", "v"], axis=1),
         n("Slice", ["h", "starts", "ends", "axes", "steps"], ["s"]),
         n("Mul", ["q", "k"], ["qk"]),
         n("Concat", ["qk", "v", "s"], ["y"], axis=1)]
graph = helper.make_graph(
    nodes, "split",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 7])],
    [numpy_helper.from_array(w0, "w"), i64("sizes", [2, 2, 2]), i64("starts", [1]),
     i64("ends", [np.iinfo(np.int64).max]), i64("axes", [1]), i64("steps", [2])])
save_model(graph, out, opset=13, ir_version=7)

x = rng.normal(size=(8, 4)).astype(np.float32)
t = rng.normal(size=(8, 7)).astype(np.float32)
save_data(data, x=x, targets=t)


def loss(w, xb, tb):
    h = xb @ w.T
    y = np.concatenate([h[:, 0:2] * h[:, 2:4], h[:, 4:6], h[:, 1::2]], axis=1)
    return ((y - tb) ** 2).mean()


p = sgd({"w": w0}, lambda p, s: loss(p["w"], batch(x, s).astype(np.float64), batch(t, s).astype(np.float64)),
        steps, lr)
np.savez(expected, w=p["w"])
