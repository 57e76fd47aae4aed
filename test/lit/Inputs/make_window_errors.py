#!/usr/bin/python3
"""Window models otc refuses, one per file in OUT_DIR, each a valid ONNX
model: a 4-D convolution, a 3-D MaxPool's Indices output, a dilated
AveragePool, a kernel larger than its padded input, and 3-D
windows whose compositions' intermediates would pass the size limit (the
planes pooled before the depth; a depth padded to 2^36 planes of 2^28).

usage: make_window_errors.py OUT_DIR
"""
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
n = helper.make_node


def save(name, nodes, x_shape, y_shape, inits=(), outputs=("y",), opset=17):
    graph = helper.make_graph(
        nodes, name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info(o, TensorProto.FLOAT if o == "y" else TensorProto.INT64,
                                       y_shape) for o in outputs], list(inits))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    onnx.save(m, str(out / f"{name}.onnx"))


w4 = numpy_helper.from_array(np.ones((2, 1, 2, 2, 2, 2), np.float32), "w")
save("conv4d", [n("Conv", ["x", "w"], ["y"], name="conv4d")], ["N", 1, 3, 3, 3, 3],
     ["N", 2, 2, 2, 2, 2], [w4])
save("pool_indices", [n("MaxPool", ["x"], ["y", "i"], kernel_shape=[2, 2, 2], name="pool")],
     ["N", 1, 4, 4, 4], ["N", 1, 3, 3, 3], outputs=("y", "i"))
save("kernel_too_big", [n("MaxPool", ["x"], ["y"], kernel_shape=[5, 5], pads=[0, 0, 0, 0],
                          name="pool")], ["N", 1, 4, 4], ["N", 1, 1, 1])
w1 = numpy_helper.from_array(np.ones((1, 1, 1, 1, 1), np.float32), "w")
save("pool3d_planes", [n("MaxPool", ["x"], ["y"], kernel_shape=[1, 1, 1], strides=[65536, 1, 1],
                         pads=[0, 2**29, 0, 0, 2**29, 0], name="pool3d")],
     [1, 1, 65536, 1, 1], [1, 1, 1, 2**30 + 1, 1])
save("conv3d_padded", [n("Conv", ["x", "w"], ["y"], strides=[2**36, 1, 1],
                         pads=[2**36, 0, 0, 0, 0, 0], name="conv3d")],
     [1, 1, 1, 16384, 16384], [1, 1, 2, 16384, 16384], [w1])
