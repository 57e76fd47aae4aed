#!/usr/bin/python3
"""Activations as PyTorch exports them at opset 17, on h = x W^T:
  Clip(h, -1, 1.5) (ReLU6-like, bounds as inputs), LeakyRelu(h, 0.2),
  PRelu(h, slope) (nn.PReLU's, one slope per feature, a parameter),
  Max(h, 0.3), Min(h, -0.3), Pow(h, 3),
  exact GELU (x * 0.5 * (1 + Erf(x / sqrt 2))) and tanh GELU
  (0.5 x (1 + Tanh(sqrt(2/pi) (x + 0.044715 Pow(x, 3))))),
summed into y; its data; and the weight and slope after SGD from float64 central
finite differences of a numpy forward.

usage: make_activations.py OUT.onnx DATA_DIR STEPS LR EXPECTED.npz
"""
import sys
from math import erf, sqrt, pi
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import batch, save_data, save_model, sgd

out, data, steps, lr, expected = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
rng = np.random.default_rng(9)
w0 = rng.normal(0, 0.3, (5, 4)).astype(np.float32)
slope0 = np.array([0.25, -0.1, 0.5, 0.05, 0.3], np.float32)
n = helper.make_node


def c(name, v):
    return n("Constant", [], [name], value=helper.make_tensor(name, TensorProto.FLOAT, [], [v]))


nodes = [n("Gemm", ["x", "w"], ["h"], transB=1),
         c("lo", -1.0), c("hi", 1.5), c("p3", 0.3), c("m3", -0.3), c("three", 3.0),
         c("sqrt2", sqrt(2.0)), c("half", 0.5), c("one", 1.0), c("k", sqrt(2 / pi)), c("a", 0.044715),
         n("Clip", ["h", "lo", "hi"], ["clip"]),
         n("LeakyRelu", ["h"], ["leaky"], alpha=0.2),
         n("PRelu", ["h", "slope"], ["prelu"]),
         n("Max", ["h", "p3"], ["max"]),
         n("Min", ["h", "m3"], ["min"]),
         n("Pow", ["h", "three"], ["cube"]),
         n("Div", ["h", "sqrt2"], ["hs"]), n("Erf", ["hs"], ["e"]), n("Add", ["e", "one"], ["e1"]),
         n("Mul", ["h", "e1"], ["he"]), n("Mul", ["he", "half"], ["gelu"]),
         n("Mul", ["cube", "a"], ["ac"]), n("Add", ["h", "ac"], ["inner"]), n("Mul", ["inner", "k"], ["ik"]),
         n("Tanh", ["ik"], ["t"]), n("Add", ["t", "one"], ["t1"]), n("Mul", ["h", "half"], ["hh"]),
         n("Mul", ["hh", "t1"], ["gelut"]),
         n("Sum", ["clip", "leaky", "prelu", "max", "min", "cube", "gelu", "gelut"], ["y"])]
graph = helper.make_graph(
    nodes, "activations",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])],
    [numpy_helper.from_array(w0, "w"), numpy_helper.from_array(slope0, "slope")])
save_model(graph, out, opset=17, ir_version=8)

x = rng.normal(size=(8, 4)).astype(np.float32)
t = rng.normal(size=(8, 5)).astype(np.float32)
save_data(data, x=x, targets=t)
verf = np.vectorize(erf)


def loss(w, slope, xb, tb):
    h = xb @ w.T
    y = (np.clip(h, -1, 1.5) + np.where(h > 0, h, 0.2 * h) + np.where(h > 0, h, slope * h)
         + np.maximum(h, 0.3) + np.minimum(h, -0.3)
         + h ** 3 + 0.5 * h * (1 + verf(h / sqrt(2)))
         + 0.5 * h * (1 + np.tanh(sqrt(2 / pi) * (h + 0.044715 * h ** 3))))
    return ((y - tb) ** 2).mean()


p = sgd({"w": w0, "slope": slope0}, lambda p, s: loss(p["w"], p["slope"], batch(x, s).astype(np.float64), batch(t, s).astype(np.float64)),
        steps, lr)
np.savez(expected, w=p["w"], slope=p["slope"])
