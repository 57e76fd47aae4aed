#!/usr/bin/python3
"""Kill -9 a training run at random steps, resume it from its last
checkpoint until it finishes, and compare its final bytes with an
uninterrupted run's.

  resume_check.py WORK KILLS SEED TRAIN FLAGS...

Runs TRAIN FLAGS --save WORK/whole.onnx --checkpoint WORK/whole, then
TRAIN FLAGS --checkpoint WORK/cut --checkpoint-every 3 --log WORK/cut.jsonl,
killing it (SIGKILL) once its log reaches a step drawn at random (from
SEED), KILLS times, each time continuing with --resume WORK/cut, and
finally letting it finish with --save WORK/cut.onnx. The saved models and
the final checkpoints (parameters, moments, scaler and position) must be
byte for byte equal. Prints how many kills landed mid-run.
"""
import filecmp
import json
import os
import random
import signal
import subprocess
import sys
import time


def steps_logged(path):
    try:
        with open(path) as f:
            return sum(1 for line in f if line.endswith("\n"))
    except FileNotFoundError:
        return 0


def main():
    work, kills, seed, train = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    flags = sys.argv[5:]
    total = int(flags[flags.index("--steps") + 1])
    os.makedirs(work, exist_ok=True)
    subprocess.run([train, *flags, "--save", f"{work}/whole.onnx", "--checkpoint", f"{work}/whole"],
                   check=True, stderr=subprocess.DEVNULL)
    rng = random.Random(seed)
    cut = [train, *flags, "--checkpoint", f"{work}/cut", "--checkpoint-every", "3",
           "--log", f"{work}/cut.jsonl"]
    landed, resumes = 0, 0
    for k in range(kills):
        at = rng.randrange(1, total)
        resume = ["--resume", f"{work}/cut"] if os.path.exists(f"{work}/cut/checkpoint.otc") else []
        p = subprocess.Popen(cut + resume, stderr=subprocess.DEVNULL)
        resumes += bool(resume)
        while p.poll() is None and steps_logged(f"{work}/cut.jsonl") < at:
            time.sleep(0.0005)
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            landed += 1
        p.wait()
    resume = ["--resume", f"{work}/cut"] if os.path.exists(f"{work}/cut/checkpoint.otc") else []
    subprocess.run(cut + resume + ["--save", f"{work}/cut.onnx"], check=True,
                   stderr=subprocess.DEVNULL)
    rows = [json.loads(line) for line in open(f"{work}/cut.jsonl")]
    ok = [r["step"] for r in rows if "loss" in r] == list(range(1, total + 1))
    if not ok:
        print("the resumed log's steps are not 1 ..", total)
    evals = [r["step"] for r in rows if "eval_loss" in r]
    if evals != sorted(set(evals)):
        print("the resumed log repeats evaluations:", evals)
        ok = False
    for a, b in [("whole.onnx", "cut.onnx"), ("whole/checkpoint.otc", "cut/checkpoint.otc")]:
        if not filecmp.cmp(f"{work}/{a}", f"{work}/{b}", shallow=False):
            print(f"{a} and {b} differ")
            ok = False
    print(f"kills mid-run: {landed} of {kills}, resumed {resumes + bool(resume)} times")
    print("resumed run is bitwise identical" if ok else "resumed run differs")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
