#!/usr/bin/python3
"""PyTorch CPU baseline: time full training steps of a 3-layer MLP.

Prints one JSON line. --export/--data write the same model and matching
random data so the otc-compiled executable can be benchmarked on equal terms.
"""
import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class MLP(nn.Module):
    # Named layers give readable ONNX initializer names (fc1.weight, ...).
    def __init__(self, n_in, hidden, n_out):
        super().__init__()
        self.fc1 = nn.Linear(n_in, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.fc3 = nn.Linear(hidden, n_out)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def make_optimizer(name, params):
    if name == "sgd":
        return torch.optim.SGD(params, lr=0.01)
    return torch.optim.AdamW(params, lr=1e-3)


def export(model, n_in, path):
    path.parent.mkdir(parents=True, exist_ok=True)
    torch.onnx.export(
        model, (torch.zeros(1, n_in),), str(path),
        opset_version=17,
        training=torch.onnx.TrainingMode.TRAINING,
        do_constant_folding=False,
        input_names=["x"],
        output_names=["logits"],
        dynamic_axes={"x": {0: "batch"}},
    )


def write_data(directory, n_samples, n_in, n_out):
    rng = np.random.default_rng(0)
    directory.mkdir(parents=True, exist_ok=True)
    np.save(directory / "x.npy", rng.standard_normal((n_samples, n_in)).astype(np.float32))
    np.save(directory / "labels.npy", rng.integers(0, n_out, size=n_samples).astype(np.int64))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--in", dest="n_in", type=int, default=784)
    p.add_argument("--hidden", type=int, default=1024)
    p.add_argument("--out", dest="n_out", type=int, default=10)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--optimizer", choices=["sgd", "adamw"], default="sgd")
    p.add_argument("--threads", type=int, default=torch.get_num_threads())
    p.add_argument("--export", type=Path, metavar="PATH", help="also write the model as ONNX")
    p.add_argument("--data", type=Path, metavar="DIR", help="also write random x.npy/labels.npy")
    args = p.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    model = MLP(args.n_in, args.hidden, args.n_out)
    if args.export:
        export(model, args.n_in, args.export)
    if args.data:
        write_data(args.data, 4 * args.batch, args.n_in, args.n_out)

    opt = make_optimizer(args.optimizer, model.parameters())
    x = torch.randn(args.batch, args.n_in)
    labels = torch.randint(0, args.n_out, (args.batch,))

    def step():
        opt.zero_grad()
        F.cross_entropy(model(x), labels).backward()
        opt.step()

    for _ in range(args.warmup):
        step()
    start = time.perf_counter()
    for _ in range(args.steps):
        step()
    elapsed = time.perf_counter() - start

    print(json.dumps({
        "impl": "pytorch",
        "ms_per_step": 1000 * elapsed / args.steps,
        "threads": torch.get_num_threads(),
        "optimizer": args.optimizer,
        "batch": args.batch,
        "in": args.n_in, "hidden": args.hidden, "out": args.n_out,
        "steps": args.steps,
        "torch": torch.__version__,
    }))


if __name__ == "__main__":
    main()
