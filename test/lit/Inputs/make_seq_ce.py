#!/usr/bin/python3
"""A sequence tagger's loss as PyTorch exports F.cross_entropy on [N, C, T]
logits: logits = Transpose(MatMul(x [N, T, 4], W [4, C]), [0, 2, 1]), then
SoftmaxCrossEntropyLoss with [N, T] labels and ignore_index -1 (some
positions ignored); its data; and W after SGD from float64 central finite
differences of a numpy forward.

usage: make_seq_ce.py OUT.onnx DATA_DIR STEPS LR EXPECTED.npz
"""
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import batch, save_data, save_model, sgd

out, data, steps, lr, expected = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
rng = np.random.default_rng(14)
w0 = rng.normal(0, 0.5, (4, 5)).astype(np.float32)
n = helper.make_node
nodes = [n("MatMul", ["x", "w"], ["h"]), n("Transpose", ["h"], ["logits"], perm=[0, 2, 1]),
         n("SoftmaxCrossEntropyLoss", ["logits", "labels"], ["loss"], ignore_index=-1)]
graph = helper.make_graph(
    nodes, "seq_ce",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 4]),
     helper.make_tensor_value_info("labels", TensorProto.INT64, ["N", 3])],
    [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
    [numpy_helper.from_array(w0, "w")])
save_model(graph, out, opset=13, ir_version=7)

x = rng.normal(size=(8, 3, 4)).astype(np.float32)
labels = rng.integers(0, 5, (8, 3)).astype(np.int64)
labels[0, 1] = labels[3, 2] = labels[5, 0] = -1
save_data(data, x=x, labels=labels)


def loss(w, xb, yb):
    z = xb @ w  # [n, T, C]
    z = z - z.max(axis=2, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=2, keepdims=True))
    keep = yb != -1
    picked = np.take_along_axis(logp, np.where(keep, yb, 0)[..., None], axis=2)[..., 0]
    return -(picked * keep).sum() / keep.sum()


p = sgd({"w": w0}, lambda p, s: loss(p["w"], batch(x, s).astype(np.float64), batch(labels, s)),
        steps, lr)
np.savez(expected, w=p["w"])
