#!/usr/bin/python3
"""Builds the GPT-2 benchmark bundle here (MLIR and torch 1.13), for
run.py on the GPU machine: exports GPT-2 (bench/gpt2/model.py) to ONNX in
WORK (not carried: 0.5 GB at 124M), compiles it with otc, and puts in
BUNDLE the executable, the compiled parameters' names and shapes
(params.json), model.py, run.py and the libraries the executable needs
that the GPU machine lacks (Debian's ONNX and protobuf). The weights do
not travel: run.py makes the same initial weights there from the seed and
hands them to the executable with --init.

usage: make.py WORK BUNDLE [--shape 124m|tiny] [--target cuda|cpu]
           [--micro-batch 8] [--precision bf16|fp32|fp16]
"""
import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
import model as gpt2  # noqa: E402


def export(shape, path):
    m = gpt2.build(shape)
    c = gpt2.SHAPES[shape]
    tokens = torch.zeros((1, c.t), dtype=torch.int64)
    torch.onnx.export(m, (tokens, tokens), str(path), opset_version=17, do_constant_folding=False,
                      input_names=["tokens", "targets"], output_names=["loss"],
                      dynamic_axes={"tokens": {0: "batch"}, "targets": {0: "batch"}})
    graph = onnx.load(str(path), load_external_data=False).graph
    return [{"name": i.name, "shape": list(i.dims)} for i in graph.initializer
            if i.data_type == onnx.TensorProto.FLOAT]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("work")
    ap.add_argument("bundle")
    ap.add_argument("--shape", default="124m", choices=sorted(gpt2.SHAPES))
    ap.add_argument("--target", default="cuda")
    ap.add_argument("--micro-batch", type=int, default=8)
    ap.add_argument("--precision", default="bf16")
    ap.add_argument("--otc", default=str(ROOT / "build" / "bin" / "otc"))
    a = ap.parse_args()
    work, bundle = Path(a.work), Path(a.bundle)
    work.mkdir(parents=True, exist_ok=True)
    bundle.mkdir(parents=True, exist_ok=True)
    print(f"make.py: exporting GPT-2 {a.shape}", flush=True)
    params = export(a.shape, work / "model.onnx")
    exe = bundle / "gpt2"
    cmd = [a.otc, "compile", str(work / "model.onnx"), "-o", str(exe), "--target", a.target,
           "--optimizer", "adamw", "--micro-batch", str(a.micro_batch), "--precision", a.precision]
    print("make.py: " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    (bundle / "params.json").write_text(json.dumps(
        {"shape": a.shape, "micro_batch": a.micro_batch, "precision": a.precision,
         "target": a.target, "params": params}, indent=1))
    for f in ("model.py", "run.py"):
        shutil.copy(HERE / f, bundle / f)
    lib = bundle / "lib"
    lib.mkdir(exist_ok=True)
    ldd = subprocess.run(["ldd", str(exe)], capture_output=True, text=True).stdout
    for line in ldd.splitlines():
        parts = line.split()
        if len(parts) >= 3 and ("onnx" in parts[0] or "protobuf" in parts[0]):
            shutil.copy(Path(parts[2]).resolve(), lib / parts[0])
    print(f"make.py: bundle ready in {bundle} (run: python3 {bundle}/run.py {bundle})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
