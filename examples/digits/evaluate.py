#!/usr/bin/python3
"""Held-out accuracy of an ONNX classifier, computed with plain numpy.

usage: evaluate.py MODEL.onnx DATA_DIR

DATA_DIR holds one <name>.npy per graph input (e.g. x.npy) plus labels.npy.
The graph is run node by node by a tiny interpreter, so any model built from
the supported ops works, e.g. the initial mlp.onnx or a trained one from otc.
"""
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper


def gemm(a, b, c=None, alpha=1.0, beta=1.0, transA=0, transB=0):
    y = alpha * ((a.T if transA else a) @ (b.T if transB else b))
    return y if c is None else y + beta * c


OPS = {
    "Gemm": gemm,
    "MatMul": lambda a, b: a @ b,
    "Add": lambda a, b: a + b,
    "Relu": lambda x: np.maximum(x, 0),
    "Tanh": np.tanh,
    "Identity": lambda x: x,
}


def run(graph, feeds):
    values = {init.name: numpy_helper.to_array(init) for init in graph.initializer}
    values.update(feeds)
    for node in graph.node:
        if node.op_type not in OPS:
            sys.exit(f"error: unsupported op {node.op_type} (node {node.name!r})")
        args = [values[name] for name in node.input if name]
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        values[node.output[0]] = OPS[node.op_type](*args, **attrs)
    return values[graph.output[0].name]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[2])
    model_path, data_dir = Path(sys.argv[1]), Path(sys.argv[2])
    if not model_path.is_file():
        sys.exit(f"error: model not found: {model_path}")

    graph = onnx.load(str(model_path)).graph
    initializers = {init.name for init in graph.initializer}
    # Graph inputs that are not weights are data, fed from DATA_DIR/<name>.npy.
    data_names = [i.name for i in graph.input if i.name not in initializers]
    files = [data_dir / f"{name}.npy" for name in data_names + ["labels"]]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        sys.exit(f"error: missing data file(s): {', '.join(missing)}")

    feeds = {name: np.load(f) for name, f in zip(data_names, files)}
    labels = np.load(files[-1])
    logits = run(graph, feeds)
    correct = int((logits.argmax(axis=1) == labels).sum())
    print(f"held-out accuracy: {100 * correct / len(labels):.1f}% ({correct}/{len(labels)})")


if __name__ == "__main__":
    main()
