#!/usr/bin/python3
"""Loss models for lit/import/losses.test.

usage: make_losses.py DIR
  DIR/log_sigmoid.onnx: x [6] -> log(sigmoid(x)) and log(1 - sigmoid(x)),
      as PyTorch exports BCE-with-logits; DIR/x/x.npy holds logits up to
      +-100 and DIR/expected.npz the float64 values -softplus(-x), -softplus(x).
  DIR/nll_zero.onnx: NegativeLogLikelihoodLoss of Log(p), where p holds an
      exact 0 at a class that is not the label (log p = -inf there); DIR/p/
      holds p, and the loss must be -(log 0.5 + log 0.8) / 2.
  DIR/weighted.onnx: a Gemm classifier whose loss is SoftmaxCrossEntropyLoss
      with class weights and ignore_index 1 (N x 3 logits); DIR/bad/ holds
      labels with class 3, which does not exist.
  DIR/omitted.onnx: the same Gemm and both losses with their optional inputs
      named "" (no bias, no class weights), as exporters write them; DIR/omit/
      holds the data and DIR/omit.npz the float64 losses.
"""
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = Path(sys.argv[1])
(out / "x").mkdir(parents=True, exist_ok=True)
(out / "bad").mkdir(parents=True, exist_ok=True)
F = TensorProto.FLOAT

x = np.array([-100.0, -20.0, -1.0, 0.0, 30.0, 100.0], np.float32)
np.save(out / "x" / "x.npy", x)
xd = x.astype(np.float64)
np.savez(out / "expected.npz", log_p=-np.logaddexp(0, -xd), log_q=-np.logaddexp(0, xd))
one = numpy_helper.from_array(np.array(1.0, np.float32), "one")
nodes = [helper.make_node("Constant", [], ["one"], value=one),
         helper.make_node("Sigmoid", ["x"], ["p"]),
         helper.make_node("Log", ["p"], ["log_p"]),
         helper.make_node("Sub", ["one", "p"], ["q"]),
         helper.make_node("Log", ["q"], ["log_q"])]
g = helper.make_graph(nodes, "log_sigmoid", [helper.make_tensor_value_info("x", F, [6])],
                      [helper.make_tensor_value_info("log_p", F, [6]),
                       helper.make_tensor_value_info("log_q", F, [6])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), out / "log_sigmoid.onnx")

rng = np.random.default_rng(0)
w = numpy_helper.from_array(rng.normal(0, 0.5, (3, 4)).astype(np.float32), "w")
cw = numpy_helper.from_array(np.array([1.0, 2.0, 0.5], np.float32), "class_w")
nodes = [helper.make_node("Gemm", ["feat", "w"], ["logits"], transB=1),
         helper.make_node("Constant", [], ["cw"], value=cw),
         helper.make_node("SoftmaxCrossEntropyLoss", ["logits", "labels", "cw"], ["loss"],
                          ignore_index=1)]
g = helper.make_graph(nodes, "weighted",
                      [helper.make_tensor_value_info("feat", F, ["batch", 4]),
                       helper.make_tensor_value_info("labels", TensorProto.INT64, ["batch"])],
                      [helper.make_tensor_value_info("loss", F, [])], [w])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), out / "weighted.onnx")
np.save(out / "bad" / "feat.npy", rng.normal(size=(4, 4)).astype(np.float32))
np.save(out / "bad" / "labels.npy", np.array([0, 2, 3, 1], np.int64))

(out / "p").mkdir(parents=True, exist_ok=True)
np.save(out / "p" / "p.npy", np.array([[0.5, 0.5, 0.0], [0.2, 0.0, 0.8]], np.float32))
labels = numpy_helper.from_array(np.array([0, 2], np.int64), "labels")
nodes = [helper.make_node("Constant", [], ["labels"], value=labels),
         helper.make_node("Log", ["p"], ["logp"]),
         helper.make_node("NegativeLogLikelihoodLoss", ["logp", "labels"], ["loss"])]
g = helper.make_graph(nodes, "nll_zero", [helper.make_tensor_value_info("p", F, [2, 3])],
                      [helper.make_tensor_value_info("loss", F, [])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), out / "nll_zero.onnx")

# Optional inputs given as "" are absent: Gemm without C, losses unweighted.
nodes = [helper.make_node("Gemm", ["feat", "w", ""], ["logits"], transB=1),
         helper.make_node("SoftmaxCrossEntropyLoss", ["logits", "labels", ""], ["sce"]),
         helper.make_node("LogSoftmax", ["logits"], ["logp"], axis=1),
         helper.make_node("NegativeLogLikelihoodLoss", ["logp", "labels", ""], ["nll"])]
g = helper.make_graph(nodes, "omitted",
                      [helper.make_tensor_value_info("feat", F, [4, 4]),
                       helper.make_tensor_value_info("labels", TensorProto.INT64, [4])],
                      [helper.make_tensor_value_info("sce", F, []),
                       helper.make_tensor_value_info("nll", F, [])], [w])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), out / "omitted.onnx")
(out / "omit").mkdir(parents=True, exist_ok=True)
feat, ys = rng.normal(size=(4, 4)).astype(np.float32), np.array([0, 2, 1, 2], np.int64)
np.save(out / "omit" / "feat.npy", feat)
np.save(out / "omit" / "labels.npy", ys)
z = feat.astype(np.float64) @ numpy_helper.to_array(w).astype(np.float64).T
logp = z - np.log(np.exp(z).sum(1, keepdims=True))
np.savez(out / "omit.npz", loss=-logp[np.arange(4), ys].mean())
