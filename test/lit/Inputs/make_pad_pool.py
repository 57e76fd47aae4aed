#!/usr/bin/python3
"""Pad (constant 0.5, padding H by 1 before and W by 2 after, cropping one
column of W before) and GlobalAveragePool on a scaled input:
  y = Flatten(GlobalAveragePool(Pad(x * s))) with s [2, 1, 1] a parameter;
its data; and s after SGD from float64 finite differences. Also writes
REFLECT.onnx with a Pad of an unknown mode, which otc refuses.

usage: make_pad_pool.py OUT.onnx REFLECT.onnx DATA_DIR STEPS LR EXPECTED.npz
"""
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import batch, save_data, sgd

out, reflect, data = sys.argv[1], sys.argv[2], Path(sys.argv[3])
steps, lr, expected = int(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
rng = np.random.default_rng(15)
s0 = rng.normal(1, 0.3, (2, 1, 1)).astype(np.float32)
n = helper.make_node
pads = numpy_helper.from_array(np.array([0, 0, 1, -1, 0, 0, 0, 2], np.int64), "pads")


def model(mode):
    nodes = [n("Mul", ["x", "s"], ["xs"]),
             n("Constant", [], ["v"], value=numpy_helper.from_array(np.array(0.5, np.float32))),
             n("Pad", ["xs", "pads", "v"], ["p"], mode=mode),
             n("GlobalAveragePool", ["p"], ["g"]), n("Flatten", ["g"], ["y"])]
    graph = helper.make_graph(
        nodes, "pad_pool",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, 3, 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])],
        [numpy_helper.from_array(s0, "s"), pads])
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 7
    onnx.checker.check_model(m)
    return m


onnx.save(model("constant"), out)
onnx.save(model("mirror"), reflect)  # not an ONNX mode
x = rng.normal(size=(8, 2, 3, 3)).astype(np.float32)
t = rng.normal(size=(8, 2)).astype(np.float32)
save_data(data, x=x, targets=t)


def loss(s, xb, tb):
    p = np.pad((xb * s)[:, :, :, 1:], ((0, 0), (0, 0), (1, 0), (0, 2)), constant_values=0.5)
    return ((p.mean(axis=(2, 3)) - tb) ** 2).mean()


p = sgd({"s": s0}, lambda p, s: loss(p["s"], batch(x, s).astype(np.float64), batch(t, s).astype(np.float64)),
        steps, lr)
np.savez(expected, s=p["s"])
