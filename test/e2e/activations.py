#!/usr/bin/python3
"""Trains a small MLP with one activation on otc's CPU target and compares
its weights with PyTorch's after the same SGD steps.

  x [12, 6] -> Linear(6, 8) -> ACT -> Linear(8, 3) -> y, mean-squared loss
  against targets, SGD (lr 0.1 unless ACTS says), 3 steps of micro-batch 4.

The model is PyTorch's own module exported by torch.onnx at opset 17 (what a
user would hand otc). The tolerance per tensor is derived from PyTorch's own
float32-versus-float64 difference after the same steps, as the zoo's:
4 * max |w32 - w64| + 1e-5 * max |w64|.

usage: activations.py ACT OUT_DIR    (otc on PATH; exits 1 on a mismatch)
"""
import copy
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import numpy_helper
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent

# The activations users export (non-default parameters where a module has
# them), and the input scale: wide, so every activation meets its kinks and
# saturations, except where a pole would make float32 and float64 diverge;
# then the learning rate (0.1 unless given).
ACTS = {
    "sin": (torch.sin, 2.0),
    "cos": (torch.cos, 2.0),
    "tan": (torch.tan, 0.3),  # |fc1(x)| stays well inside (-pi/2, pi/2)
    "atan": (torch.atan, 2.0),
    "softplus": (torch.nn.Softplus(), 2.0),
    "softsign": (torch.nn.Softsign(), 2.0),
    "hardsigmoid": (torch.nn.Hardsigmoid(), 2.0),
    "hardswish": (torch.nn.Hardswish(), 2.0),
    "elu": (torch.nn.ELU(alpha=0.7), 2.0),
    # Inputs past 88, where e^x is inf in float32: no 0 * inf in the gradient.
    "elu_wide": (torch.nn.ELU(alpha=0.7), 100.0, 1e-5),
    "selu": (torch.nn.SELU(), 2.0),
    "celu": (torch.nn.CELU(alpha=1.5), 2.0),
    "mish": (torch.nn.Mish(), 2.0),  # exported as x tanh(softplus(x))
    # GELU as exported before opset 20, which otc-fuse-gelu makes otc.gelu:
    # exact (erf), PyTorch's tanh form, and Hugging Face's gelu_new (pow).
    "gelu": (torch.nn.GELU(), 2.0),
    "gelu_tanh": (torch.nn.GELU(approximate="tanh"), 2.0),
    "gelu_new": (lambda v: 0.5 * v * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) *
                                                        (v + 0.044715 * torch.pow(v, 3.0)))), 2.0),
    # Within (-1, 1). (torch 1.13 exports no sinh, cosh, asinh, acosh or
    # atanh: test/unit's activations_f64.onnx checks those.)
    "asin": (lambda v: torch.asin(0.9 * torch.tanh(v)), 2.0),
    "acos": (lambda v: torch.acos(0.9 * torch.tanh(v)), 2.0),
}


class Net(torch.nn.Module):
    def __init__(self, act):
        super().__init__()
        self.fc1, self.fc2, self.act = torch.nn.Linear(6, 8), torch.nn.Linear(8, 3), act

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def train(net, x, t, dtype, lr):
    net = net.to(dtype)
    opt = torch.optim.SGD(net.parameters(), lr=lr)
    for s in range(3):
        xb, tb = x[4 * s:4 * s + 4].to(dtype), t[4 * s:4 * s + 4].to(dtype)
        opt.zero_grad()
        F.mse_loss(net(xb), tb).backward()
        opt.step()
    return {k: v.detach().double().numpy() for k, v in net.state_dict().items()}


def compare_with_pytorch(net, x, t, lr, out):
    """Exports `net` at opset 17 with a dynamic batch, trains it 3 steps in
    otc and in PyTorch (float32 and float64), and returns check_weights.py's
    exit status."""
    (out / "data").mkdir(parents=True, exist_ok=True)
    np.save(out / "data" / "x.npy", x.numpy())
    np.save(out / "data" / "targets.npy", t.numpy())
    torch.onnx.export(net, x[:4], out / "model.onnx", input_names=["x"], output_names=["y"],
                      dynamic_axes={"x": {0: "N"}, "y": {0: "N"}}, opset_version=17)
    w32 = train(copy.deepcopy(net), x, t, torch.float32, lr)
    w64 = train(copy.deepcopy(net), x, t, torch.float64, lr)
    # The exporter stores some parameters folded under anonymous names
    # (GroupNorm's weight as onnx::Mul_N [C, 1, 1]): expect those by the
    # name and shape of the initializer that holds their values.
    names = {k: (k, None) for k in w32}
    before = {k: v.detach().numpy() for k, v in net.state_dict().items()}
    stored = {i.name for i in onnx.load(out / "model.onnx").graph.initializer}
    for init in onnx.load(out / "model.onnx").graph.initializer:
        value = numpy_helper.to_array(init)
        for k, v in before.items():
            if (init.name.startswith("onnx::") and k not in stored and names[k][0] == k and
                    v.size == value.size and np.array_equal(v.ravel(), value.ravel())):
                names[k] = (init.name, value.shape)
                break
    expected = {}
    for k in w32:
        name, shape = names[k]
        expected[name] = w32[k].astype(np.float32).reshape(shape if shape else w32[k].shape)
        expected[f"tol/{name}"] = np.float64(4 * np.abs(w32[k] - w64[k]).max() +
                                             1e-5 * np.abs(w64[k]).max())
    return train_and_check(out, expected, lr)


def train_and_check(out, expected, lr):
    """Writes `expected` (check_weights.py's tensors and tol/ bounds), trains
    out/model.onnx with otc (3 SGD steps of micro-batch 4, mean-squared loss
    of output y) and returns check_weights.py's exit status."""
    np.savez(out / "expected.npz", **expected)

    def run(*args):
        r = subprocess.run([str(a) for a in args], capture_output=True, text=True)
        if r.returncode:
            sys.exit(f"{args[0]} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    run("otc", "compile", out / "model.onnx", "-o", out / "train", "--target", "cpu",
        "--micro-batch", 4, "--loss", "mse:y")
    run(out / "train", "--data", out / "data", "--steps", 3, "--lr", lr,
        "--save", out / "trained.onnx")
    return subprocess.run([sys.executable, HERE / "check_weights.py", out / "trained.onnx",
                           out / "expected.npz"]).returncode


def main():
    name, out = sys.argv[1], Path(sys.argv[2])
    torch.manual_seed(0)
    act, scale, lr = (ACTS[name] + (0.1,))[:3]
    net = Net(act)
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.normal(0, scale, (12, 6)), dtype=torch.float32)
    t = torch.tensor(rng.normal(0, 1, (12, 3)), dtype=torch.float32)
    sys.exit(compare_with_pytorch(net, x, t, lr, out))


if __name__ == "__main__":
    main()
