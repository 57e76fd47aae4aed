#!/usr/bin/python3
"""Writes the small ONNX models the lit tests import. Run with Debian's python3."""
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).parent
rng = np.random.default_rng(0)


def init(name, shape):
    return numpy_helper.from_array(rng.standard_normal(shape).astype(np.float32), name)


def save(name, nodes, inputs, output, inits=()):
    graph = helper.make_graph(nodes, name, inputs,
                              [helper.make_tensor_value_info(output, TensorProto.FLOAT, [])],
                              list(inits))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(model)
    onnx.save(model, HERE / f"{name}.onnx")


x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4])

# Gemm + Relu with a mean-reduced scalar: the smallest trainable model.
save("gemm_relu", [
    helper.make_node("Gemm", ["x", "w", "b"], ["h"], name="fc", transB=1),
    helper.make_node("Relu", ["h"], ["r"], name="act"),
    helper.make_node("ReduceMean", ["r"], ["loss"], name="mean", keepdims=0),
], [x], "loss", [init("w", [3, 4]), init("b", [3])])

# The shape arithmetic PyTorch exports around a flatten: folds to constants.
x3 = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 2, 3])
save("shape_folding", [
    helper.make_node("Shape", ["x"], ["s"], name="shape"),
    helper.make_node("Constant", [], ["zero"], name="c0",
                     value=numpy_helper.from_array(np.array(0, np.int64))),
    helper.make_node("Gather", ["s", "zero"], ["n"], name="gather", axis=0),
    helper.make_node("Constant", [], ["axes"], name="c1",
                     value=numpy_helper.from_array(np.array([0], np.int64))),
    helper.make_node("Unsqueeze", ["n", "axes"], ["n1"], name="unsqueeze"),
    helper.make_node("Constant", [], ["minus1"], name="c2",
                     value=numpy_helper.from_array(np.array([-1], np.int64))),
    helper.make_node("Concat", ["n1", "minus1"], ["shape2"], name="concat", axis=0),
    helper.make_node("Reshape", ["x", "shape2"], ["flat"], name="flatten"),
    helper.make_node("MatMul", ["flat", "w"], ["y"], name="proj"),
    helper.make_node("ReduceSum", ["y"], ["loss"], name="sum", keepdims=0),
], [x3], "loss", [init("w", [6, 2])])

# An operator otc does not support, in a node named "probs".
save("unsupported_op", [
    helper.make_node("Det", ["x"], ["p"], name="probs"),
    helper.make_node("ReduceSum", ["p"], ["loss"], name="sum", keepdims=0),
], [x], "loss")

# A fixed batch dimension of 4.
x4 = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 4])
save("fixed_batch", [
    helper.make_node("ReduceSum", ["x"], ["loss"], name="sum", keepdims=0),
], [x4], "loss")
