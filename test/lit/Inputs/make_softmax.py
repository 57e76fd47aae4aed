#!/usr/bin/python3
"""Writes softmax models at two opsets.

usage: make_softmax.py OPSET OUT.onnx
  13: Softmax(axis=1) and LogSoftmax (default axis -1) of a [N, 3, 4] input;
  11: Softmax (default axis 1: the input flattened to [N, 12]) and
      LogSoftmax(axis=2, the last).
"""
import sys

import onnx
from onnx import TensorProto, helper

opset, out = int(sys.argv[1]), sys.argv[2]
n = helper.make_node
if opset >= 13:
    nodes = [n("Softmax", ["x"], ["s"], axis=1), n("LogSoftmax", ["x"], ["l"])]
else:
    nodes = [n("Softmax", ["x"], ["s"]), n("LogSoftmax", ["x"], ["l"], axis=2)]
nodes.append(n("Add", ["s", "l"], ["y"]))
graph = helper.make_graph(
    nodes, "softmax",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3, 4])])
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
model.ir_version = 7
onnx.checker.check_model(model)
onnx.save(model, out)
