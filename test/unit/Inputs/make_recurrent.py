#!/usr/bin/python3
"""Float64 LSTM and GRU models for GradientTest's finite-difference checks
through time (deterministic). The loss weights every output with a data
input, so each element of Y, Y_h (and Y_c) gets its own gradient:
  lstm_f64.onnx: bidirectional, layout 0, bias, learned initial_h/initial_c
  gru_f64.onnx:  forward, layout 1 (batch first), linear_before_reset 0
"""
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent
D = TensorProto.DOUBLE


def model(name, op, gates, dirs, layout, attrs, states):
    T, N, I, H = 3, 2, 3, 2
    rng = np.random.default_rng(0)
    x_shape = [T, N, I] if layout == 0 else [N, T, I]
    s_shape = [dirs, N, H] if layout == 0 else [N, dirs, H]
    y_shape = [T, dirs, N, H] if layout == 0 else [N, T, dirs, H]
    inits = {"W": (dirs, gates * H, I), "R": (dirs, gates * H, H), "B": (dirs, 2 * gates * H)}
    for s in states:
        inits[s] = s_shape
    init = [numpy_helper.from_array(rng.uniform(-0.8, 0.8, shape), k) for k, shape in inits.items()]
    outs = ["Y", "Y_h", "Y_c"][:2 + (op == "LSTM")]
    ins = ["X", "W", "R", "B", ""] + list(states)
    nodes = [helper.make_node(op, ins, outs, hidden_size=H, layout=layout, **attrs)]
    inputs = [helper.make_tensor_value_info("X", D, x_shape)]
    terms = []
    for o in outs:
        shape = y_shape if o == "Y" else s_shape
        inputs.append(helper.make_tensor_value_info("w_" + o, D, shape))
        nodes.append(helper.make_node("Mul", [o, "w_" + o], ["p_" + o]))
        nodes.append(helper.make_node("ReduceSum", ["p_" + o], ["s_" + o], keepdims=0))
        terms.append("s_" + o)
    nodes.append(helper.make_node("Sum", terms, ["loss"]))
    g = helper.make_graph(nodes, name, inputs, [helper.make_tensor_value_info("loss", D, [])], init)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    onnx.save(m, HERE / f"{name}.onnx")


model("lstm_f64", "LSTM", 4, 2, 0, {"direction": "bidirectional"}, ["initial_h", "initial_c"])
model("gru_f64", "GRU", 3, 1, 1, {"linear_before_reset": 0}, ["initial_h"])
