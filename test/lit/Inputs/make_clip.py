#!/usr/bin/python3
"""Clip at run time, on the host, and in shape arithmetic. x [N, 6] with
NaN and values past both bounds: lo_hi = Clip(x, -1, 1), lo = Clip(x, -1),
hi = Clip(x, "", 1); folded = Clip(c, -1, 1) of the same values as a
Constant node (an initializer read at run time would be a parameter); padded = Pad(x, [0, q, 0, p]) where p = Clip(8 - width, 0) and
q = Clip(4 - width, 0) (0) come from x's Shape in float, as timm's "same"
padding computes its pads: padded [N, 8 + 0].

usage: make_clip.py OUT.onnx DATA_DIR
"""
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import save_data, save_model

VALUES = np.array([[np.nan, -2.5, 0.5, 3.0, -1.0, 1.0]], np.float32)
n = helper.make_node
f32 = lambda name, v: n("Constant", [], [name], value=numpy_helper.from_array(np.array(v, np.float32)))
i64 = lambda name, v: n("Constant", [], [name], value=numpy_helper.from_array(np.array(v, np.int64)))
nodes = [n("Constant", [], ["c"], value=numpy_helper.from_array(VALUES)), f32("m1", -1.0), f32("p1", 1.0), f32("zero", 0.0), f32("eight", 8.0), f32("four", 4.0),
         i64("axis1", [1]), i64("zero1", [0]),
         n("Clip", ["x", "m1", "p1"], ["lo_hi"]),
         n("Clip", ["x", "m1"], ["lo"]),
         n("Clip", ["x", "", "p1"], ["hi"]),
         n("Clip", ["c", "m1", "p1"], ["folded"]),
         n("Shape", ["x"], ["shape"]),
         n("Gather", ["shape", "axis1"], ["width_i"]),
         n("Cast", ["width_i"], ["width"], to=TensorProto.FLOAT),
         n("Sub", ["eight", "width"], ["p_raw"]),
         n("Sub", ["four", "width"], ["q_raw"]),
         n("Clip", ["p_raw", "zero"], ["p_f"]),
         n("Clip", ["q_raw", "zero"], ["q_f"]),
         n("Cast", ["p_f"], ["p"], to=TensorProto.INT64),
         n("Cast", ["q_f"], ["q"], to=TensorProto.INT64),
         n("Concat", ["zero1", "q", "zero1", "p"], ["pads"], axis=0),
         n("Pad", ["x", "pads"], ["padded"])]
graph = helper.make_graph(
    nodes, "clip",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 6])],
    [helper.make_tensor_value_info(k, TensorProto.FLOAT, s)
     for k, s in (("lo_hi", ["N", 6]), ("lo", ["N", 6]), ("hi", ["N", 6]), ("folded", [1, 6]),
                  ("padded", ["N", 8]))],
    [])
save_model(graph, sys.argv[1], opset=13)
save_data(sys.argv[2], x=VALUES)
