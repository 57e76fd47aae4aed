#!/usr/bin/python3
"""Sequences as PyTorch 2's exporter writes a split into a list: h = x W^T
(W [6, 4]); SplitToSequence of h by a scalar size 4 (parts 4 and 2), of
its first part into columns with keepdims = 0, and of tanh(h) by sizes
[1, 5]; SequenceAt with positions -1, 0 and 2; SequenceLength (4, folded);
ConcatFromSequence. y = [last part * 4, column 2, tanh(h)]. tanh(h),
computed between the first split and the SequenceAt of its last part, is
named as otc would name that part, which otc must then name otherwise. Its data, and W after SGD from float64 finite
differences of the numpy forward.

MODE split18 instead splits h = x W^T (W [5, 4]) with opset 18's Split
by num_outputs = 2 (parts 3 and 2, the last smaller): y = [tanh(part 0),
2 part 1]. MODE many splits x (a 5000-wide input) into columns, more parts
than otc takes (no data).

usage: make_sequence.py MODE OUT.onnx DATA_DIR STEPS LR EXPECTED.npz
"""
import sys
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import batch, save_data, save_model, sgd

mode, out, data = sys.argv[1], sys.argv[2], Path(sys.argv[3])
steps, lr, expected = int(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
rng = np.random.default_rng(12)
n = helper.make_node
i64 = lambda name, vals: numpy_helper.from_array(np.array(vals, np.int64), name)
if mode == "many":
    graph = helper.make_graph(
        [n("SplitToSequence", ["x"], ["s"], axis=1), n("SequenceAt", ["s", "zero"], ["y"])],
        "many", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 5000])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 1])], [i64("zero", 0)])
    save_model(graph, out, opset=13, ir_version=7)
    sys.exit(0)
if mode == "split18":
    w0 = rng.normal(0, 0.5, (5, 4)).astype(np.float32)
    graph = helper.make_graph(
        [n("Gemm", ["x", "w"], ["h"], transB=1),
         n("Split", ["h"], ["a", "b"], axis=1, num_outputs=2),
         n("Tanh", ["a"], ["ta"]), n("Add", ["b", "b"], ["b2"]),
         n("Concat", ["ta", "b2"], ["y"], axis=1)],
        "split18", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 5])],
        [numpy_helper.from_array(w0, "w")])
    save_model(graph, out, opset=18, ir_version=10, check=False)  # newer than libonnx 1.12
    x = rng.normal(size=(8, 4)).astype(np.float32)
    t = rng.normal(size=(8, 5)).astype(np.float32)
    save_data(data, x=x, targets=t)

    def loss18(w, xb, tb):
        h = xb @ w.T
        return ((np.concatenate([np.tanh(h[:, :3]), 2 * h[:, 3:]], axis=1) - tb) ** 2).mean()
    p = sgd({"w": w0}, lambda p, s: loss18(p["w"], batch(x, s).astype(np.float64),
                                           batch(t, s).astype(np.float64)), steps, lr)
    np.savez(expected, w=p["w"])
    sys.exit(0)
w0 = rng.normal(0, 0.5, (6, 4)).astype(np.float32)
nodes = [n("Gemm", ["x", "w"], ["h"], transB=1),
         n("SplitToSequence", ["h", "four"], ["s1"], axis=1),
         n("Tanh", ["h"], ["s1/otc_part1"]),
         n("SequenceAt", ["s1", "minus_one"], ["last"]),
         n("SequenceAt", ["s1", "zero"], ["first"]),
         n("SplitToSequence", ["first"], ["s2"], axis=1, keepdims=0),
         n("SequenceAt", ["s2", "two"], ["col"]),
         n("Unsqueeze", ["col", "axis1"], ["col2"]),
         n("SequenceLength", ["s2"], ["len"]),
         n("Cast", ["len"], ["lenf"], to=TensorProto.FLOAT),
         n("Mul", ["last", "lenf"], ["scaled"]),
         n("SplitToSequence", ["s1/otc_part1", "sizes"], ["s3"], axis=1),
         n("ConcatFromSequence", ["s3"], ["joined"], axis=1),
         n("Concat", ["scaled", "col2", "joined"], ["y"], axis=1)]
graph = helper.make_graph(
    nodes, "sequence",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 9])],
    [numpy_helper.from_array(w0, "w"), i64("four", 4), i64("minus_one", -1), i64("zero", 0),
     i64("two", 2), i64("axis1", [1]), i64("sizes", [1, 5])])
save_model(graph, out, opset=13, ir_version=7)

x = rng.normal(size=(8, 4)).astype(np.float32)
t = rng.normal(size=(8, 9)).astype(np.float32)
save_data(data, x=x, targets=t)


def loss(w, xb, tb):
    h = xb @ w.T
    y = np.concatenate([h[:, 4:] * 4, h[:, 2:3], np.tanh(h)], axis=1)
    return ((y - tb) ** 2).mean()


p = sgd({"w": w0}, lambda p, s: loss(p["w"], batch(x, s).astype(np.float64), batch(t, s).astype(np.float64)),
        steps, lr)
np.savez(expected, w=p["w"])
