#!/usr/bin/python3
"""Trains losses over x[mask] for a run-time boolean mask, as PyTorch users
write them (torch.onnx exports NonZero, Transpose, GatherND: a row count
the data decides), on otc's CPU target, and compares the weights with
PyTorch's after 3 SGD steps of micro-batch 4 (tolerance: 4 max |w32 - w64|
+ 1e-5 max |w64| per tensor, PyTorch's own float32 noise).

CASE is one of
  silog  a depth head's scale-invariant log loss over the targets > 0
         (GLPN's SiLogLoss): the others are 0 or negative, where the log
         is -inf or NaN, so a gradient from them would be NaN
  ce     a per-token MLP and cross-entropy over the tokens whose label is
         not -1 (-1 would be out of range for the loss)
  rows   a selection by the data's own sign, then a softmax and a max over
         each row, a sum over the rows and a max over them

Every micro-batch selects some rows but not all.

usage: masked_select.py CASE OUT_DIR    (otc on PATH; exits 1 on a mismatch)
"""
import copy
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
STEPS, MICRO, LR = 3, 4, 0.1


class SiLog(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.head = torch.nn.Linear(5, 6)

    def forward(self, x, target):
        pred = F.softplus(self.head(x)) + 0.1
        valid = (target > 0).detach()
        d = torch.log(target[valid]) - torch.log(pred[valid])
        return torch.sqrt(torch.pow(d, 2).mean() - 0.5 * torch.pow(d.mean(), 2))


class TokenCE(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = torch.nn.Linear(3, 8)
        self.out = torch.nn.Linear(8, 4)

    def forward(self, x, labels):
        keep = labels != -1
        h = torch.tanh(self.mlp(x[keep]))
        return F.cross_entropy(self.out(h), labels[keep])


class Rows(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = torch.nn.Linear(3, 4)

    def forward(self, x, y):
        chosen = x[:, :, 0] > 0
        p = torch.softmax(self.proj(x[chosen]), dim=1)
        fit = ((p - y[chosen]) ** 2).sum()
        return fit + 0.1 * p.amax(dim=1).sum() + 0.2 * p.max()


def data(case, rng):
    n = STEPS * MICRO
    if case == "silog":
        target = rng.uniform(0.5, 2.0, (n, 6))
        target[rng.random((n, 6)) < 0.4] = 0.0
        target[:, 0] = -1.0  # negative: log is NaN
        target[:, 1] = 1.0  # every sample selects something
        return SiLog(), {"x": rng.normal(0, 1, (n, 5)), "target": target}
    if case == "ce":
        labels = rng.integers(0, 4, (n, 5))
        labels[rng.random((n, 5)) < 0.4] = -1
        labels[:, 0] = 2
        return TokenCE(), {"x": rng.normal(0, 1, (n, 5, 3)), "labels": labels}
    x = rng.normal(0, 1, (n, 5, 3))
    x[:, 0, 0] = 1.0
    x[:, 1, 0] = -1.0
    return Rows(), {"x": x, "y": rng.uniform(0, 0.5, (n, 5, 4))}


def tensors(d, dtype):
    return {k: torch.tensor(v, dtype=dtype if v.dtype.kind == "f" else torch.int64)
            for k, v in d.items()}


def train(net, d, dtype):
    net = net.to(dtype)
    opt = torch.optim.SGD(net.parameters(), lr=LR)
    t = tensors(d, dtype)
    for s in range(STEPS):
        opt.zero_grad()
        net(**{k: v[s * MICRO:(s + 1) * MICRO] for k, v in t.items()}).backward()
        opt.step()
    return {k: v.detach().double().numpy() for k, v in net.state_dict().items()}


def run(*args):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"{args[0]} failed ({r.returncode}):\n{r.stdout}{r.stderr}")


def main():
    case, out = sys.argv[1], Path(sys.argv[2])
    torch.manual_seed(0)
    net, d = data(case, np.random.default_rng(0))
    d = {k: v.astype(np.float32 if v.dtype.kind == "f" else np.int64) for k, v in d.items()}
    (out / "data").mkdir(parents=True, exist_ok=True)
    for k, v in d.items():
        np.save(out / "data" / f"{k}.npy", v)
    sample = tuple(tensors({k: v[:MICRO] for k, v in d.items()}, torch.float32).values())
    torch.onnx.export(net, sample, out / "model.onnx", input_names=list(d), output_names=["loss"],
                      dynamic_axes={k: {0: "N"} for k in d}, opset_version=17)
    w32 = train(copy.deepcopy(net), d, torch.float32)
    w64 = train(copy.deepcopy(net), d, torch.float64)
    expected = {}
    for k in w32:
        expected[k] = w32[k].astype(np.float32)
        expected[f"tol/{k}"] = np.float64(4 * np.abs(w32[k] - w64[k]).max() +
                                          1e-5 * np.abs(w64[k]).max())
    np.savez(out / "expected.npz", **expected)
    run("otc", "compile", out / "model.onnx", "-o", out / "train", "--target", "cpu",
        "--micro-batch", MICRO)
    run(out / "train", "--data", out / "data", "--steps", STEPS, "--lr", LR,
        "--save", out / "trained.onnx")
    sys.exit(subprocess.run([sys.executable, HERE / "check_weights.py", out / "trained.onnx",
                             out / "expected.npz"]).returncode)


if __name__ == "__main__":
    main()
