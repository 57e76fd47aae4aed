#!/usr/bin/python3
"""Step time of otc against PyTorch on the CPU for a small CNN and a small
GPT, side by side: the same exported model, batch, optimizer (AdamW, its
update inside each measured step) and thread count. Prints the median ms per
step of each and the ratio otc / PyTorch (below 1: otc is faster).

The models are the zoo's classes (test/zoo/make_zoo.py) at bench sizes:
  cnn: LeNet on 1 x 28 x 28 images, batch 64
  gpt: 2 layers, d 64, 2 heads, context 32, vocabulary 64, batch 16

usage: bench/compare_zoo_cpu.py [--threads 1 2] [--steps 30] [--models cnn gpt]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
OTC = ROOT / "build" / "bin" / "otc"
sys.path.insert(0, str(ROOT / "test" / "zoo"))
import make_zoo  # noqa: E402  (the zoo's model classes)
sys.path.insert(0, str(ROOT / "bench"))
from compare_cpu import otc_ms_per_step  # noqa: E402


class BenchLeNet(make_zoo.LeNet):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8 * 5 * 5, 16)


MODELS = {
    "cnn": (BenchLeNet, make_zoo.images(1, 28, 10), 64),
    "gpt": (lambda: make_zoo.GPT(vocab=64, t=32, d=64, heads=2, layers=2),
            make_zoo.sequences(64, 32), 16),
}


def torch_ms(build, data, batch, steps, warmup, threads):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = build()
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    args = [torch.from_numpy(v[:batch]) for v in data.values()]
    times = []
    for i in range(warmup + steps):
        start = time.perf_counter()
        opt.zero_grad()
        model(*args).backward()
        opt.step()
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times[warmup:])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    a = p.parse_args()
    if not OTC.exists():
        sys.exit(f"compare_zoo_cpu: {OTC} is missing; run scripts/build.sh first")
    work = Path(tempfile.mkdtemp(prefix="otc-bench-zoo-"))
    for name in a.models:
        build, inputs, batch = MODELS[name]
        data = inputs(np.random.default_rng(0), batch)
        (work / name).mkdir()
        for k, v in data.items():
            np.save(work / name / f"{k}.npy", v)
        case = make_zoo.Case(build, inputs, "adamw", 1e-3, micro=batch)
        torch.manual_seed(0)
        model = build()
        make_zoo.export(case, model, model.state_dict(), data, work / f"{name}.onnx")
        exe = work / f"train-{name}"
        subprocess.run([str(OTC), "compile", str(work / f"{name}.onnx"), "-o", str(exe),
                        "--target", "cpu", "--optimizer", "adamw", "--micro-batch", str(batch)],
                       check=True, capture_output=True)
        print(f"{name}, batch {batch}, AdamW, median of {a.steps} steps")
        print(f"{'threads':>7}  {'otc ms':>8}  {'torch ms':>8}  {'otc/torch':>9}")
        for t in a.threads:
            ours = otc_ms_per_step(exe, work / name, a.steps, a.warmup, batch, t, lr=0.001)
            env = dict(os.environ, OPENBLAS_NUM_THREADS=str(t), OMP_WAIT_POLICY="PASSIVE")
            theirs = float(subprocess.run(
                [sys.executable, __file__, "--torch-only", name, str(batch), str(a.steps),
                 str(a.warmup), str(t)], check=True, capture_output=True, text=True,
                env=env).stdout)
            print(f"{t:>7}  {ours:>8.3f}  {theirs:>8.3f}  {ours / theirs:>9.2f}")
        print()


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--torch-only":
        # A child process, so OPENBLAS_NUM_THREADS is read at start-up.
        name, batch, steps, warmup, threads = sys.argv[2], *map(int, sys.argv[3:7])
        build, inputs, _ = MODELS[name]
        print(torch_ms(build, inputs(np.random.default_rng(0), batch), batch, steps, warmup,
                       threads))
    else:
        main()
