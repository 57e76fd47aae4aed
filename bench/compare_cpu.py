#!/usr/bin/python3
"""Step time of an otc-compiled CPU executable against PyTorch on the CPU.

Same model (a 3-layer MLP exported by bench/torch_mlp.py), batch, optimizer
(its update is part of each measured step) and thread count, run one after
the other on this machine. Prints, per optimizer, a table by thread count,
then each side at its best thread count, with the ratio otc / PyTorch (below
1 means otc is faster).

usage: bench/compare_cpu.py [--threads 1 2] [--batch 64] [--steps 50]
                            [--optimizer sgd adamw]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OTC = ROOT / "build" / "bin" / "otc"


def torch_env(threads):
    # torch.set_num_threads does not reach Debian's OpenBLAS (pthreads), whose
    # GEMMs would otherwise use every core in a "1 thread" run. A passive
    # OpenMP wait policy keeps its two thread pools from starving each other,
    # as otc's executables set for themselves.
    return dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_WAIT_POLICY="PASSIVE")


def run(cmd, env=None):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, env=env)


def otc_ms_per_step(exe, data, steps, warmup, batch, threads, lr=0.01):
    """The median step time of `exe` over `steps` after `warmup`, in ms."""
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "log.jsonl"
        run([str(exe), "--data", str(data), "--steps", str(warmup + steps),
             "--lr", str(lr), "--log", str(log), "--threads", str(threads)])
        rates = [json.loads(l)["samples_per_second"] for l in log.read_text().splitlines()]
    return statistics.median(1000.0 * batch / r for r in rates[warmup:])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--optimizer", choices=["sgd", "adamw"], nargs="+", default=["sgd", "adamw"])
    a = p.parse_args()
    if not OTC.exists():
        sys.exit(f"compare_cpu: {OTC} is missing; run scripts/build.sh first")

    work = Path(tempfile.mkdtemp(prefix="otc-bench-"))
    model, data = work / "mlp.onnx", work / "data"
    shape = ["--in", "784", "--hidden", "1024", "--out", "10", "--batch", str(a.batch)]
    run(["/usr/bin/python3", str(ROOT / "bench" / "torch_mlp.py"), *shape, "--steps", "1",
         "--warmup", "0", "--export", str(model), "--data", str(data)])
    for opt in a.optimizer:
        exe = work / f"train-{opt}"
        run([str(OTC), "compile", str(model), "-o", str(exe), "--target", "cpu",
             "--optimizer", opt, "--micro-batch", str(a.batch),
             "--loss", "cross-entropy:logits"])
        print(f"MLP 784-1024-1024-10, batch {a.batch}, {opt}, median of {a.steps} steps")
        print(f"{'threads':>7}  {'otc ms':>8}  {'torch ms':>8}  {'otc/torch':>9}")
        rows = []
        for t in a.threads:
            ours = otc_ms_per_step(exe, data, a.steps, a.warmup, a.batch, t)
            theirs = json.loads(run(["/usr/bin/python3", str(ROOT / "bench" / "torch_mlp.py"), *shape,
                                     "--steps", str(a.steps), "--warmup", str(a.warmup),
                                     "--optimizer", opt, "--threads", str(t)],
                                    torch_env(t)).stdout)["ms_per_step"]
            rows.append((t, ours, theirs))
            print(f"{t:>7}  {ours:>8.3f}  {theirs:>8.3f}  {ours / theirs:>9.2f}")
        best_ours = min(rows, key=lambda r: r[1])
        best_theirs = min(rows, key=lambda r: r[2])
        print(f"{'best':>7}  {best_ours[1]:>8.3f}  {best_theirs[2]:>8.3f}  "
              f"{best_ours[1] / best_theirs[2]:>9.2f}   (otc at {best_ours[0]} threads, "
              f"PyTorch at {best_theirs[0]})\n")


if __name__ == "__main__":
    main()
