#!/usr/bin/python3
"""Builds a GPU training benchmark's bundle here (MLIR and torch 1.13) for
run.py on the GPU machine: exports the model (bench/gpu_train/models.py) to
ONNX in WORK (not carried: 0.5 GB for GPT-2 124M, 1.3 GB for BERT-large),
compiles one executable per configuration with otc, and puts in BUNDLE the
executables, the compiled parameters' names and shapes (bundle.json),
models.py, run.py and the libraries the executables need that the GPU
machine lacks (Debian's ONNX and protobuf). The weights do not travel:
run.py makes the same initial weights there from the seed and hands them to
the executables with --init.

usage: make.py MODEL WORK BUNDLE [--shape full|tiny] [--target cuda|cpu]
               [--configs NAME,...] [--precision fp32|fp16|bf16]
MODEL: gpt2, bert or resnet50.
"""
import argparse
import json
import shutil
import subprocess
import sys
from dataclasses import asdict, replace
from pathlib import Path

import onnx
import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
import models  # noqa: E402


def export(name, shape, path):
    m = models.build(name, shape)
    bench = models.BENCHMARKS[name]
    torch.onnx.export(m, models.example(name, shape, 2), str(path), opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      input_names=list(bench.inputs), output_names=["loss"],
                      dynamic_axes={n: {0: "batch"} for n in bench.inputs})
    graph = onnx.load(str(path), load_external_data=False).graph
    return [{"name": i.name, "shape": list(i.dims)} for i in graph.initializer
            if i.data_type == onnx.TensorProto.FLOAT]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model", choices=sorted(models.BENCHMARKS))
    ap.add_argument("work")
    ap.add_argument("bundle")
    ap.add_argument("--shape", default="full", choices=["full", "tiny"])
    ap.add_argument("--target", default="cuda")
    ap.add_argument("--configs", default=None)
    ap.add_argument("--precision", default=None, help="every configuration in this precision")
    ap.add_argument("--otc", default=str(ROOT / "build" / "bin" / "otc"))
    a = ap.parse_args()
    bench = models.BENCHMARKS[a.model]
    configs = bench.configs
    if a.configs:
        configs = {k: configs[k] for k in a.configs.split(",")}
    if a.precision:
        configs = {k: replace(c, precision=a.precision) for k, c in configs.items()}
    work, bundle = Path(a.work), Path(a.bundle)
    work.mkdir(parents=True, exist_ok=True)
    bundle.mkdir(parents=True, exist_ok=True)
    print(f"make.py: exporting {a.model} ({a.shape})", flush=True)
    params = export(a.model, a.shape, work / "model.onnx")
    for name, c in configs.items():
        cmd = [a.otc, "compile", str(work / "model.onnx"), "-o", str(bundle / name), "--target",
               a.target, "--optimizer", bench.optimizer, "--micro-batch", str(c.micro),
               "--precision", c.precision, "--recompute", c.recompute] + (
                   ["--conv-op"] if c.conv_op else [])
        print("make.py: " + " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True)
    (bundle / "bundle.json").write_text(json.dumps(
        {"model": a.model, "shape": a.shape, "target": a.target,
         "configs": {k: asdict(c) for k, c in configs.items()}, "params": params}, indent=1))
    for f in ("models.py", "run.py"):
        shutil.copy(HERE / f, bundle / f)
    lib = bundle / "lib"
    lib.mkdir(exist_ok=True)
    ldd = subprocess.run(["ldd", str(bundle / next(iter(configs)))], capture_output=True,
                         text=True).stdout
    for line in ldd.splitlines():
        parts = line.split()
        if len(parts) >= 3 and ("onnx" in parts[0] or "protobuf" in parts[0]):
            shutil.copy(Path(parts[2]).resolve(), lib / parts[0])
    print(f"make.py: bundle ready in {bundle} (run: python3 {bundle}/run.py {bundle})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
