#!/usr/bin/python3
"""A weight shared by two Linear layers, as users tie them in PyTorch:

  x [N, 8] -> tanh(a(x)) -> tanh(b(·)) -> c -> squared error; b.weight is
  a.weight; SGD, 3 steps of micro-batch 4.

torch.onnx.export with constant folding stores each use as its own
transposed copy, equal to the other (onnx::MatMul_A, and an Identity of it
for the second). Nothing in the file says whether two equal tensors are one
parameter or two (deep-copied layers start equal too), so otc trains them
apart and warns, naming both; --tie A=B trains them as one, as PyTorch did.

  shared_weights.py OUT_DIR [--tie]    (otc on PATH)

Prints otc's notes, then check_weights.py's verdict against PyTorch (the
tolerance from PyTorch's float32-versus-float64 difference), and how many
initializers of the saved model hold the shared weight.
"""
import copy
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import torch

from tied_weights import run, train

HERE = Path(__file__).resolve().parent
D = 8


class Shared(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(D, D, bias=False)
        self.b = torch.nn.Linear(D, D, bias=False)
        self.b.weight = self.a.weight
        self.c = torch.nn.Linear(D, 4)

    def forward(self, x, y):
        return ((self.c(torch.tanh(self.b(torch.tanh(self.a(x))))) - y) ** 2).mean()


def main():
    out, tie = Path(sys.argv[1]), "--tie" in sys.argv[2:]
    (out / "data").mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    net = Shared()
    x, y = torch.randn(12, D), torch.randn(12, 4)
    np.save(out / "data" / "x.npy", x.numpy())
    np.save(out / "data" / "y.npy", y.numpy())
    torch.onnx.export(net, (x[:4], y[:4]), out / "model.onnx", input_names=["x", "y"],
                      output_names=["loss"], dynamic_axes={"x": {0: "N"}, "y": {0: "N"}},
                      opset_version=17)
    m = onnx.load(out / "model.onnx")
    first = next(t.name for t in m.graph.initializer if tuple(t.dims) == (D, D))
    second = next(n.output[0] for n in m.graph.node if n.op_type == "Identity" and n.input[0] == first)
    w32 = train(copy.deepcopy(net), x, y, torch.float32)
    w64 = train(copy.deepcopy(net), x, y, torch.float64)
    for w in (w32, w64):
        w[first] = w.pop("a.weight").T
        w.pop("b.weight")
    expected = {k: v.astype(np.float32) for k, v in w32.items()}
    for k in w32:
        expected[f"tol/{k}"] = np.float64(4 * np.abs(w32[k] - w64[k]).max() + 1e-5 * np.abs(w64[k]).max())
    np.savez(out / "expected.npz", **expected)
    flags = ["--tie", f"{first}={second}"] if tie else []
    notes = run("otc", "compile", out / "model.onnx", "-o", out / "train", "--target", "cpu",
                "--micro-batch", 4, *flags)
    print(notes.strip())
    run(out / "train", "--data", out / "data", "--steps", 3, "--lr", 0.5, "--save", out / "trained.onnx")
    saved = onnx.load(out / "trained.onnx")
    onnx.checker.check_model(saved)
    sys.stdout.flush()
    verdict = subprocess.run([sys.executable, HERE / "check_weights.py", out / "trained.onnx",
                              out / "expected.npz"]).returncode
    held = sum(tuple(t.dims) == (D, D) for t in saved.graph.initializer)
    print(f"saved initializers holding the shared weight: {held}")
    return verdict


if __name__ == "__main__":
    sys.exit(main())
