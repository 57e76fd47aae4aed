#!/usr/bin/python3
"""A Conv1d over circularly padded input, as torch.onnx exports
padding_mode="circular" (Slice, the input, Slice, Concat, then Conv with
no pads): `buggy` with torch 1.13's wrap-around before the data, x[-2:-1]
(pytorch/pytorch#86690), `fixed` with PyTorch 2's x[-1:], `twostep` as
PyTorch up to 1.9 padded: y = Concat(x, x[0:1]) first, then
Concat(y[-2:-1], y), which is right.

usage: make_circular_pad.py buggy|fixed|twostep OUT.onnx
"""
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import save_model

form, out = sys.argv[1], sys.argv[2]
start, end = (-2, -1) if form == "buggy" else (-1, 2**62)
ints = lambda name, v: numpy_helper.from_array(np.array(v, np.int64), name)
n = helper.make_node
nodes = [n("Constant", [], ["starts"], value=ints("", [start])),
         n("Constant", [], ["ends"], value=ints("", [end])),
         n("Slice", ["x", "starts", "ends", "axes"], ["left"]),
         n("Slice", ["x", "zero", "one", "axes"], ["right"]),
         n("Concat", ["left", "x", "right"], ["padded"], axis=2, name="/conv/Concat"),
         n("Conv", ["padded", "w"], ["y"], kernel_shape=[3])]
if form == "twostep":
    nodes = [n("Slice", ["x", "zero", "one", "axes"], ["right"]),
             n("Concat", ["x", "right"], ["x1"], axis=2),
             n("Constant", [], ["starts"], value=ints("", [-2])),
             n("Constant", [], ["ends"], value=ints("", [-1])),
             n("Slice", ["x1", "starts", "ends", "axes"], ["left"]),
             n("Concat", ["left", "x1"], ["padded"], axis=2, name="/conv/Concat"),
             n("Conv", ["padded", "w"], ["y"], kernel_shape=[3])]
graph = helper.make_graph(
    nodes, "circular_pad",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 8])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2, 8])],
    [numpy_helper.from_array(np.full((2, 2, 3), 0.1, np.float32), "w"),
     ints("axes", [2]), ints("zero", [0]), ints("one", [1])])
save_model(graph, out)
