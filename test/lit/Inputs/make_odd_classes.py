#!/usr/bin/python3
"""A classifier over 101 classes: x -> Gemm + ReLU -> Gemm (no bias, as
GPT-2's tied head; with `bias`, BERT's MLM decoder) -> logits [N, 101]. 101 columns are 202 bytes in 16 bits and 404 in float32,
so its logits' rows start misaligned for cuBLAS unless code generation pads
them (Lowering::padRows), as GPT-2's 50257-column vocabulary does. Data:
64 samples, labels drawn at random.

usage: make_odd_classes.py OUT.onnx DATA_DIR [bias]
"""
import sys
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import save_model, save_data

out, data = sys.argv[1], Path(sys.argv[2])
bias = sys.argv[3:] == ["bias"]
rng = np.random.default_rng(7)
n = helper.make_node
inits = [numpy_helper.from_array(rng.normal(0, 0.3, (24, 16)).astype(np.float32), "w1"),
         numpy_helper.from_array(rng.normal(0, 0.1, 24).astype(np.float32), "b1"),
         numpy_helper.from_array(rng.normal(0, 0.3, (101, 24)).astype(np.float32), "w2"),
         numpy_helper.from_array(rng.normal(0, 0.1, 101).astype(np.float32), "b2")]
nodes = [n("Gemm", ["x", "w1", "b1"], ["h"], transB=1), n("Relu", ["h"], ["r"]),
         n("Gemm", ["r", "w2"] + (["b2"] if bias else []), ["logits"], transB=1)]
if not bias:
    inits.pop()
graph = helper.make_graph(
    nodes, "odd_classes",
    [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 16])],
    [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 101])], inits)
save_model(graph, out, opset=13, ir_version=7)
save_data(data, x=rng.normal(size=(64, 16)).astype(np.float32),
          labels=rng.integers(0, 101, 64).astype(np.int64))
