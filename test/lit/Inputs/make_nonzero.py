"""NonZero folded on compile-time inputs: the exporter's arange idiom
NonZero(ConstantOfShape(n)) and a constant 2-D mask's coordinates, each
used to gather columns of x. Saves the model, x, and numpy's expected
outputs (expected.npz in the data folder)."""
import os
import sys

import numpy as np
import onnx
import onnx.helper as h
from onnx import numpy_helper as nh
out, data = sys.argv[1], sys.argv[2]  # and the expected outputs' .npz
I = onnx.TensorProto.INT64
b = np.array([[1, 0, 1], [0, 1, 1]], bool)
nodes = [
    # arange(3) the exporter's way: NonZero(ConstantOfShape(shape[1:2]))
    h.make_node("Shape", ["x"], ["s"], start=1, end=2),
    h.make_node("ConstantOfShape", ["s"], ["ones"], value=nh.from_array(np.array([1], np.int64))),
    h.make_node("NonZero", ["ones"], ["nz1"]),
    h.make_node("Squeeze", ["nz1", "zero"], ["ar"]),
    h.make_node("Gather", ["x", "ar"], ["y1"], axis=1),
    # a 2-D constant mask's coordinates, row-major: flat = row * 3 + col
    h.make_node("NonZero", ["b"], ["nz2"]),
    h.make_node("Gather", ["nz2", "zero0"], ["rows"], axis=0),
    h.make_node("Gather", ["nz2", "one"], ["cols"], axis=0),
    h.make_node("Mul", ["rows", "three"], ["r3"]),
    h.make_node("Add", ["r3", "cols"], ["flat"]),
    h.make_node("Gather", ["x", "flat"], ["y2"], axis=1),
]
inits = [nh.from_array(b, "b"), nh.from_array(np.array([0], np.int64), "zero"), nh.from_array(np.array(0, np.int64), "zero0"),
         
         nh.from_array(np.array(1, np.int64), "one"), nh.from_array(np.array(3, np.int64), "three")]
g = h.make_graph(nodes, "g", [h.make_tensor_value_info("x", 1, ["N", 6])],
                 [h.make_tensor_value_info("y1", 1, ["N", 6]), h.make_tensor_value_info("y2", 1, ["N", 4])], inits)
m = h.make_model(g, opset_imports=[h.make_opsetid("", 15)])
onnx.checker.check_model(m)
onnx.save(m, out)
os.makedirs(data, exist_ok=True)
x = np.arange(12, dtype=np.float32).reshape(2, 6)
np.save(f"{data}/x.npy", x)
r, c = np.nonzero(b)
np.savez(sys.argv[3], y1=x[:, np.arange(6)], y2=x[:, r * 3 + c])
