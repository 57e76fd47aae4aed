"""otc's bf16 training against torch.autocast('cpu', dtype=torch.bfloat16).

usage: autocast_compare.py CASE LOG STEPS
Rebuilds the zoo model CASE (test/zoo/make_zoo.py) with the fixture's
initial weights and trains it STEPS steps under bf16 autocast, with the
fixture's data order, optimizer and flags (K = 1), then compares the loss
curve with otc's --log. The two round at different points (autocast keeps
some ops otc runs in bf16 in float32 and the reverse), so per-step losses
agree only to a few bf16 units (u = 2^-8, 0.4%) compounded over the run:
the test allows 2% of the loss, 5 u, at every step (measured 2026-11-22:
GPT 0.38%, LeNet 0.78%).
"""
import json
import sys
from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import numpy_helper

ZOO = Path(__file__).resolve().parents[1] / "zoo"
sys.path.insert(0, str(ZOO))
import make_zoo  # noqa: E402


def main():
    name, log, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
    case = make_zoo.CASES[name]
    fixture = ZOO / "fixtures" / name
    init = {i.name: torch.from_numpy(numpy_helper.to_array(i).copy())
            for i in onnx.load(str(fixture / "model.onnx")).graph.initializer}
    torch.manual_seed(0)
    model = case.build()
    state = model.state_dict()
    model.load_state_dict({k: init.get(k, v) for k, v in state.items()})
    model.train()
    opt = make_zoo.optimizer(case, list(model.parameters()))
    data = {k: np.load(fixture / "data" / f"{k}.npy") for k in case.inputs(np.random.default_rng(0), 1)}
    n = case.micro
    m = len(next(iter(data.values()))) // n
    ref = []
    for s in range(steps):
        first = (s % m) * n
        batch = [torch.from_numpy(v[first:first + n]) for v in data.values()]
        opt.zero_grad()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = model(*batch)
        loss.float().backward()
        opt.step()
        ref.append(float(loss))
    got = [r["loss"] for r in map(json.loads, open(log))]
    worst = max(abs(a - b) / abs(b) for a, b in zip(got, ref))
    print(f"{name}: {steps} steps, first loss otc {got[0]:.4f} autocast {ref[0]:.4f}, "
          f"last otc {got[-1]:.4f} autocast {ref[-1]:.4f}, worst relative difference {worst:.4f}")
    sys.exit(0 if len(got) == steps and worst <= 0.02 else 1)


if __name__ == "__main__":
    main()
