#!/usr/bin/python3
"""Float64 ONNX models for GradientTest's finite-difference checks of what
the importer composes (deterministic).
  lstm_f64.onnx: bidirectional, layout 0, bias, learned initial_h/initial_c
  gru_f64.onnx:  forward, layout 1 (batch first), linear_before_reset 0
  gru_lbr_f64.onnx: bidirectional, layout 0, linear_before_reset 1 (the
      candidate's recurrent bias after the reset, as PyTorch's GRU)
  rnn_f64.onnx: bidirectional tanh, layout 0, learned initial_h
  rnn_relu_f64.onnx: reverse relu, layout 1
  *_lens_f64.onnx: the same cells with sequence_lens [3, 1] (a row held
      past its first step): LSTM bidirectional, GRU reverse, RNN forward
  losses_f64.onnx: SoftmaxCrossEntropyLoss with class weights, ignore_index
      and its log_prob output; NegativeLogLikelihoodLoss with sum and none
      reductions over N x C x d; BCE written as Log(Sigmoid) and
      Log(1 - Sigmoid), as PyTorch exports it
  gelu_f64.onnx: Gelu (opset 20), exact and tanh-approximated
  activations_f64.onnx: the composed activations (ACTIVATIONS, below)
The recurrent models weight every output with a data input, so each
element of Y, Y_h (and Y_c) gets its own gradient.
"""
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent
D = TensorProto.DOUBLE


def model(name, op, gates, dirs, layout, attrs, states, lens=None):
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
    ins = ["X", "W", "R", "B", "lens" if lens else ""] + list(states)
    if lens:  # constant lengths: the ops' lens operand, a short row held
        init.append(numpy_helper.from_array(np.array(lens, np.int32), "lens"))
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
model("gru_lbr_f64", "GRU", 3, 2, 0, {"direction": "bidirectional", "linear_before_reset": 1},
      ["initial_h"])
model("rnn_f64", "RNN", 1, 2, 0, {"direction": "bidirectional"}, ["initial_h"])
model("rnn_relu_f64", "RNN", 1, 1, 1, {"direction": "reverse", "activations": ["Relu"]}, [])
model("lstm_lens_f64", "LSTM", 4, 2, 0, {"direction": "bidirectional"}, ["initial_h", "initial_c"],
      lens=[3, 1])
model("gru_lens_f64", "GRU", 3, 1, 1, {"direction": "reverse", "linear_before_reset": 1},
      ["initial_h"], lens=[1, 3])
model("rnn_lens_f64", "RNN", 1, 1, 0, {}, ["initial_h"], lens=[3, 1])


def losses():
    rng = np.random.default_rng(1)
    N, C, d = 3, 4, 2
    labels = np.array([[0, 3], [2, 2], [1, 0]], np.int64)  # class 2 is ignored below
    # The parameters (GradientTest draws their values); the rest constants.
    init = [numpy_helper.from_array(rng.uniform(-2, 2, (N, C, d)), "logits"),
            numpy_helper.from_array(rng.uniform(-2, 2, (N, C, d)), "scores"),
            numpy_helper.from_array(rng.uniform(-2, 2, 6), "z")]
    consts = {"class_w": np.array([0.5, 2.0, 1.0, 1.5]), "labels": labels,
              "clicked": np.array([1.0, 0.0, 1.0, 0.0, 1.0, 0.0]), "one": np.array(1.0)}
    nodes = [helper.make_node("Constant", [], [k], value=numpy_helper.from_array(v, k))
             for k, v in consts.items()] + [
        helper.make_node("SoftmaxCrossEntropyLoss", ["logits", "labels", "class_w"],
                         ["sce", "log_prob"], ignore_index=2),
        helper.make_node("ReduceSum", ["log_prob"], ["lp_sum"], keepdims=0),
        helper.make_node("LogSoftmax", ["scores"], ["logp"], axis=1),
        helper.make_node("NegativeLogLikelihoodLoss", ["logp", "labels"], ["nll"], reduction="sum"),
        helper.make_node("NegativeLogLikelihoodLoss", ["logp", "labels", "class_w"], ["nll_each"],
                         reduction="none"),
        helper.make_node("Mul", ["nll_each", "nll_each"], ["nll_sq"]),
        helper.make_node("ReduceSum", ["nll_sq"], ["nll_sq_sum"], keepdims=0),
        helper.make_node("Sigmoid", ["z"], ["p"]),
        helper.make_node("Log", ["p"], ["log_p"]),
        helper.make_node("Sub", ["one", "p"], ["q"]),
        helper.make_node("Log", ["q"], ["log_q"]),
        helper.make_node("Mul", ["clicked", "log_p"], ["t1"]),
        helper.make_node("Sub", ["one", "clicked"], ["not_clicked"]),
        helper.make_node("Mul", ["not_clicked", "log_q"], ["t2"]),
        helper.make_node("Add", ["t1", "t2"], ["bce_each"]),
        helper.make_node("ReduceMean", ["bce_each"], ["bce"], keepdims=0),
        helper.make_node("Sum", ["sce", "lp_sum", "nll", "nll_sq_sum", "bce"], ["loss"]),
    ]
    g = helper.make_graph(nodes, "losses", [], [helper.make_tensor_value_info("loss", D, [])],
                          init)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    onnx.checker.check_model(m)
    onnx.save(m, HERE / "losses_f64.onnx")


losses()


def gelu():
    rng = np.random.default_rng(2)
    init = [numpy_helper.from_array(rng.uniform(-3, 3, (2, 5)), "x")]
    nodes = [helper.make_node("Gelu", ["x"], ["a"]),
             helper.make_node("Gelu", ["x"], ["b"], approximate="tanh"),
             helper.make_node("Mul", ["a", "b"], ["ab"]),
             helper.make_node("ReduceSum", ["ab"], ["loss"], keepdims=0)]
    g = helper.make_graph(nodes, "gelu", [], [helper.make_tensor_value_info("loss", D, [])], init)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])
    m.ir_version = 8
    onnx.save(m, HERE / "gelu_f64.onnx")


gelu()


# The activations the importer composes from primitives, and Mish as
# PyTorch exports it (x tanh(softplus(x)); ONNX 1.12 has no Mish op): each
# applied to 3 x the parameter (kinks and saturations inside the drawn
# range), weighted by a data input, and summed.
ACTIVATIONS = [
    ("Softsign", {}),
    ("HardSigmoid", {"alpha": 0.25, "beta": 0.4}),
    ("HardSwish", {}),
    ("Elu", {"alpha": 0.7}),
    ("Selu", {}),
    # Celu is float32-only in ONNX: activations.test checks it against
    # PyTorch's autograd instead.
    ("Mish", {}),
    ("Sinh", {}),
    ("Cosh", {}),
    ("Asinh", {}),
    # Inside their domains: Acosh of 1.5 + z^2, the others of 0.9 tanh(z).
    ("Acosh", {}, "above1"),
    ("Atanh", {}, "unit"),
    ("Asin", {}, "unit"),
    ("Acos", {}, "unit"),
]


def activations():
    init = [numpy_helper.from_array(np.zeros((2, 3)), "p")]  # GradientTest draws it
    three = numpy_helper.from_array(np.array(3.0), "three")
    nodes = [helper.make_node("Constant", [], ["three"], value=three),
             helper.make_node("Mul", ["p", "three"], ["z"])]
    inputs, terms = [], []
    nodes += [helper.make_node("Constant", [], ["c15"], value=numpy_helper.from_array(np.array(1.5), "c15")),
              helper.make_node("Constant", [], ["c09"], value=numpy_helper.from_array(np.array(0.9), "c09")),
              helper.make_node("Mul", ["z", "z"], ["zz"]),
              helper.make_node("Add", ["zz", "c15"], ["above1"]),
              helper.make_node("Tanh", ["z"], ["tz"]),
              helper.make_node("Mul", ["tz", "c09"], ["unit"])]
    for i, (op, attrs, *domain) in enumerate(ACTIVATIONS):
        if op == "Mish":
            nodes += [helper.make_node("Softplus", ["z"], [f"sp{i}"]),
                      helper.make_node("Tanh", [f"sp{i}"], [f"t{i}"]),
                      helper.make_node("Mul", ["z", f"t{i}"], [f"a{i}"])]
        else:
            nodes.append(helper.make_node(op, [domain[0] if domain else "z"], [f"a{i}"], **attrs))
        nodes += [helper.make_node("Mul", [f"a{i}", f"w{i}"], [f"p{i}"]),
                  helper.make_node("ReduceSum", [f"p{i}"], [f"s{i}"], keepdims=0)]
        inputs.append(helper.make_tensor_value_info(f"w{i}", D, [2, 3]))
        terms.append(f"s{i}")
    nodes.append(helper.make_node("Sum", terms, ["loss"]))
    g = helper.make_graph(nodes, "activations", inputs,
                          [helper.make_tensor_value_info("loss", D, [])], init)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, HERE / "activations_f64.onnx")


activations()
