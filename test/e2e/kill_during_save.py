#!/usr/bin/python3
"""kill -9 of a training executable at random moments while it writes --save
leaves either the old file or the complete new one, and no temporary file:
but for a kill in the instant between naming the finished file and
renaming it onto the target, which leaves that complete copy under its
temporary name, and the next save into the folder removes it.

usage: kill_during_save.py WORKDIR [--kills 20] [--seed 0]

Builds a model of about 32 MB (one 2048x4096 Gemm), compiles it with the otc
on PATH, measures how long the save takes, then kills runs at uniformly
random moments inside that window.
"""
import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build(work):
    rng = np.random.default_rng(0)
    w = numpy_helper.from_array((rng.standard_normal((2048, 4096)) * 0.01).astype(np.float32), "w")
    b = numpy_helper.from_array(np.zeros(2048, np.float32), "b")
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4096])
    loss = helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])
    graph = helper.make_graph([
        helper.make_node("Gemm", ["x", "w", "b"], ["h"], name="fc", transB=1),
        helper.make_node("ReduceMean", ["h"], ["loss"], name="mean", keepdims=0),
    ], "big", [x], [loss], [w, b])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    onnx.save(model, os.path.join(work, "big.onnx"))
    os.makedirs(os.path.join(work, "data"), exist_ok=True)
    np.save(os.path.join(work, "data", "x.npy"), rng.standard_normal((2, 4096)).astype(np.float32))
    subprocess.run(["otc", "compile", os.path.join(work, "big.onnx"), "-o",
                    os.path.join(work, "train"), "--target", "cpu", "--micro-batch", "1"],
                   check=True, stderr=subprocess.DEVNULL)


def start(work, target):
    return subprocess.Popen([os.path.join(work, "train"), "--data", os.path.join(work, "data"),
                             "--steps", "2", "--lr", "0.1", "--save", target],
                            stderr=subprocess.PIPE, text=True)


def wait_for_done(p):
    """Blocks until training is over and the save begins; returns that time."""
    for line in p.stderr:
        if line.startswith("train: done"):
            return time.monotonic()
    raise RuntimeError("the executable ended before training was done")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("work")
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    work = a.work
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    build(work)
    out = os.path.join(work, "out")
    os.makedirs(out)
    target = os.path.join(out, "model.onnx")
    old = b"old contents of the target\n" * 1000

    # The reference: an uninterrupted save, and how long it took.
    ref_path = os.path.join(work, "reference.onnx")
    p = start(work, ref_path)
    t0 = wait_for_done(p)
    p.communicate()
    window = time.monotonic() - t0
    assert p.returncode == 0, "the reference run failed"
    ref = open(ref_path, "rb").read()
    assert len(ref) > 30 << 20, f"the saved model is only {len(ref)} bytes"

    rnd = random.Random(a.seed)
    outcomes, named = {"old": 0, "new": 0}, set()
    for i in range(a.kills):
        with open(target, "wb") as f:
            f.write(old)
        p = start(work, target)
        wait_for_done(p)
        time.sleep(rnd.uniform(0, window))
        p.send_signal(signal.SIGKILL)
        p.communicate()
        got = open(target, "rb").read()
        if got == old:
            outcomes["old"] += 1
        elif got == ref:
            outcomes["new"] += 1
        else:
            print(f"FAIL kill {i}: the target holds {len(got)} bytes, neither old nor new")
            return 1
        for name in sorted(set(os.listdir(out)) - {"model.onnx"}):
            # Only the named instant may leave anything: the complete new file.
            if not name.startswith(".otc-tmp.") or open(os.path.join(out, name), "rb").read() != ref:
                print(f"FAIL kill {i}: left behind {name}")
                return 1
            named.add(name)
    # A save into the folder that runs to the end removes what a dead
    # process left under that name, whether or not a kill above left one,
    # and nothing else: not a running process's, not another file.
    dead = subprocess.Popen(["true"])
    dead.wait()
    keep = {f".otc-tmp.{os.getpid()}.7", "notes.txt"}
    for name in keep | {f".otc-tmp.{dead.pid}.3"}:
        with open(os.path.join(out, name), "wb") as f:
            f.write(ref[:100])
    p = start(work, target)
    p.communicate()
    left = set(os.listdir(out)) - {"model.onnx"}
    if p.returncode != 0 or left != keep or open(target, "rb").read() != ref:
        print(f"FAIL the last save: exit {p.returncode}, left {sorted(left)}, expected {sorted(keep)}")
        return 1
    print(f"save window {window * 1000:.0f} ms; {a.kills} kills: "
          f"{outcomes['old']} left the old file, {outcomes['new']} the new one, no temporary files "
          f"after the next save ({len(named)} complete copies named in between)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
