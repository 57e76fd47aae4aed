#!/usr/bin/python3
"""Held-out accuracy of an ONNX classifier, computed with plain numpy.

usage: evaluate.py MODEL.onnx DATA_DIR [MIN_ACCURACY_PERCENT]

DATA_DIR holds one <name>.npy per graph input (e.g. x.npy) plus labels.npy.
The graph is run node by node by a tiny interpreter, so any model built from
the supported ops works, e.g. the initial mlp.onnx or a trained one from otc.
With MIN_ACCURACY_PERCENT, exits 1 when the accuracy is below it.
"""
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper


def gemm(a, b, c=None, alpha=1.0, beta=1.0, transA=0, transB=0):
    y = alpha * ((a.T if transA else a) @ (b.T if transB else b))
    return y if c is None else y + beta * c


def windows(x, kernel_shape, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), fill=0.0):
    """[N, C, OH, OW, KH, KW]: each output position's window of a 2-D input."""
    (kh, kw), (sh, sw), (dh, dw) = kernel_shape, strides, dilations
    x = np.pad(x, ((0, 0), (0, 0), (pads[0], pads[2]), (pads[1], pads[3])), constant_values=fill)
    oh = (x.shape[2] - dh * (kh - 1) - 1) // sh + 1
    ow = (x.shape[3] - dw * (kw - 1) - 1) // sw + 1
    out = np.empty(x.shape[:2] + (oh, ow, kh, kw), x.dtype)
    for i in range(kh):
        for j in range(kw):
            out[..., i, j] = x[:, :, i * dh:i * dh + sh * oh:sh, j * dw:j * dw + sw * ow:sw]
    return out


def conv(x, w, b=None, group=1, kernel_shape=None, **window):
    cols = windows(x, w.shape[2:], **window)  # [N, C, OH, OW, KH, KW]
    n, c, oh, ow = cols.shape[:4]
    cols = cols.reshape(n, group, c // group, oh, ow, *w.shape[2:])
    wg = w.reshape(group, w.shape[0] // group, *w.shape[1:])
    y = np.einsum("ngchwij,gmcij->ngmhw", cols, wg).reshape(n, w.shape[0], oh, ow)
    return y if b is None else y + b.reshape(1, -1, 1, 1)


def max_pool(x, kernel_shape, ceil_mode=0, **window):
    if ceil_mode:
        sys.exit("error: evaluate.py has no ceil_mode MaxPool")
    return windows(x, kernel_shape, fill=-np.inf, **window).max(axis=(4, 5))


OPS = {
    "Conv": conv,
    "MaxPool": max_pool,
    "Constant": lambda value: numpy_helper.to_array(value),
    "Reshape": lambda x, shape, allowzero=0: x.reshape(shape),
    "Flatten": lambda x, axis=1: x.reshape(int(np.prod(x.shape[:axis])), -1),
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
    if len(sys.argv) not in (3, 4):
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
    accuracy = 100 * correct / len(labels)
    print(f"held-out accuracy: {accuracy:.1f}% ({correct}/{len(labels)})")
    if len(sys.argv) == 4 and accuracy < float(sys.argv[3]):
        print(f"below the required {sys.argv[3]}%")
        sys.exit(1)


if __name__ == "__main__":
    main()
