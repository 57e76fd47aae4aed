#!/usr/bin/python3
"""mBART's shift_tokens_right counts each row's tokens that are not
padding: count = ReduceSum(Cast(Not(Equal(ids, pad)), int64), axes [1]) - 1,
at run time. With `plain`, the sum reads the int64 ids themselves (which
otc refuses: its steps sum in float). With `experts`, NLLB-MoE's tokens per
expert: ReduceSum(OneHot(ids mod 3, 3, [0, 1]) * Cast(kept, int64)) over
the positions, [N, 3]. With `filled`, GIT's count of a full() whose shape
is the batch's: filled = ReduceSum(Cast(Expand(True, [N, 5]), int64), [1]),
a compile-time [5, 5] at micro-batch 2.

usage: make_int_count.py OUT.onnx DATA_DIR [plain|experts|filled]
"""
import sys

import numpy as np
from onnx import TensorProto, helper

from lit_inputs import save_data, save_model

plain = len(sys.argv) > 3 and sys.argv[3] == "plain"
experts = len(sys.argv) > 3 and sys.argv[3] == "experts"
filled = len(sys.argv) > 3 and sys.argv[3] == "filled"
nodes = [helper.make_node("Constant", [], ["pad"], value=helper.make_tensor("pad", TensorProto.INT64, [], [1])),
         helper.make_node("Constant", [], ["axes"], value=helper.make_tensor("axes", TensorProto.INT64, [1], [1])),
         helper.make_node("Constant", [], ["one"], value=helper.make_tensor("one", TensorProto.INT64, [], [1]))]
if plain:
    nodes.append(helper.make_node("ReduceSum", ["ids", "axes"], ["sum"], keepdims=0))
else:
    nodes += [helper.make_node("Equal", ["ids", "pad"], ["is_pad"]),
              helper.make_node("Not", ["is_pad"], ["kept"]),
              helper.make_node("Cast", ["kept"], ["kept64"], to=TensorProto.INT64),
              helper.make_node("ReduceSum", ["kept64", "axes"], ["sum"], keepdims=0)]
nodes.append(helper.make_node("Sub", ["sum", "one"], ["count"]))
outputs = [helper.make_tensor_value_info("count", TensorProto.INT64, ["N"])]
if experts:
    def const(name, dims, vals):
        return helper.make_node("Constant", [], [name], value=helper.make_tensor(name, TensorProto.INT64, dims, vals))
    nodes += [const("three", [], [3]), const("onoff", [2], [0, 1]),
              helper.make_node("Mod", ["ids", "three"], ["expert"]),
              helper.make_node("OneHot", ["expert", "three", "onoff"], ["hot"], axis=-1),
              helper.make_node("Unsqueeze", ["kept64", "axes_last"], ["kept3"]),
              helper.make_node("Mul", ["hot", "kept3"], ["routed"]),
              helper.make_node("ReduceSum", ["routed", "axes"], ["experts"], keepdims=0)]
    nodes.insert(0, const("axes_last", [1], [2]))
    outputs.append(helper.make_tensor_value_info("experts", TensorProto.INT64, ["N", 3]))
if filled:
    nodes += [helper.make_node("Constant", [], ["true"], value=helper.make_tensor("true", TensorProto.BOOL, [], [True])),
              helper.make_node("Constant", [], ["five"], value=helper.make_tensor("five", TensorProto.INT64, [1], [5])),
              helper.make_node("Shape", ["ids"], ["batch"], start=0, end=1),
              helper.make_node("Concat", ["batch", "five"], ["full_shape"], axis=0),
              helper.make_node("Expand", ["true", "full_shape"], ["full"]),
              helper.make_node("Cast", ["full"], ["full64"], to=TensorProto.INT64),
              helper.make_node("ReduceSum", ["full64", "axes"], ["filled"], keepdims=0)]
    outputs.append(helper.make_tensor_value_info("filled", TensorProto.INT64, ["N"]))
graph = helper.make_graph(nodes, "int_count",
                          [helper.make_tensor_value_info("ids", TensorProto.INT64, ["N", 6])],
                          outputs)
save_model(graph, sys.argv[1], opset=15 if filled else 13, ir_version=8 if filled else 7)
rng = np.random.default_rng(3)
ids = rng.integers(2, 50, (2, 6)).astype(np.int64)
ids[0, 4:] = 1  # padded at the end, as a tokenizer pads
ids[1, :] = 1   # all padding: count 0, minus 1
save_data(sys.argv[2], ids=ids)
