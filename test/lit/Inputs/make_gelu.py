#!/usr/bin/python3
"""Gelu at opset 20 (newer than libonnx 1.12), both approximations.

usage: make_gelu.py DIR
  DIR/gelu20.onnx: x [2, 50] -> exact = Gelu(x), tanh = Gelu(x, approximate="tanh")
  DIR/x/x.npy: x from -8 to 8; DIR/expected.npz: PyTorch's gelu of both kinds
  in float64.
"""
import sys
from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper

out = Path(sys.argv[1])
(out / "x").mkdir(parents=True, exist_ok=True)
x = np.linspace(-8, 8, 100, dtype=np.float32).reshape(2, 50)
np.save(out / "x" / "x.npy", x)
xd = torch.from_numpy(x.astype(np.float64))
np.savez(out / "expected.npz", exact=torch.nn.functional.gelu(xd).numpy(),
         tanh=torch.nn.functional.gelu(xd, approximate="tanh").numpy())
F = TensorProto.FLOAT
nodes = [helper.make_node("Gelu", ["x"], ["exact"]),
         helper.make_node("Gelu", ["x"], ["tanh"], approximate="tanh")]
g = helper.make_graph(nodes, "gelu", [helper.make_tensor_value_info("x", F, [2, 50])],
                      [helper.make_tensor_value_info("exact", F, [2, 50]),
                       helper.make_tensor_value_info("tanh", F, [2, 50])])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 20)])
m.ir_version = 8  # what libonnx 1.12 reads
onnx.save(m, out / "gelu20.onnx")
