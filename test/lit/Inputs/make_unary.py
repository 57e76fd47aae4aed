#!/usr/bin/python3
"""Writes a model that applies ONNX's unary math ops to a linear layer's
output: y = Erf(h) + Exp(-Abs(h)) + Log(Sqrt(h*h + 1)) + Reciprocal(h*h + 2),
with h = x W^T, so every op sits on the path to the weight's gradient.

usage: make_unary.py OUT.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

n = helper.make_node
def scalar(name, v):  # a Constant node: not a parameter
    return n("Constant", [], [name], value=helper.make_tensor(name, TensorProto.FLOAT, [], [v]))


nodes = [
    scalar("one", 1.0),
    scalar("two", 2.0),
    n("Gemm", ["x", "w"], ["h"], transB=1),
    n("Erf", ["h"], ["erf"]),
    n("Abs", ["h"], ["abs"]),
    n("Neg", ["abs"], ["nabs"]),
    n("Exp", ["nabs"], ["exp"]),
    n("Mul", ["h", "h"], ["hh"]),
    n("Add", ["hh", "one"], ["hh1"]),
    n("Sqrt", ["hh1"], ["sqrt"]),
    n("Log", ["sqrt"], ["log"]),
    n("Add", ["hh", "two"], ["hh2"]),
    n("Reciprocal", ["hh2"], ["rec"]),
    n("Add", ["erf", "exp"], ["s1"]),
    n("Add", ["s1", "log"], ["s2"]),
    n("Add", ["s2", "rec"], ["y"]),
]
rng = np.random.default_rng(0)
inits = [numpy_helper.from_array(rng.normal(0, 0.5, (3, 4)).astype(np.float32), "w")]
graph = helper.make_graph(
    nodes, "unary",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, sys.argv[1])
