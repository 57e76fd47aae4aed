#!/usr/bin/python3
"""PyTorch's data-parallel run of a zoo case, as DistributedDataParallel
without SyncBatchNorm (broadcast_buffers=True) trains it: W ranks of K
micro-batches each, gradients averaged over all W*K micro-batches, and the
buffers (BatchNorm's running statistics) those of rank 0, which saw only its
own micro-batches.

Rank r of step s reads the run's micro-batches s*K*W + r + W*j (j < K); the
run's micro-batch g is samples [(g % M) * N, ...) as otc reads them. The
ranks are simulated in one process: every micro-batch's loss / (W*K) is
backpropagated, and a micro-batch of another rank runs with rank 0's
buffers saved and put back, so they move only with rank 0's.

Tolerances as make_zoo.py derives them: momentum SGD and SGD at
check_weights.py's default; for Adam and AdamW, tol/<name> is
4 * max |w32 - w64| + 1e-5 * max |w64| from the same run in float64
(Adam turns float32 noise on near-zero gradients into full-size steps).

usage: data_parallel_reference.py CASE RANKS ACCUM OUT.npz
"""
import copy
import sys
from pathlib import Path

import numpy as np
import onnx
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "zoo"))
import make_zoo  # noqa: E402


def train(case, state, data, dtype, ranks, accum):
    model = case.build().to(dtype)
    model.load_state_dict(state)
    model.train()
    opt = make_zoo.optimizer(case, list(model.parameters()))
    n = case.micro
    m = len(next(iter(data.values()))) // n
    buffers = [b for b in model.buffers() if b.is_floating_point()]
    for s in range(case.steps):
        opt.zero_grad()
        for j in range(accum):
            for r in range(ranks):
                g = s * accum * ranks + r + ranks * j
                first = (g % m) * n
                batch = [torch.from_numpy(v[first:first + n]) for v in data.values()]
                batch = [b.to(dtype) if b.is_floating_point() else b for b in batch]
                kept = [b.clone() for b in buffers] if r else None
                (model(*batch) / (ranks * accum)).backward()
                if kept:
                    with torch.no_grad():
                        for b, k in zip(buffers, kept):
                            b.copy_(k)
        opt.step()
    return {k: v.detach().double().numpy() for k, v in model.state_dict().items()
            if v.is_floating_point()}


def main():
    name, ranks, accum, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    case = make_zoo.CASES[name]
    torch.manual_seed(0)  # make_zoo.make's initial weights
    state = copy.deepcopy(case.build().state_dict())
    fixture = make_zoo.OUT / name
    inputs = [i.name for i in onnx.load(str(fixture / "model.onnx")).graph.input]
    data = {k: np.load(fixture / "data" / f"{k}.npy") for k in inputs
            if (fixture / "data" / f"{k}.npy").exists()}
    exported = {i.name for i in onnx.load(str(fixture / "model.onnx")).graph.initializer}
    w32 = {k: v for k, v in train(case, state, data, torch.float32, ranks, accum).items()
           if k in exported}
    expected = {k: v.astype(np.float32) for k, v in w32.items()}
    if case.optimizer in ("adam", "adamw"):
        w64 = train(case, {k: v.double() if v.is_floating_point() else v
                           for k, v in state.items()}, data, torch.float64, ranks, accum)
        for k in w32:
            expected[f"tol/{k}"] = np.float64(4 * np.abs(w32[k] - w64[k]).max() +
                                              1e-5 * np.abs(w64[k]).max())
    np.savez(out, **expected)


if __name__ == "__main__":
    main()
