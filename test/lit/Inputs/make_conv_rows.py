#!/usr/bin/python3
"""Convolutions whose kernel is one column wide, padded only in height (an
Inception's 7x1 and 3x1), on maps 6 to 16 wide, the sizes where GCC 12's
vectoriser miscompiled the im2col row loop at -O3 -march=native: y is the
concatenation of conv(x, A) (3x1, pads 1,0,1,0; x [N, 2, 6, 6]), conv(x,
B) (3x1, stride 2x1, dilation 2x1, pads 2,0,1,0), conv(z, C) (7x1,
pads 3,0,3,0; z [N, 2, 4, 11]) and conv(conv(x, A), D) (3x1 again, so
the input gradient's col2im runs too), flattened. Its data, and A, B, C, D after SGD
from float64 central finite differences of numpy loops.

usage: make_conv_rows.py OUT.onnx DATA_DIR STEPS LR EXPECTED.npz
"""
import sys
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import batch, save_data, save_model, sgd

out, data, steps, lr, expected = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
rng = np.random.default_rng(21)
params = {"a": rng.normal(0, 0.5, (3, 2, 3, 1)).astype(np.float32),
          "b": rng.normal(0, 0.5, (3, 2, 3, 1)).astype(np.float32),
          "c": rng.normal(0, 0.5, (2, 2, 7, 1)).astype(np.float32),
          "d": rng.normal(0, 0.5, (2, 3, 3, 1)).astype(np.float32)}
geometry = {"a": dict(strides=[1, 1], dilations=[1, 1], pads=[1, 0, 1, 0]),
            "b": dict(strides=[2, 1], dilations=[2, 1], pads=[2, 0, 1, 0]),
            "c": dict(strides=[1, 1], dilations=[1, 1], pads=[3, 0, 3, 0]),
            "d": dict(strides=[1, 1], dilations=[1, 1], pads=[1, 0, 1, 0])}
n = helper.make_node
nodes = [n("Conv", ["x", "a"], ["ya"], **geometry["a"]),
         n("Conv", ["x", "b"], ["yb"], **geometry["b"]),
         n("Conv", ["z", "c"], ["yc"], **geometry["c"]),
         n("Conv", ["ya", "d"], ["yd"], **geometry["d"])]
for k in "abcd":
    nodes.append(n("Flatten", [f"y{k}"], [f"f{k}"], axis=1))
nodes.append(n("Concat", ["fa", "fb", "fc", "fd"], ["y"], axis=1))


def conv(x, w, strides, dilations, pads):
    N, C, H, W = x.shape
    M, _, KH, KW = w.shape
    xp = np.zeros((N, C, H + pads[0] + pads[2], W + pads[1] + pads[3]), x.dtype)
    xp[:, :, pads[0]:pads[0] + H, pads[1]:pads[1] + W] = x
    OH = (xp.shape[2] - (KH - 1) * dilations[0] - 1) // strides[0] + 1
    OW = (xp.shape[3] - (KW - 1) * dilations[1] - 1) // strides[1] + 1
    y = np.zeros((N, M, OH, OW))
    for kh in range(KH):
        for kw in range(KW):
            h0, w0 = kh * dilations[0], kw * dilations[1]
            patch = xp[:, :, h0:h0 + (OH - 1) * strides[0] + 1:strides[0],
                       w0:w0 + (OW - 1) * strides[1] + 1:strides[1]]
            y += np.einsum("nchw,mc->nmhw", patch, w[:, :, kh, kw])
    return y


def forward(p, xb, zb):
    ya = conv(xb, p["a"], **geometry["a"])
    ys = [ya, conv(xb, p["b"], **geometry["b"]), conv(zb, p["c"], **geometry["c"]),
          conv(ya, p["d"], **geometry["d"])]
    return np.concatenate([y.reshape(len(y), -1) for y in ys], axis=1)


x = rng.normal(size=(8, 2, 6, 6)).astype(np.float32)
z = rng.normal(size=(8, 2, 4, 11)).astype(np.float32)
width = forward(params, x[:1], z[:1]).shape[1]
t = rng.normal(size=(8, width)).astype(np.float32)
graph = helper.make_graph(
    nodes, "conv_rows",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2, 6, 6]),
     helper.make_tensor_value_info("z", TensorProto.FLOAT, ["N", 2, 4, 11])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", width])],
    [numpy_helper.from_array(v, k) for k, v in params.items()])
save_model(graph, out)
save_data(data, x=x, z=z, targets=t)


def step_loss(p, s):
    return ((forward(p, batch(x, s).astype(np.float64), batch(z, s).astype(np.float64)) -
             batch(t, s)) ** 2).mean()


np.savez(expected, **sgd(params, step_loss, steps, lr))
