#!/usr/bin/python3
"""Pow with run-time exponents, trained: with x and z [2, 3], y = Pow(x *
x + 0.5, p) + Pow(s, x) + Pow(z + b, [1, 1, 1]), p [3] trained exponents,
s [3] trained positive bases, and b [3] starting at 0 with z all 0 (a base
of exactly 0 to the power 1, whose derivative is 1). Its data, and p and s after SGD from float64 central finite
differences of a numpy forward. With `--special`, a forward-only model of
Pow over C's special cases (a negative base with odd, even and fractional
exponents, zero to positive, zero and negative powers) and numpy's answer.

usage: make_pow.py OUT.onnx DATA_DIR STEPS LR EXPECTED.npz
       make_pow.py --special OUT.onnx DATA_DIR EXPECTED.npz
"""
import sys
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import batch, save_data, save_model, sgd

n = helper.make_node
rng = np.random.default_rng(29)

if sys.argv[1] == "--special":
    out, data, expected = sys.argv[2], Path(sys.argv[3]), sys.argv[4]
    graph = helper.make_graph(
        [n("Pow", ["x", "e"], ["y"])], "special",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 10]),
         helper.make_tensor_value_info("e", TensorProto.FLOAT, ["N", 10])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 10])])
    save_model(graph, out, opset=15)
    x = np.array([[-2, -2, -2, 0, 0, 0, 3, 1.5, np.nan, 1]] * 2, np.float32)
    e = np.array([[3, 2, 0.5, 2, 0, -1, 0.5, -2.5, 0, np.nan]] * 2, np.float32)
    save_data(data, x=x, e=e)
    with np.errstate(all="ignore"):
        np.savez(expected, y=np.power(x, e))
    sys.exit(0)

out, data, steps, lr, expected = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
params = {"p": np.array([0.5, 1.7, 3.0], np.float32), "s": np.array([0.8, 1.3, 2.1], np.float32),
          "b": np.zeros(3, np.float32)}
c = lambda name, v: n("Constant", [], [name], value=numpy_helper.from_array(np.array(v, np.float32)))
nodes = [c("half", 0.5), c("ones", [1.0, 1.0, 1.0]), n("Mul", ["x", "x"], ["sq"]),
         n("Add", ["sq", "half"], ["base"]), n("Pow", ["base", "p"], ["pa"]),
         n("Pow", ["s", "x"], ["pb"]), n("Add", ["z", "b"], ["zb"]), n("Pow", ["zb", "ones"], ["pc"]),
         n("Add", ["pa", "pb"], ["ab"]), n("Add", ["ab", "pc"], ["y"])]
graph = helper.make_graph(
    nodes, "pow", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3]),
                   helper.make_tensor_value_info("z", TensorProto.FLOAT, ["N", 3])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3])],
    [numpy_helper.from_array(v, k) for k, v in params.items()])
save_model(graph, out, opset=15)
x = rng.normal(0, 0.7, (6, 3)).astype(np.float32)
t = rng.normal(0, 1, (6, 3)).astype(np.float32)
z = np.zeros((6, 3), np.float32)
save_data(data, x=x, z=z, targets=t)


def step_loss(q, s):
    xb = batch(x, s).astype(np.float64)
    return (((xb * xb + 0.5) ** q["p"] + q["s"] ** xb + (batch(z, s) + q["b"]) - batch(t, s)) ** 2
            ).mean()


np.savez(expected, **sgd(params, step_loss, steps, lr))
