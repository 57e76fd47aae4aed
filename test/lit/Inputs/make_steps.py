#!/usr/bin/python3
"""The piecewise-constant ops, the float class tests and Mod at run time:
h = x * w [2, 6]; y = h * (1 + Floor(h)/4 + Ceil(h)/8 + Round(2h)/16 +
Sign(h)/32 + IsInf(Log(Relu(h)), negative only)/64 + IsNaN(Sqrt(h))/128
+ (Mod(k, 7) + Mod(k, -3, fmod) + Div(k, 4))/256) + Mod(h, v)/8 +
Mod(h, 0.7, fmod)/8, with k an int64 input. The step functions' gradients
are zero where they exist (PyTorch's), so they scale the gradient without
carrying one, and none reaches Log or Sqrt, whose inputs hold zeros and
negatives; Mod's are 1 and -quotient. Its data, and w and v after SGD from
float64 central finite differences of a numpy forward.

usage: make_steps.py OUT.onnx DATA_DIR STEPS LR EXPECTED.npz
"""
import sys
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import batch, save_data, save_model, sgd

out, data, steps, lr, expected = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
rng = np.random.default_rng(15)
params = {"w": rng.normal(0, 1.5, (6,)).astype(np.float32),
          "v": rng.uniform(0.8, 1.6, (6,)).astype(np.float32) * rng.choice([-1, 1], 6).astype(np.float32)}
i64 = lambda name, v: n("Constant", [], [name], value=numpy_helper.from_array(np.array(v, np.int64)))
n = helper.make_node
f32 = lambda name, v: n("Constant", [], [name], value=numpy_helper.from_array(np.array(v, np.float32)))
nodes = [f32("c1", 1), f32("c2", 2), f32("c4", 4), f32("c8", 8), f32("c16", 16), f32("c32", 32),
         f32("c64", 64), f32("c128", 128),
         n("Mul", ["x", "w"], ["h"]),
         n("Floor", ["h"], ["fl"]), n("Div", ["fl", "c4"], ["t1"]),
         n("Ceil", ["h"], ["ce"]), n("Div", ["ce", "c8"], ["t2"]),
         n("Mul", ["h", "c2"], ["h2"]), n("Round", ["h2"], ["ro"]), n("Div", ["ro", "c16"], ["t3"]),
         n("Sign", ["h"], ["si"]), n("Div", ["si", "c32"], ["t4"]),
         n("Relu", ["h"], ["re"]), n("Log", ["re"], ["lg"]),
         n("IsInf", ["lg"], ["inf"], detect_positive=0),
         n("Cast", ["inf"], ["inff"], to=TensorProto.FLOAT), n("Div", ["inff", "c64"], ["t5"]),
         n("Sqrt", ["h"], ["sq"]), n("IsNaN", ["sq"], ["nan"]),
         n("Cast", ["nan"], ["nanf"], to=TensorProto.FLOAT), n("Div", ["nanf", "c128"], ["t6"]),
         i64("k7", 7), i64("km3", -3), i64("k4", 4), f32("c256", 256), f32("c07", 0.7),
         n("Mod", ["k", "k7"], ["m1"]), n("Mod", ["k", "km3"], ["m2"], fmod=1),
         n("Div", ["k", "k4"], ["m3"]), n("Add", ["m1", "m2"], ["m12"]), n("Add", ["m12", "m3"], ["mi"]),
         n("Cast", ["mi"], ["mif"], to=TensorProto.FLOAT), n("Div", ["mif", "c256"], ["t7"]),
         n("Sum", ["c1", "t1", "t2", "t3", "t4", "t5", "t6", "t7"], ["scale"]),
         n("Mul", ["h", "scale"], ["hs"]),
         n("Mod", ["h", "v"], ["f1"]), n("Mod", ["h", "c07"], ["f2"], fmod=1),
         n("Add", ["f1", "f2"], ["f12"]), n("Div", ["f12", "c8"], ["t8"]),
         n("Add", ["hs", "t8"], ["y"])]
graph = helper.make_graph(
    nodes, "steps",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 6]),
     helper.make_tensor_value_info("k", TensorProto.INT64, [2, 6])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 6])],
    [numpy_helper.from_array(params["w"], "w"), numpy_helper.from_array(params["v"], "v")])
save_model(graph, out, opset=13)

x = rng.normal(0, 2, (8, 6)).astype(np.float32)
k = rng.integers(-20, 21, (8, 6)).astype(np.int64)
t = rng.normal(0, 1, (8, 6)).astype(np.float32)
save_data(data, x=x, k=k, targets=t)


def forward(p, xb, kb):
    h = xb * p["w"]
    ints = np.mod(kb, 7) + np.fmod(kb, -3) + np.trunc(kb / 4)
    return (h * (1 + np.floor(h) / 4 + np.ceil(h) / 8 + np.round(2 * h) / 16 + np.sign(h) / 32
                 + (h <= 0) / 64 + (h < 0) / 128 + ints / 256)
            + (np.mod(h, p["v"]) + np.fmod(h, np.float32(0.7))) / 8)


def step_loss(p, s):
    return ((forward(p, batch(x, s).astype(np.float64), batch(k, s)) - batch(t, s)) ** 2).mean()


np.savez(expected, **sgd(params, step_loss, steps, lr))
