"""x[mask] for a run-time mask (NonZero, Transpose, GatherND), then a row-wise
op and reductions over the rows: the mean, max, min, sum and L2 norm of 2 x
over x's positive rows, the mean of its rows' softmax along the other dim,
and the per-row sum kept as rows and then summed. x [N, 3], the mask x[:, 0]
> 0. Saves the model, x, and numpy's expected outputs (expected.npz)."""
import os
import sys

import numpy as np
import onnx
import onnx.helper as h
from onnx import numpy_helper as nh

out, data, expected = sys.argv[1:4]
F = onnx.TensorProto.FLOAT
nodes = [
    h.make_node("Gather", ["x", "zero"], ["first"], axis=1),
    h.make_node("Greater", ["first", "zerof"], ["mask"]),
    h.make_node("NonZero", ["mask"], ["nz"]),
    h.make_node("Transpose", ["nz"], ["idx"], perm=[1, 0]),
    h.make_node("GatherND", ["x", "idx"], ["rows"]),
    h.make_node("Mul", ["rows", "two"], ["r2"]),
    h.make_node("ReduceMean", ["r2"], ["mean"], keepdims=0),
    h.make_node("ReduceMax", ["r2"], ["max"], keepdims=0),
    h.make_node("ReduceMin", ["r2"], ["min"], axes=[0], keepdims=1),
    h.make_node("ReduceSum", ["r2", "axis0"], ["sum"], keepdims=0),
    h.make_node("ReduceL2", ["r2"], ["l2"], keepdims=0),
    h.make_node("Softmax", ["r2"], ["p"], axis=1),
    h.make_node("ReduceMean", ["p"], ["pmean"], axes=[0, 1], keepdims=0),
    h.make_node("ReduceSum", ["r2", "axis1"], ["perrow"], keepdims=0),
    h.make_node("ReduceSum", ["perrow"], ["rowsum"], keepdims=0),
]
inits = [nh.from_array(np.array(0, np.int64), "zero"), nh.from_array(np.array(0, np.float32), "zerof"),
         nh.from_array(np.array(2, np.float32), "two"), nh.from_array(np.array([0], np.int64), "axis0"),
         nh.from_array(np.array([1], np.int64), "axis1")]
outs = [h.make_tensor_value_info("mean", F, []), h.make_tensor_value_info("max", F, []),
        h.make_tensor_value_info("min", F, [1, 3]), h.make_tensor_value_info("sum", F, [3]),
        h.make_tensor_value_info("l2", F, []), h.make_tensor_value_info("pmean", F, []),
        h.make_tensor_value_info("rowsum", F, [])]
g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", F, ["N", 3])], outs, inits)
m = h.make_model(g, opset_imports=[h.make_opsetid("", 13)])
onnx.checker.check_model(m)
onnx.save(m, out)
os.makedirs(data, exist_ok=True)
x = np.random.default_rng(0).normal(0, 1, (6, 3)).astype(np.float32)
x[:, 0] = [1.5, -1, 0, 2, -0.5, 0.25]
np.save(f"{data}/x.npy", x)
r = 2 * x[x[:, 0] > 0].astype(np.float64)
e = np.exp(r - r.max(1, keepdims=True))
np.savez(expected, mean=r.mean(), max=r.max(), min=r.min(0, keepdims=True), sum=r.sum(0),
         l2=np.sqrt((r * r).sum()), pmean=(e / e.sum(1, keepdims=True)).mean(), rowsum=r.sum())
