#!/usr/bin/python3
"""BatchNormalization in inference mode (running statistics as buffers),
Trilu on a run-time tensor and ConstantOfShape:
  h = Reshape(x @ w, [N, 1, 3, 3])
  y = Flatten(Trilu(BN(h; gamma, beta, mean, var), lower) + ConstantOfShape([1, 1, 3, 3], 0.5))
its data, and the parameters after SGD from float64 finite differences; the
running statistics must come back unchanged.

usage: make_bn_inference.py OUT.onnx DATA_DIR STEPS LR EXPECTED.npz
"""
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import batch, save_data, save_model, sgd

out, data, steps, lr, expected = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
rng = np.random.default_rng(21)
params = {"w": rng.normal(0, 0.5, (4, 9)).astype(np.float32),
          "gamma": np.array([1.3], np.float32), "beta": np.array([-0.2], np.float32)}
stats = {"mean": np.array([0.1], np.float32), "var": np.array([0.8], np.float32)}
n = helper.make_node
i64 = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
nodes = [n("MatMul", ["x", "w"], ["m"]), n("Reshape", ["m", "s4"], ["h"]),
         n("BatchNormalization", ["h", "gamma", "beta", "mean", "var"], ["b"], epsilon=1e-3),
         n("Trilu", ["b"], ["t"], upper=0),
         n("ConstantOfShape", ["s1"], ["c"],
           value=numpy_helper.from_array(np.array([0.5], np.float32))),
         n("Add", ["t", "c"], ["a"]), n("Flatten", ["a"], ["y"])]
graph = helper.make_graph(
    nodes, "bn_inference",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 9])],
    [numpy_helper.from_array(v, k) for k, v in {**params, **stats}.items()] +
    [i64("s4", [-1, 1, 3, 3]), i64("s1", [1, 1, 3, 3])])
save_model(graph, out, opset=15, ir_version=8)

x = rng.normal(size=(8, 4)).astype(np.float32)
t = rng.normal(size=(8, 9)).astype(np.float32)
lower = np.tril(np.ones((3, 3)))
save_data(data, x=x, targets=t)


def loss(p, xb, tb):
    h = (xb @ p["w"]).reshape(-1, 3, 3)
    b = (h - stats["mean"][0]) / np.sqrt(stats["var"][0] + 1e-3) * p["gamma"][0] + p["beta"][0]
    y = (b * lower + 0.5).reshape(-1, 9)
    return ((y - tb) ** 2).mean()


p = sgd(params, lambda p, s: loss(p, batch(x, s).astype(np.float64), batch(t, s).astype(np.float64)),
        steps, lr)
np.savez(expected, **p, **stats)
