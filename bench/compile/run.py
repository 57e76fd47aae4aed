#!/usr/bin/python3
"""Compile time, compile memory and executable size at GPT-2 124M (issue
20's targets: compile in 20 s or less, an executable under 64 MiB).

Exports the zoo's GPT at GPT-2 small's shape (12 layers, d 768, 12 heads,
T 1024, vocabulary 50257, tied head; 124M parameters, a 0.5 GB ONNX file),
then runs `otc compile` for each target, bf16 with AdamW, with the weights
read at start (the default) and carried (--embed-weights), three times
each. Reports the median wall time, the peak resident memory of otc and
the host compiler it runs (GNU time's maximum RSS), and the size of the
executable. The CUDA target compiles and links here without a GPU.

usage: run.py [WORK_DIR] [--runs N]     (build/bin/otc built; Debian's
python3 with torch)
"""
import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]
OTC = ROOT / "build" / "bin" / "otc"
sys.path.insert(0, str(ROOT / "test" / "zoo"))
import make_zoo  # noqa: E402


def export(path):
    torch.manual_seed(0)
    model = make_zoo.GPT(vocab=50257, t=1024, d=768, heads=12, layers=12)
    for p in model.parameters():
        if p.dim() >= 2:
            torch.nn.init.normal_(p, std=0.02)
    case = make_zoo.Case(lambda: model, make_zoo.sequences(50257, 1024), "adamw", 6e-4, micro=1)
    data = case.inputs(np.random.default_rng(0), 1)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    make_zoo.export(case, model, state, data, path)
    return sum(p.numel() for p in model.parameters())


def compile_once(model, exe, target, embed):
    cmd = ["/usr/bin/time", "-f", "%M", str(OTC), "compile", str(model), "-o", str(exe),
           "--target", target, "--optimizer", "adamw", "--micro-batch", "8",
           "--precision", "bf16"] + (["--embed-weights"] if embed else [])
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"otc compile failed:\n{done.stderr}")
    peak_kib = int(done.stderr.strip().splitlines()[-1])
    return seconds, peak_kib * 1024, exe.stat().st_size


def main():
    p = argparse.ArgumentParser(description="otc compile at GPT-2 124M")
    p.add_argument("work", nargs="?", help="folder for the model and executables")
    p.add_argument("--runs", type=int, default=3)
    a = p.parse_args()
    runs = a.runs
    work = Path(a.work) if a.work else Path(tempfile.mkdtemp(prefix="otc-compile-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    model = work / "gpt2_124m.onnx"
    if not model.exists():
        start = time.perf_counter()
        n = export(model)
        print(f"exported {n} parameters in {time.perf_counter() - start:.0f} s", flush=True)
    print(f"model: {model.stat().st_size / 2**20:.0f} MiB", flush=True)
    print("| target | weights | compile s (median of %d) | peak RSS MiB | executable MiB |" % runs)
    print("|--------|---------|------:|------:|------:|")
    for target in ("cuda", "cpu"):
        for embed in (False, True):
            results = [compile_once(model, work / f"train_{target}", target, embed)
                       for _ in range(runs)]
            secs = statistics.median(r[0] for r in results)
            peak = max(r[1] for r in results)
            size = results[-1][2]
            print(f"| {target} | {'carried' if embed else 'read at start'} | {secs:.1f} | "
                  f"{peak / 2**20:.0f} | {size / 2**20:.1f} |", flush=True)


if __name__ == "__main__":
    main()
