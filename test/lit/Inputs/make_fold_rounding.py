#!/usr/bin/python3
"""Float32 math that import folds at compile time: DeBERTa's relative
position buckets, Ceil(Log(d / 2) / float32(log 3.5)) over d = 1..8 (a
Range), and 0.1 cast to float16 and back. y = x + buckets + tenth.

usage: make_fold_rounding.py OUT.onnx
"""
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import save_model

n = helper.make_node
f32 = lambda name, v: n("Constant", [], [name], value=numpy_helper.from_array(np.array(v, np.float32)))
nodes = [f32("one", 1), f32("nine", 9), f32("two", 2), f32("c", np.log(3.5)), f32("point1", 0.1),
         n("Range", ["one", "nine", "one"], ["d"]),
         n("Div", ["d", "two"], ["half"]),
         n("Log", ["half"], ["log"]),
         n("Div", ["log", "c"], ["ratio"]),
         n("Ceil", ["ratio"], ["bucket"]),
         n("Cast", ["point1"], ["h"], to=TensorProto.FLOAT16),
         n("Cast", ["h"], ["tenth"], to=TensorProto.FLOAT),
         n("Add", ["x", "bucket"], ["xb"]),
         n("Add", ["xb", "tenth"], ["y"])]
graph = helper.make_graph(nodes, "fold_rounding",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 8])])
save_model(graph, sys.argv[1])
