#!/usr/bin/python3
"""A model whose loss is Sigmoid(ReduceMean(x W)): sigmoid's gradient reuses
its output, so the loss value has a second user besides the return (it was
never written to the runtime's loss, which then read 0).

usage: make_sigmoid_loss.py OUT.onnx DATA_DIR   (writes x.npy and the
       expected first-step loss, computed in float64, to DATA_DIR/loss.txt)
"""
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import save_model, save_data

out, data = sys.argv[1], Path(sys.argv[2])
rng = np.random.default_rng(2)
w = rng.normal(0, 0.5, (4, 3)).astype(np.float32)
nodes = [helper.make_node("MatMul", ["x", "w"], ["h"]),
         helper.make_node("ReduceMean", ["h"], ["m"], keepdims=0),
         helper.make_node("Sigmoid", ["m"], ["loss"])]
graph = helper.make_graph(
    nodes, "sigmoid_loss",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
    [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
    [numpy_helper.from_array(w, "w")])
save_model(graph, out, opset=13, ir_version=7, check=False)
x = rng.normal(size=(8, 4)).astype(np.float32)
first = x[:2].astype(np.float64) @ w.astype(np.float64)  # micro-batch 2
save_data(data, x=x)
(data / "loss.txt").write_text(f"{1 / (1 + np.exp(-first.mean())):.6f}\n")
