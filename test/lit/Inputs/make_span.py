#!/usr/bin/python3
"""Models for --loss span (Hugging Face's question-answering loss).

seq.onnx: x [N, "seq"] scaled by a trained w [1] into start = x·w and
end = -x·w, the sequence a dynamic axis (--dim seq=5); DATA/ holds x and
positions before, inside and past the sequence. rank3.onnx: two [N, 2, 3]
outputs. opset11.onnx: two [N, 4] outputs at opset 11 (no integer Clip).

usage: make_span.py OUTDIR           writes the models and OUTDIR/data
       make_span.py --check OUTDIR   reads a training log on stdin and
                                     checks its first loss against numpy
"""
import re
import sys
from pathlib import Path

import numpy as np
from onnx import TensorProto, helper, numpy_helper

from lit_inputs import save_data, save_model

X = np.array([[0.5, -1.0, 2.0, 0.0, 1.5],
              [1.0, 0.25, -0.5, 3.0, -2.0],
              [-1.5, 0.0, 0.75, 1.0, 2.5],
              [2.0, -0.5, 1.0, -1.0, 0.5]], np.float32)
START = np.array([1, -2, 5, 7])  # clamped to 0 and to 5, which is ignored
END = np.array([4, 0, 3, 9])
W = 1.25


def expected():
    """HF's loss in float64: positions clamped to [0, T], T ignored, the
    mean of the two mean cross-entropies."""
    def ce(logits, positions):
        t = logits.shape[1]
        p = np.clip(positions, 0, t)
        keep = p != t
        logp = logits - np.log(np.exp(logits).sum(1, keepdims=True))
        return -logp[keep, p[keep]].mean()
    x = X.astype(np.float64) * W
    return (ce(x, START) + ce(-x, END)) / 2


def write(out):
    out.mkdir(parents=True, exist_ok=True)
    n = helper.make_node
    vi = helper.make_tensor_value_info
    seq = helper.make_graph(
        [n("Mul", ["x", "w"], ["start"]), n("Neg", ["start"], ["end"])], "seq",
        [vi("x", TensorProto.FLOAT, ["N", "seq"])],
        [vi("start", TensorProto.FLOAT, ["N", "seq"]), vi("end", TensorProto.FLOAT, ["N", "seq"])],
        [numpy_helper.from_array(np.array([W], np.float32), "w")])
    save_model(seq, str(out / "seq.onnx"))
    save_data(out / "data", x=X, start_positions=START, end_positions=END)
    for name, shape, opset in (("rank3", ["N", 2, 3], 17), ("opset11", ["N", 4], 11)):
        g = helper.make_graph(
            [n("Relu", ["x"], ["a"]), n("Neg", ["x"], ["b"])], name,
            [vi("x", TensorProto.FLOAT, shape)],
            [vi("a", TensorProto.FLOAT, shape), vi("b", TensorProto.FLOAT, shape)])
        save_model(g, str(out / f"{name}.onnx"), opset=opset)


def check():
    log = sys.stdin.read()
    loss = float(re.search(r"step 1/\d+\s+loss (\S+)", log).group(1))
    want = expected()
    # float32 logits of magnitude <= 4: a few roundings of 1e-7, and 6 printed decimals
    ok = abs(loss - want) <= 2e-6
    print(f"{'ok' if ok else 'WRONG'}: loss {loss} against {want:.7f}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    check() if sys.argv[1] == "--check" else write(Path(sys.argv[1]))
