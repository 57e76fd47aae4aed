#!/usr/bin/python3
"""A run-time int64 Transpose, as PyTorch 2's exporter writes T5's shifted
labels: y = Transpose(x, perm [2, 0, 1]) of an int64 input x [N, 3, 4]
(values past 2^40, so no float path could carry them), and its data.

usage: make_int_transpose.py OUT.onnx DATA_DIR
"""
import sys

import numpy as np
from onnx import TensorProto, helper

from lit_inputs import save_data, save_model

graph = helper.make_graph(
    [helper.make_node("Transpose", ["x"], ["y"], perm=[2, 0, 1])], "int_transpose",
    [helper.make_tensor_value_info("x", TensorProto.INT64, ["N", 3, 4])],
    [helper.make_tensor_value_info("y", TensorProto.INT64, [4, "N", 3])])
save_model(graph, sys.argv[1], opset=13, ir_version=7)
rng = np.random.default_rng(5)
save_data(sys.argv[2], x=(2**40 + rng.integers(0, 1000, (2, 3, 4))).astype(np.int64))
