#!/usr/bin/python3
"""A partial rotary embedding whose rotary part is all of the head, as
CodeGen and GPT-NeoX export it: h = x W^T (W [4, 4]), its pass-through part
h[:, 4:] is an empty Slice, and the Concat of tanh(h) and that empty part
is y. MODE `concat`; MODE `add` adds the empty part to h's first column
(a broadcast to no elements) instead, which otc refuses. Its data, and W after SGD from float64 finite
differences.

usage: make_empty_slice.py MODE OUT.onnx DATA_DIR STEPS LR EXPECTED.npz
"""
import sys
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import batch, save_data, save_model, sgd

mode, out, data = sys.argv[1], sys.argv[2], Path(sys.argv[3])
steps, lr, expected = int(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
rng = np.random.default_rng(11)
w0 = rng.normal(0, 0.5, (4, 4)).astype(np.float32)
n = helper.make_node
i64 = lambda name, vals: numpy_helper.from_array(np.array(vals, np.int64), name)
nodes = [n("Gemm", ["x", "w"], ["h"], transB=1),
         n("Tanh", ["h"], ["rot"]),
         n("Slice", ["h", "starts", "ends", "axes"], ["pass"])]
if mode == "concat":
    nodes.append(n("Concat", ["rot", "pass"], ["y"], axis=1))
else:
    nodes += [n("Slice", ["h", "zero", "one", "axes"], ["first"]),
              n("Add", ["pass", "first"], ["sum"]), n("Concat", ["rot", "sum"], ["y"], axis=1)]
graph = helper.make_graph(
    nodes, "empty_slice",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])],
    [numpy_helper.from_array(w0, "w"), i64("starts", [4]),
     i64("ends", [np.iinfo(np.int64).max]), i64("axes", [1]), i64("zero", [0]),
     i64("one", [1])])
save_model(graph, out, opset=13, ir_version=7)

x = rng.normal(size=(8, 4)).astype(np.float32)
t = rng.normal(size=(8, 4)).astype(np.float32)
save_data(data, x=x, targets=t)


def loss(w, xb, tb):
    h = xb @ w.T
    y = np.concatenate([np.tanh(h), h[:, 4:]], axis=1)
    return ((y - tb) ** 2).mean()


p = sgd({"w": w0}, lambda p, s: loss(p["w"], batch(x, s).astype(np.float64), batch(t, s).astype(np.float64)),
        steps, lr)
np.savez(expected, w=p["w"])
