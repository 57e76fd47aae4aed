#!/usr/bin/python3
"""A linear layer followed by LayerNormalization (opset 17) with scale and
bias, and its data; and the weights after SGD computed in float64 with
central finite-difference gradients of a numpy forward, so that the
reference shares nothing with otc's gradient rules.

usage: make_layernorm.py OUT.onnx DATA_DIR STEPS LR EXPECTED.npz [FROZEN FROZEN.npz]
       (micro-batch 2, one micro-batch per step, mean-squared loss; FROZEN
       is a comma-separated list of parameters the reference does not
       update, as PyTorch with requires_grad=False, whose initial values go
       to FROZEN.npz)
"""
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import batch, save_data, save_model, sgd

out, data, steps, lr, expected = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
rng = np.random.default_rng(4)
params = {"w": rng.normal(0, 0.5, (6, 4)).astype(np.float32),
          "gamma": rng.normal(1, 0.2, (6,)).astype(np.float32),
          "beta": rng.normal(0, 0.2, (6,)).astype(np.float32)}
nodes = [helper.make_node("Gemm", ["x", "w"], ["h"], transB=1),
         helper.make_node("LayerNormalization", ["h", "gamma", "beta"], ["y"], epsilon=1e-5)]
graph = helper.make_graph(
    nodes, "layernorm",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 6])],
    [numpy_helper.from_array(v, k) for k, v in params.items()])
save_model(graph, out, opset=17, ir_version=8)

x = rng.normal(size=(8, 4)).astype(np.float32)
t = rng.normal(size=(8, 6)).astype(np.float32)
save_data(data, x=x, targets=t)


def loss(p, xb, tb):
    h = xb @ p["w"].T
    d = h - h.mean(axis=1, keepdims=True)
    y = d / np.sqrt((d * d).mean(axis=1, keepdims=True) + 1e-5) * p["gamma"] + p["beta"]
    return ((y - tb) ** 2).mean()


frozen = sys.argv[6].split(",") if len(sys.argv) > 6 else []
if frozen:
    np.savez(sys.argv[7], **{k: params[k] for k in frozen})
p = sgd(params, lambda p, s: loss(p, batch(x, s).astype(np.float64), batch(t, s).astype(np.float64)),
        steps, lr, frozen=frozen)
np.savez(expected, **p)
