#!/usr/bin/python3
"""Compiles every zoo model to its kernel program (no host compile) at every
precision and under every recompute policy, so that the program verifier,
which every compile runs, sees each. A compile may fail only with a refusal
the README documents (16-bit gathers' gradients, `blocks` on a model
without repeated blocks); an internal error, or any other failure, fails.

usage: check_programs.py ZOO_DIR     (otc on PATH)
"""
import subprocess
import sys
from pathlib import Path

KNOWN = ["is implemented for float32 only",  # 16-bit gathers' gradients
         "no repeated blocks in the node names"]  # --recompute blocks without blocks

zoo = Path(sys.argv[1])
runs = [(p, r) for p in ("fp32", "fp16", "bf16")
        for r in ("none", "selective", "blocks", "sqrt", "budget")]
checked = refused = 0
bad = []
for model in sorted(d for d in zoo.iterdir() if (d / "model.onnx").exists()):
    flags = (model / "compile_flags").read_text().split()
    for precision, policy in runs:
        cmd = ["otc", "compile", str(model / "model.onnx"), "--emit", "program", "--target",
               "cpu", "--precision", precision, "--recompute", policy, *flags]
        if policy == "budget":
            cmd += ["--memory-budget", "1M"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode == 0:
            checked += 1
        elif "internal error" not in r.stderr and any(k in r.stderr for k in KNOWN):
            refused += 1
        else:
            bad.append(f"{model.name} {precision} {policy}: {r.stderr.strip().splitlines()[-1:]}")
print(f"{checked} programs verified, {refused} refused as documented")
for b in bad:
    print("FAIL", b)
sys.exit(1 if bad or not checked else 0)
