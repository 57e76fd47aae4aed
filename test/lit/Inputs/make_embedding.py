#!/usr/bin/python3
"""An embedding model: ids [N, 3] -> Gather(E [6, 4]) -> ReduceMean over the
3 tokens -> Gemm(W [2, 4]) -> y [N, 2]; its data (ids that repeat within a
sample and across samples); and the weights after SGD with K-micro-batch
accumulation, computed in float64 from central finite differences of a
numpy forward.

With FIXED_ROW, that row of the table gets no gradient (--fixed-rows).

usage: make_embedding.py OUT.onnx DATA_DIR MICRO_BATCH K STEPS LR EXPECTED.npz [FIXED_ROW]
"""
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import save_data, save_model, sgd

out, data = sys.argv[1], Path(sys.argv[2])
n, k, steps, lr, expected = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6]), sys.argv[7]
rng = np.random.default_rng(6)
params = {"emb": rng.normal(0, 0.5, (6, 4)).astype(np.float32),
          "w": rng.normal(0, 0.5, (2, 4)).astype(np.float32)}
nodes = [helper.make_node("Gather", ["emb", "ids"], ["e"], axis=0),
         helper.make_node("ReduceMean", ["e"], ["m"], axes=[1], keepdims=0),
         helper.make_node("Gemm", ["m", "w"], ["y"], transB=1)]
graph = helper.make_graph(
    nodes, "embedding",
    [helper.make_tensor_value_info("ids", TensorProto.INT64, ["N", 3])],
    [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 2])],
    [numpy_helper.from_array(v, key) for key, v in params.items()])
save_model(graph, out, opset=13, ir_version=7)

ids = rng.integers(0, 6, (8, 3)).astype(np.int64)
ids[0] = [1, 1, 5]  # a repeat within a sample
ids[1, 0] = -1      # counted from the end: row 5
t = rng.normal(size=(8, 2)).astype(np.float32)
save_data(data, ids=ids, targets=t)


def loss(p, ib, tb):
    wrapped = np.where(ib < 0, ib + 6, ib)
    y = p["emb"][wrapped].mean(axis=1) @ p["w"].T
    return ((y - tb) ** 2).mean()


def window_loss(p, s):  # each micro-batch's mean loss counts 1/K
    total = 0.0
    for j in range(k):
        m = ((s * k + j) % (8 // n)) * n
        total += loss(p, ids[m:m + n], t[m:m + n].astype(np.float64)) / k
    return total


fixed = {"emb": [int(sys.argv[8])]} if len(sys.argv) > 8 else None
np.savez(expected, **sgd(params, window_loss, steps, lr, fixed_rows=fixed))
