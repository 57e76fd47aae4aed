#!/usr/bin/python3
"""TopK as a mixture-of-experts router uses it: h = x * w [N, 3, 6];
y = sum(TopK(h, 2, axis 2, largest)) + sum(TopK(h, 3, axis -1, smallest))
+ sum(Cast(indices of the top 2)) * 0.01 [N, 3] (the indices' gradient is
none, so they shift the loss only); its data (no ties); w after SGD from
float64 central finite differences of a numpy forward. At opset 13 (K an
input) or 9 (K an attribute, largest only).

usage: make_topk.py OPSET OUT.onnx DATA_DIR STEPS LR EXPECTED.npz
"""
import sys
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import batch, save_data, save_model, sgd

opset, out, data = int(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
steps, lr, expected = int(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
rng = np.random.default_rng(21)
params = {"w": rng.normal(0, 0.5, (3, 6)).astype(np.float32)}
n = helper.make_node


def topk(x, k, values, indices, largest=True):
    if opset >= 10:
        return [n("Constant", [], [f"{values}_k"], value=numpy_helper.from_array(np.array([k], np.int64))),
                n("TopK", [x, f"{values}_k"], [values, indices], axis=-1 if not largest else 2,
                  **({} if largest else {"largest": 0}))]
    return [n("TopK", [x], [values, indices], k=k, axis=2)]


def rsum(x, y):
    if opset >= 13:
        return n("ReduceSum", [x, "axes"], [y], keepdims=0)
    return n("ReduceSum", [x], [y], axes=[2], keepdims=0)


nodes = [n("Mul", ["x", "w"], ["h"])] + topk("h", 2, "top", "top_i")
nodes += [rsum("top", "a"),
          n("Cast", ["top_i"], ["top_f"], to=TensorProto.FLOAT),
          rsum("top_f", "c0"),
          n("Constant", [], ["hundredth"], value=numpy_helper.from_array(np.array(0.01, np.float32))),
          n("Mul", ["c0", "hundredth"], ["c"]), n("Add", ["a", "c"], ["ac"])]
total = "ac"
if opset >= 11:
    nodes += topk("h", 3, "low", "low_i", largest=False)
    nodes += [rsum("low", "b"), n("Add", ["ac", "b"], ["abc"])]
    total = "abc"
nodes.append(n("Identity", [total], ["y"]))
graph = helper.make_graph(nodes, "topk",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
                          [numpy_helper.from_array(params["w"], "w"),
                           numpy_helper.from_array(np.array([2], np.int64), "axes")])
save_model(graph, out, opset=opset)

x = rng.normal(0, 1, (8, 3, 6)).astype(np.float32)
t = rng.normal(0, 1, (8, 3)).astype(np.float32)
save_data(data, x=x, targets=t)


def forward(p, xb):
    h = xb * p["w"]
    order = np.argsort(-h, axis=2, kind="stable")
    top = np.take_along_axis(h, order[..., :2], 2)
    y = top.sum(2) + 0.01 * order[..., :2].sum(2)
    if opset >= 11:
        y = y + np.sort(h, axis=2)[..., :3].sum(2)
    return y


def step_loss(p, s):
    return ((forward(p, batch(x, s).astype(np.float64)) - batch(t, s)) ** 2).mean()


np.savez(expected, **sgd(params, step_loss, steps, lr))
