#!/usr/bin/python3
"""Two models for loss_scaling.test's non-finite-loss case, in OUT:
plain.onnx, loss = CE(x w, labels), and extra.onnx, the same plus
ReduceSum(Log(0 x)) = -inf: a term that no parameter reaches, so every
gradient is the plain model's while the loss is not finite. Data in
OUT/data (x, labels), 8 samples.

usage: make_nonfinite_loss.py OUT
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = sys.argv[1]
os.makedirs(os.path.join(out, "data"), exist_ok=True)
rng = np.random.default_rng(0)
np.save(os.path.join(out, "data", "x.npy"), rng.standard_normal((8, 4)).astype(np.float32))
np.save(os.path.join(out, "data", "labels.npy"), rng.integers(0, 3, 8).astype(np.int64))
w = numpy_helper.from_array(rng.standard_normal((4, 3)).astype(np.float32), "w")


def model(extra):
    nodes = [helper.make_node("MatMul", ["x", "w"], ["logits"]),
             helper.make_node("SoftmaxCrossEntropyLoss", ["logits", "labels"], ["ce"])]
    if extra:
        nodes += [helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(
                      np.zeros((), np.float32))),
                  helper.make_node("Mul", ["x", "zero"], ["z"]),
                  helper.make_node("Log", ["z"], ["logz"]),
                  helper.make_node("ReduceSum", ["logz"], ["term"], keepdims=0),
                  helper.make_node("Add", ["ce", "term"], ["loss"])]
    else:
        nodes += [helper.make_node("Identity", ["ce"], ["loss"])]
    g = helper.make_graph(
        nodes, "nonfinite_loss",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4]),
         helper.make_tensor_value_info("labels", TensorProto.INT64, ["N"])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out, "extra.onnx" if extra else "plain.onnx"))


model(False)
model(True)
