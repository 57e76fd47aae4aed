#!/usr/bin/python3
"""GatherElements with run-time indices, ScatterElements with constant
ones, and ArgMax/ArgMin: h = x * w [2, 4, 5];
g = GatherElements(h, ids, axis 2) [2, 4, 2] (ids a data input, negative
ones counted from the end); s = ScatterElements(h, C, g, axis 2) with
constant C; y = s * (1 + Cast(ArgMax(h, 2)) - Cast(ArgMin(h, 2)) / 8)
* (1 + Cast(ArgMax(tok, 2)) / 16 + Cast(ArgMin(tok, 1)) / 32), tok an int64
data input (CLIP pools at input_ids.argmax(-1)) of values 2^40 + {0, 1,
2}: ties, and differences a float copy would lose. Its
data, and w after SGD from float64 central finite differences of a numpy
forward (the arg indices are piecewise constant, so they scale the
gradient without carrying one).

usage: make_indexing.py OUT.onnx DATA_DIR STEPS LR EXPECTED.npz
"""
import sys
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import batch, save_data, save_model, sgd

out, data, steps, lr, expected = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
rng = np.random.default_rng(14)
params = {"w": rng.normal(0, 0.5, (4, 5)).astype(np.float32)}
scatter_at = np.array([[[4, 0], [1, 2], [3, -1], [0, 2]], [[2, 3], [0, 1], [4, 2], [1, 3]]], np.int64)
n = helper.make_node
# Constant nodes, not initializers: a float initializer would be trained.
f32 = lambda name, v: n("Constant", [], [name], value=numpy_helper.from_array(np.array(v, np.float32)))
nodes = [f32("eight", 8), f32("one", 1),
         n("Mul", ["x", "w"], ["h"]),
         n("GatherElements", ["h", "ids"], ["g"], axis=2),
         n("ScatterElements", ["h", "at", "g"], ["s"], axis=2),
         n("ArgMax", ["h"], ["amax"], axis=2),
         n("ArgMin", ["h"], ["amin"], axis=-1, select_last_index=1),
         n("Cast", ["amax"], ["fmax"], to=TensorProto.FLOAT),
         n("Cast", ["amin"], ["fmin"], to=TensorProto.FLOAT),
         n("Div", ["fmin", "eight"], ["fmin8"]),
         n("Sub", ["fmax", "fmin8"], ["d"]),
         n("Add", ["d", "one"], ["scale"]),
         n("Mul", ["s", "scale"], ["ys"]),
         n("ArgMax", ["tok"], ["tmax"], axis=2),
         n("ArgMin", ["tok"], ["tmin"], axis=1, select_last_index=1),
         n("Cast", ["tmax"], ["ftmax"], to=TensorProto.FLOAT),
         n("Cast", ["tmin"], ["ftmin"], to=TensorProto.FLOAT),
         f32("sixteen", 16), f32("thirtytwo", 32),
         n("Div", ["ftmax", "sixteen"], ["tmax16"]),
         n("Div", ["ftmin", "thirtytwo"], ["tmin32"]),
         n("Add", ["tmax16", "tmin32"], ["tsum"]),
         n("Add", ["tsum", "one"], ["tscale"]),
         n("Mul", ["ys", "tscale"], ["y"])]
graph = helper.make_graph(
    nodes, "indexing",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4, 5]),
     helper.make_tensor_value_info("ids", TensorProto.INT64, [2, 4, 2]),
     helper.make_tensor_value_info("tok", TensorProto.INT64, [2, 4, 5])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4, 5])],
    [numpy_helper.from_array(params["w"], "w"), numpy_helper.from_array(scatter_at, "at")])
save_model(graph, out, opset=13)

x = rng.normal(0, 1, (8, 4, 5)).astype(np.float32)
ids = rng.integers(-5, 5, (8, 4, 2)).astype(np.int64)
t = rng.normal(0, 1, (8, 4, 5)).astype(np.float32)
tok = (2 ** 40 + rng.integers(0, 3, (8, 4, 5))).astype(np.int64)
save_data(data, x=x, ids=ids, tok=tok, targets=t)


def forward(p, xb, ib, tb):
    h = xb * p["w"]
    g = np.take_along_axis(h, np.where(ib < 0, ib + 5, ib), 2)
    s = h.copy()
    np.put_along_axis(s, np.where(scatter_at < 0, scatter_at + 5, scatter_at), g, 2)
    amax = h.argmax(2)[..., None]
    amin = (4 - np.flip(h, 2).argmin(2))[..., None]  # the last minimum
    tmax = tb.argmax(2)[..., None]
    tmin = (3 - np.flip(tb, 1).argmin(1))[:, None, :]  # the last minimum
    return s * (1 + amax - amin / 8) * (1 + tmax / 16 + tmin / 32)


def step_loss(p, s):
    return ((forward(p, batch(x, s).astype(np.float64), batch(ids, s), batch(tok, s)) - batch(t, s)) ** 2).mean()


np.savez(expected, **sgd(params, step_loss, steps, lr))
