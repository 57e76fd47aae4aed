#!/usr/bin/python3
"""Inputs with named symbolic axes: x [B, T, 4], a pairwise mask m [B, T, T]
and per-sample weights s [B, B] (the batch axis's name used again);
y = (sum of x over T) * mean(m) * mean(s).

usage: make_dims.py OUT.onnx
"""
import sys

from onnx import TensorProto, helper, numpy_helper
import numpy as np

from lit_inputs import save_model

n = helper.make_node
graph = helper.make_graph(
    [n("ReduceSum", ["x", "axis1"], ["xs"], keepdims=0),
     n("ReduceMean", ["m"], ["mm"], keepdims=0),
     n("ReduceMean", ["s"], ["sm"], keepdims=0),
     n("Mul", ["xs", "mm"], ["a"]), n("Mul", ["a", "sm"], ["y"])],
    "dims",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["B", "T", 4]),
     helper.make_tensor_value_info("m", TensorProto.FLOAT, ["B", "T", "T"]),
     helper.make_tensor_value_info("s", TensorProto.FLOAT, ["B", "B"])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["B", 4])],
    [numpy_helper.from_array(np.array([1], np.int64), "axis1")])
save_model(graph, sys.argv[1], opset=13, ir_version=7)
