#!/usr/bin/python3
"""An MLP with dropout as PyTorch exports it in training mode (Dropout with
constant ratio 0.3 and training_mode true, mask unused), and a learnable
dataset: 3 classes by which of the first three features is largest.

usage: make_dropout_mlp.py OUT.onnx DATA_DIR
"""
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import save_model, save_data

out, data = sys.argv[1], Path(sys.argv[2])
rng = np.random.default_rng(13)
n = helper.make_node
inits = [numpy_helper.from_array(rng.normal(0, 0.4, (16, 8)).astype(np.float32), "w1"),
         numpy_helper.from_array(np.zeros(16, np.float32), "b1"),
         numpy_helper.from_array(rng.normal(0, 0.4, (3, 16)).astype(np.float32), "w2")]
# Constant nodes, as torch.onnx writes ratio and training_mode.
nodes = [n("Constant", [], ["ratio"], value=numpy_helper.from_array(np.array(0.3, np.float32))),
         n("Constant", [], ["training"], value=numpy_helper.from_array(np.array(True))),
         n("Gemm", ["x", "w1", "b1"], ["h"], transB=1), n("Relu", ["h"], ["r"]),
         n("Dropout", ["r", "ratio", "training"], ["d"]),
         n("Gemm", ["d", "w2"], ["logits"], transB=1)]
graph = helper.make_graph(
    nodes, "dropout_mlp",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
    [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 3])], inits)
save_model(graph, out, opset=13, ir_version=7)
x = rng.normal(size=(256, 8)).astype(np.float32)
save_data(data, x=x, labels=x[:, :3].argmax(axis=1).astype(np.int64))
