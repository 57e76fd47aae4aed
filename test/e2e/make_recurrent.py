#!/usr/bin/python3
"""Writes a recurrent model of sequence length T, batch first (layout 1): a
bidirectional LSTM with biases and initial states, then a GRU
(linear_before_reset) and a relu RNN, whose mean square is the loss.

usage: make_recurrent.py OUT.onnx T
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    out, T = sys.argv[1], int(sys.argv[2])
    N, I, H = 2, 6, 5
    rng = np.random.default_rng(0)
    w = lambda name, *shape: numpy_helper.from_array(rng.normal(0, 0.3, shape).astype(np.float32), name)
    inits = [w("W", 2, 4 * H, I), w("R", 2, 4 * H, H), w("B", 2, 8 * H), w("h0", N, 2, H),
             w("c0", N, 2, H), w("Wg", 1, 3 * H, 2 * H), w("Rg", 1, 3 * H, H), w("Bg", 1, 6 * H),
             w("Wr", 1, H, H), w("Rr", 1, H, H), w("Br", 1, 2 * H),
             numpy_helper.from_array(np.array([N, T, 2 * H], np.int64), "shape"),
             numpy_helper.from_array(np.array([N, T, H], np.int64), "shape1")]
    nodes = [
        helper.make_node("LSTM", ["x", "W", "R", "B", "", "h0", "c0"], ["y"], hidden_size=H,
                         direction="bidirectional", layout=1),
        helper.make_node("Reshape", ["y", "shape"], ["z"]),
        helper.make_node("GRU", ["z", "Wg", "Rg", "Bg"], ["g"], hidden_size=H, linear_before_reset=1,
                         layout=1),
        helper.make_node("Reshape", ["g", "shape1"], ["g1"]),
        helper.make_node("RNN", ["g1", "Wr", "Rr", "Br"], ["e"], hidden_size=H, activations=["Relu"],
                         layout=1),
        helper.make_node("Mul", ["e", "e"], ["sq"]),
        helper.make_node("ReduceMean", ["sq"], ["loss"], keepdims=0),
    ]
    graph = helper.make_graph(nodes, "recurrent", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [N, T, I])],
                              [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 14)])
    onnx.checker.check_model(model)
    onnx.save(model, out)


if __name__ == "__main__":
    main()
