#!/usr/bin/python3
"""A masked classifier: logits = Where(Equal(mask, 0), -1e4, x W^T), with
`mask` a float initializer (a registered buffer) read only through the
comparison; plus data, and the reference after SGD with weight decay:
  EXPECTED_W.npz    W from float64 finite-difference gradients of a numpy
                    forward (PyTorch's SGD: g + wd * W);
  EXPECTED_MASK.npz the mask, unchanged: it has no gradient, so no decay.

usage: make_masked.py OUT.onnx DATA_DIR STEPS LR WD EXPECTED_W.npz EXPECTED_MASK.npz
"""
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import batch, save_data, save_model, sgd

out, data = sys.argv[1], Path(sys.argv[2])
steps, lr, wd = int(sys.argv[3]), float(sys.argv[4]), float(sys.argv[5])
rng = np.random.default_rng(8)
w0 = rng.normal(0, 0.5, (3, 4)).astype(np.float32)
mask = np.array([1.0, 0.0, 1.0], np.float32)
c = lambda name, v: helper.make_node("Constant", [], [name], value=helper.make_tensor(name, TensorProto.FLOAT, [], [v]))
nodes = [helper.make_node("Gemm", ["x", "w"], ["h"], transB=1),
         c("zero", 0.0), c("big", -1e4),
         helper.make_node("Equal", ["mask", "zero"], ["off"]),
         helper.make_node("Where", ["off", "big", "h"], ["logits"])]
graph = helper.make_graph(
    nodes, "masked",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
    [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 3])],
    [numpy_helper.from_array(w0, "w"), numpy_helper.from_array(mask, "mask")])
save_model(graph, out, opset=13, ir_version=7)

x = rng.normal(size=(8, 4)).astype(np.float32)
labels = rng.choice([0, 2], 8).astype(np.int64)  # the classes the mask keeps
save_data(data, x=x, labels=labels)


def loss(w, xb, yb):
    z = np.where(mask == 0, -1e4, xb @ w.T)
    z = z - z.max(axis=1, keepdims=True)
    logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    return -logp[np.arange(len(yb)), yb].mean()


p = sgd({"w": w0}, lambda p, s: loss(p["w"], batch(x, s).astype(np.float64), batch(labels, s)),
        steps, lr, weight_decay=wd)
np.savez(sys.argv[6], w=p["w"])
np.savez(sys.argv[7], mask=mask)
