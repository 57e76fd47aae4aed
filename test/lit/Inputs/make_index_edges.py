#!/usr/bin/python3
"""Forward-only edge cases of the run-time indexing and product importers,
each with numpy's answer: GatherElements with indices out of range in
either direction (they read 0: ONNX leaves them undefined, and otc never
reads a neighbour), an Einsum with two diagonals ("iijj->ij"), and a
MatMul whose rhs alone has a batch dim ([3, 4] @ [1, 4, 5] is [1, 3, 5]).
Writes DIR/NAME.onnx, DIR/NAME/ (inputs) and DIR/NAME.npy (expected).

usage: make_index_edges.py DIR
"""
import sys
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper

from lit_inputs import save_model

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
rng = np.random.default_rng(20)
F, I = TensorProto.FLOAT, TensorProto.INT64
n = helper.make_node


def case(name, node, inputs, expected, opset):
    info = [helper.make_tensor_value_info(k, F if v.dtype == np.float32 else I, v.shape)
            for k, v in inputs.items()]
    graph = helper.make_graph([node], name, info,
                              [helper.make_tensor_value_info("y", F, expected.shape)])
    save_model(graph, out / f"{name}.onnx", opset=opset)
    (out / name).mkdir(exist_ok=True)
    for k, v in inputs.items():
        np.save(out / name / f"{k}.npy", v)
    np.save(out / f"{name}.npy", expected)


x = np.arange(6, dtype=np.float32).reshape(2, 3)
ids = np.array([[3, -4], [1, -1]], np.int64)
case("gather_out_of_range", n("GatherElements", ["x", "i"], ["y"], axis=1), {"x": x, "i": ids},
     np.array([[0, 0], [4, 5]], np.float32), 13)
d = rng.normal(size=(3, 3, 2, 2)).astype(np.float32)
case("einsum_diagonals", n("Einsum", ["x"], ["y"], equation="iijj->ij"), {"x": d},
     np.einsum("iijj->ij", d), 12)
a, b = rng.normal(size=(3, 4)).astype(np.float32), rng.normal(size=(1, 4, 5)).astype(np.float32)
case("matmul_rhs_batch", n("MatMul", ["a", "b"], ["y"]), {"a": a, "b": b}, np.matmul(a, b), 13)
