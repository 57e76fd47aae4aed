#!/usr/bin/python3
"""Models for the losses --loss appends: span (Hugging Face's
question-answering loss) and bce (binary cross-entropy with logits).

seq.onnx: x [N, "seq"] scaled by a trained w [1] into start = x·w and
end = -x·w, the sequence a dynamic axis (--dim seq=5); DATA/ holds x and
positions before, inside and past the sequence. rank3.onnx: two [N, 2, 3]
outputs. opset11.onnx: two [N, 4] outputs at opset 11 (no integer Clip).
bce.onnx: logits = z·v + b [N, 3] with v [1] and b [3] (zeros) trained, z
as large as ±120 (e^120 overflows float32), zeros (logits exactly 0, where
the loss's max(x, 0) has a kink) and soft labels; BCE/ holds z and labels.
half.onnx: x [N, 4] cast to float16 logits a and b = -a.

usage: make_appended_losses.py OUTDIR     the models, OUTDIR/data, OUTDIR/bce
       make_appended_losses.py --check-span
           reads a training log on stdin; checks its first loss against numpy
       make_appended_losses.py --check-bce LOG SAVED
           the same for bce, and v and b after one SGD step of lr 0.1
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


Z = np.array([[120.0, -120.0, 0.5], [-30.0, 2.0, 0.0], [60.0, 1.0, -3.0]], np.float32)
LABELS = np.array([[1.0, 0.0, 0.3], [0.0, 1.0, 0.5], [0.25, 0.0, 1.0]], np.float32)
V, LR = 0.5, 0.1


def bce_expected():
    """PyTorch's formula in float64: the mean of max(x, 0) - x·y +
    log(1 + e^-|x|), and v and b after one step: the derivative in x is
    (σ(x) - y) / count (PyTorch's, 1/2 - y at x = 0), so in v it is
    mean((σ(x) - y)·z), in b its column sums."""
    z, y = Z.astype(np.float64), LABELS.astype(np.float64)
    x = z * V
    loss = (np.maximum(x, 0) - x * y + np.log1p(np.exp(-np.abs(x)))).mean()
    dx = (1 / (1 + np.exp(-x)) - y) / x.size
    return loss, V - LR * (dx * z).sum(), -LR * dx.sum(0)


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
    bce = helper.make_graph(
        [n("Mul", ["z", "v"], ["scaled"]), n("Add", ["scaled", "b"], ["logits"])], "bce",
        [vi("z", TensorProto.FLOAT, ["N", 3])], [vi("logits", TensorProto.FLOAT, ["N", 3])],
        [numpy_helper.from_array(np.array([V], np.float32), "v"),
         numpy_helper.from_array(np.zeros(3, np.float32), "b")])
    save_model(bce, str(out / "bce.onnx"))
    save_data(out / "bce", z=Z, labels=LABELS)
    half = helper.make_graph(
        [n("Mul", ["x", "w"], ["xw"]), n("Cast", ["xw"], ["a"], to=TensorProto.FLOAT16),
         n("Neg", ["a"], ["b"])], "half", [vi("x", TensorProto.FLOAT, ["N", 4])],
        [vi("a", TensorProto.FLOAT16, ["N", 4]), vi("b", TensorProto.FLOAT16, ["N", 4])],
        [numpy_helper.from_array(np.array([W], np.float32), "w")])
    save_model(half, str(out / "half.onnx"))
    save_data(out / "half", x=X[:, :4], start_positions=START, end_positions=END)


def first_loss(log):
    return float(re.search(r"step 1/\d+\s+loss (\S+)", log).group(1))


def report(what, got, want, tol):
    ok = abs(got - want) <= tol
    print(f"{'ok' if ok else 'WRONG'}: {what} {got} against {want:.7f}")
    return ok


def check_span():
    # float32 logits of magnitude <= 4: a few roundings of 1e-7, and 6 printed decimals
    sys.exit(0 if report("loss", first_loss(sys.stdin.read()), expected(), 2e-6) else 1)


def check_bce(log, saved):
    import onnx
    loss, v, b = bce_expected()
    saved = {t.name: numpy_helper.to_array(t) for t in onnx.load(saved).graph.initializer}
    # Terms up to 60: float32 roundings of 4e-6 each over 9 terms, and 6
    # printed decimals; the gradient's terms reach 120 (|σ - y|·|z|).
    ok = report("loss", first_loss(Path(log).read_text()), loss, 2e-5)
    ok &= report("v", float(saved["v"][0]), v, 1e-5)
    for k in range(3):  # terms below 1 / 9, times lr
        ok &= report(f"b[{k}]", float(saved["b"][k]), b[k], 1e-7)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    if sys.argv[1] == "--check-span":
        check_span()
    elif sys.argv[1] == "--check-bce":
        check_bce(sys.argv[2], sys.argv[3])
    else:
        write(Path(sys.argv[1]))
