#!/usr/bin/python3
"""Writes an ONNX model whose forward is a weight multiply followed by a
chain of N elementwise links, each using its operand twice (x <- x * x, or
tanh(x) + x with --op tanh_add), and a mean-squared loss: the gradient of
the weight runs back through the whole chain.

usage: make_chain.py N OUT.onnx [--op mul|tanh_add]
       make_chain.py N OUT.mlir --mlir   (the tanh_add chain as a plain
                                          function for `otc kernel`)
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    p = argparse.ArgumentParser()
    p.add_argument("n", type=int)
    p.add_argument("out")
    p.add_argument("--op", choices=["mul", "tanh_add"], default="mul")
    p.add_argument("--mlir", action="store_true")
    a = p.parse_args()
    if a.mlir:
        t = "tensor<64x32xf32>"
        lines = [f"func.func @chain(%x0: {t}) -> {t} {{"]
        for i in range(a.n):
            lines.append(f"  %t{i} = otc.tanh %x{i} : {t}")
            lines.append(f"  %x{i + 1} = otc.add %t{i}, %x{i} : {t}, {t} -> {t}")
        lines += [f"  return %x{a.n} : {t}", "}"]
        open(a.out, "w").write("\n".join(lines) + "\n")
        return
    nodes, x = [helper.make_node("Mul", ["x", "w"], ["h"])], "h"
    for i in range(a.n):
        if a.op == "mul":
            nodes.append(helper.make_node("Mul", [x, x], [f"h{i}"]))
        else:
            nodes.append(helper.make_node("Tanh", [x], [f"t{i}"]))
            nodes.append(helper.make_node("Add", [f"t{i}", x], [f"h{i}"]))
        x = f"h{i}"
    nodes.append(helper.make_node("Identity", [x], ["y"]))
    w = numpy_helper.from_array(np.full((4,), 0.5, np.float32), "w")
    graph = helper.make_graph(
        nodes, "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 4])], [w])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, a.out)


if __name__ == "__main__":
    main()
