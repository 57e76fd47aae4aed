#!/usr/bin/python3
"""Scatters and tuple gathers with run-time indices, and their gradients to
the data and the updates: h = x * w [2, 4, 5], u = z * v [2, 3, 5];
s1 = ScatterND(h, nd, u) (distinct (batch, row) pairs, some negative);
s2 = ScatterND(s1, nd, u, add); s3 = ScatterElements(s2, e, GatherElements(h,
e, 2), 2, add) (e with repeats); y = GatherND(s3, gi, batch_dims 1)
[2, 3, 5]. Every index is a data input. Its data, and w and v after SGD
from float64 central finite differences of a numpy forward.

usage: make_scatter.py OUT.onnx DATA_DIR STEPS LR EXPECTED.npz
"""
import sys
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import batch, save_data, save_model, sgd

out, data, steps, lr, expected = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
rng = np.random.default_rng(16)
params = {"w": rng.normal(0, 0.5, (4, 5)).astype(np.float32),
          "v": rng.normal(0, 0.5, (3, 5)).astype(np.float32)}
n = helper.make_node
nodes = [n("Mul", ["x", "w"], ["h"]),
         n("Mul", ["z", "v"], ["u"]),
         n("ScatterND", ["h", "nd", "u"], ["s1"]),
         n("ScatterND", ["s1", "nd", "u"], ["s2"], reduction="add"),
         n("GatherElements", ["h", "e"], ["g"], axis=2),
         n("ScatterElements", ["s2", "e", "g"], ["s3"], axis=-1, reduction="add"),
         n("GatherND", ["s3", "gi"], ["y"], batch_dims=1)]
i64 = TensorProto.INT64
graph = helper.make_graph(
    nodes, "scatter",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 5]),
     helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3, 5]),
     helper.make_tensor_value_info("nd", i64, [2, 3, 2]),
     helper.make_tensor_value_info("e", i64, [2, 4, 3]),
     helper.make_tensor_value_info("gi", i64, [2, 3, 1])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3, 5])],
    [numpy_helper.from_array(params["w"], "w"), numpy_helper.from_array(params["v"], "v")])
save_model(graph, out, opset=16)

S = 8
x = rng.normal(0, 1, (S, 4, 5)).astype(np.float32)
z = rng.normal(0, 1, (S, 3, 5)).astype(np.float32)
# Sample s is row s % 2 of its micro-batch; its pairs name it, 3 distinct rows.
nd = np.zeros((S, 3, 2), np.int64)
for s in range(S):
    nd[s, :, 0] = s % 2 - 2 * (s % 4 == 1)  # -1 counts back to row 1
    nd[s, :, 1] = rng.permutation(4)[:3] - 4 * rng.integers(0, 2, 3)
e = rng.integers(-5, 5, (S, 4, 3)).astype(np.int64)
gi = rng.integers(-4, 4, (S, 3, 1)).astype(np.int64)
t = rng.normal(0, 1, (S, 3, 5)).astype(np.float32)
save_data(data, x=x, z=z, nd=nd, e=e, gi=gi, targets=t)


def forward(p, xb, zb, ndb, eb, gib):
    h, u = xb * p["w"], zb * p["v"]
    s1 = h.copy()
    for b in range(2):
        for j in range(3):
            s1[ndb[b, j, 0], ndb[b, j, 1]] = u[b, j]
    s2 = s1.copy()
    for b in range(2):
        for j in range(3):
            s2[ndb[b, j, 0], ndb[b, j, 1]] += u[b, j]
    ew = np.where(eb < 0, eb + 5, eb)
    g = np.take_along_axis(h, ew, 2)
    s3 = s2.copy()
    for i in np.ndindex(ew.shape):
        s3[i[0], i[1], ew[i]] += g[i]
    return np.stack([s3[b, gib[b, :, 0]] for b in range(2)])


def step_loss(p, s):
    b = lambda a: batch(a, s)
    return ((forward(p, b(x).astype(np.float64), b(z).astype(np.float64), b(nd), b(e), b(gi))
             - b(t)) ** 2).mean()


np.savez(expected, **sgd(params, step_loss, steps, lr))
