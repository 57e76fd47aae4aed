#!/usr/bin/env python3
"""otc's mixed precision on CUDA beside PyTorch AMP (torch.autocast +
GradScaler), on the GPU machine. Built by bundle.sh; see README.md here.

1. Loss curves: the zoo's GPT and LeNet, fp16 and bf16, STEPS (200) steps
   from the same initial weights, data order and optimizer. PyTorch runs
   each model in float32 and under autocast; the yardstick is PyTorch's own
   autocast-against-float32 difference: two correct mixed-precision
   programs that round at different points (autocast keeps some ops otc runs
   low in float32 and the reverse) differ by about as much as either differs
   from float32. otc rounds at more points than autocast (elementwise ops
   on low-precision inputs stay low), so allow its own distance from
   float32 to be up to twice autocast's; by the triangle inequality
   |otc - autocast| <= 3 * yard, yard = the largest |float32 - autocast|
   over the run. Plus 5 units of roundoff of the loss itself, the per-step
   allowance of the CPU test (test/e2e/autocast.test). At every step:
   |otc - autocast| <= 3 * yard + 5 * u * |autocast|.
2. Benchmark: the models of make_models.py at fp32, fp16 and bf16: median
   step time over steps 11..STEPS and device memory, otc against PyTorch,
   each PyTorch configuration in its own process so memory is its own.
   Both sides copy the batch from the host and read the loss every step.

usage: amp_gpu.py BUNDLE [--curve-steps 200] [--bench-steps 60] [--out DIR]
(OTC_AMP_DRY_RUN=1 runs PyTorch on the CPU, bf16 for both low modes, to test
the script's plumbing with a bundle built by `bundle.sh OUT cpu`.)
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_zoo  # noqa: E402
from otc_run import flag_args, run_train  # noqa: E402

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16}
UNIT = {"fp16": 2.0**-11, "bf16": 2.0**-8}  # unit roundoff
DRY = os.environ.get("OTC_AMP_DRY_RUN") == "1"
DEV = "cpu" if DRY else "cuda"


def case_for(name):
    if name in make_zoo.CASES:
        return make_zoo.CASES[name]
    return BENCH[name]


def load_data(d):
    case = case_for(d.name)
    keys = case.inputs(np.random.default_rng(0), 1).keys()
    return {k: np.load(d / "data" / f"{k}.npy") for k in keys}


def on_cuda_arange():
    """The zoo's GPT calls torch.arange(t) without a device (it is exported on
    the CPU); on CUDA the positions must be made there."""
    orig = torch.arange

    def arange(*a, **k):
        k.setdefault("device", DEV)
        return orig(*a, **k)
    torch.arange = arange


def torch_run(name, mode, steps, timed=False):
    """Trains `name` under `mode` (fp32|fp16|bf16) on CUDA; returns losses,
    step times (ms) and memory."""
    on_cuda_arange()
    free0 = 0 if DRY else torch.cuda.mem_get_info()[0]  # creates the context first
    case = case_for(name)
    d = BUNDLE / "models" / name
    torch.manual_seed(0)
    model = case.build()
    if (d / "init.npz").exists():  # the zoo's exported initial weights
        z = np.load(d / "init.npz")
        state = model.state_dict()
        model.load_state_dict({k: torch.from_numpy(z[k]) if k in z else v for k, v in state.items()})
    model = model.to(DEV).train()
    opt = make_zoo.optimizer(case, list(model.parameters()))
    if DRY:
        scaler = torch.cuda.amp.GradScaler(enabled=False)
    else:
        scaler = torch.amp.GradScaler("cuda", enabled=mode == "fp16")
    data = load_data(d)
    n = case.micro
    m = len(next(iter(data.values()))) // n
    losses, times = [], []
    for s in range(steps):
        t0 = time.perf_counter()
        first = (s % m) * n
        batch = [torch.from_numpy(v[first:first + n]).to(DEV) for v in data.values()]
        opt.zero_grad(set_to_none=True)
        low = torch.bfloat16 if DRY else DTYPES.get(mode, torch.float16)
        with torch.autocast(DEV, dtype=low, enabled=mode != "fp32"):
            loss = model(*batch)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        losses.append(loss.item())  # synchronizes, as otc's loss read does
        times.append((time.perf_counter() - t0) * 1e3)
    if DRY:
        return {"losses": losses, "ms": times, "device_growth": 1, "max_allocated": 1,
                "max_reserved": 1}
    free1 = torch.cuda.mem_get_info()[0]
    return {"losses": losses, "ms": times, "device_growth": free0 - free1,
            "max_allocated": torch.cuda.max_memory_allocated(),
            "max_reserved": torch.cuda.max_memory_reserved()}


def otc_run(name, mode, steps, tmp):
    d = BUNDLE / "models" / name
    rows, _, mem = run_train(BUNDLE, d, f"train_{mode}", steps, Path(tmp) / f"{name}_{mode}.jsonl",
                             OUT / f"otc_{name}_{mode}.log")
    case = case_for(name)
    flags = flag_args(d / "train_flags")
    k = int(flags[flags.index("--accum-steps") + 1])
    return {"losses": [row["loss"] for row in rows],
            "ms": [k * case.micro / row["samples_per_second"] * 1e3 for row in rows],
            "skipped": sum(1 for row in rows if row.get("skipped")), **mem}


def curves(steps, tmp):
    print(f"== loss curves, {steps} steps: otc against torch.autocast + GradScaler on CUDA")
    ok = True
    rows = []
    for name in ("gpt", "lenet"):
        f32 = torch_run(name, "fp32", steps)["losses"]
        o32 = otc_run(name, "fp32", steps, tmp)["losses"]
        d32 = max(abs(a - b) / abs(b) for a, b in zip(o32, f32))
        print(f"{name} fp32: otc against PyTorch float32, worst relative difference {d32:.2e}")
        rows.append({"model": name, "precision": "fp32", "otc_vs_torch": d32})
        for mode in ("fp16", "bf16"):
            amp = torch_run(name, mode, steps)["losses"]
            got = otc_run(name, mode, steps, tmp)
            yard = max(abs(a - b) for a, b in zip(f32, amp))
            worst = max(abs(a - b) - (3 * yard + 5 * UNIT[mode] * abs(b))
                        for a, b in zip(got["losses"], amp))
            dev = max(abs(a - b) for a, b in zip(got["losses"], amp))
            good = len(got["losses"]) == steps and worst <= 0 and all(map(math.isfinite, got["losses"]))
            ok &= good
            print(f"{name} {mode}: max |otc - autocast| {dev:.4g}, max |fp32 - autocast| {yard:.4g}, "
                  f"last loss otc {got['losses'][-1]:.4f} autocast {amp[-1]:.4f} fp32 {f32[-1]:.4f}, "
                  f"otc skipped {got['skipped']}: {'ok' if good else 'FAIL'}")
            rows.append({"model": name, "precision": mode, "otc_vs_autocast": dev,
                         "fp32_vs_autocast": yard, "ok": good, "otc_last": got["losses"][-1],
                         "autocast_last": amp[-1], "fp32_last": f32[-1], "skipped": got["skipped"],
                         "otc_losses": got["losses"], "autocast_losses": amp, "fp32_losses": f32})
    return ok, rows


def bench(steps, tmp):
    print(f"\n== benchmark: median step ms over steps 11..{steps}, device memory growth (MiB)")
    rows = []
    for name in BENCH:
        for mode in ("fp32", "fp16", "bf16"):
            o = otc_run(name, mode, steps, tmp)
            r = subprocess.run([sys.executable, __file__, str(BUNDLE), "--torch-one", name, mode,
                                str(steps)], capture_output=True, text=True)
            if r.returncode != 0:
                raise SystemExit(f"torch {name} {mode} failed:\n{r.stderr}")
            t = json.loads(r.stdout.splitlines()[-1])
            om, tm = statistics.median(o["ms"][10:]), statistics.median(t["ms"][10:])
            rows.append({"model": name, "precision": mode, "otc_ms": om, "torch_ms": tm,
                         "otc_allocated": o["allocated"], "otc_growth": o["device_growth"],
                         "torch_growth": t["device_growth"], "torch_max_allocated": t["max_allocated"],
                         "torch_max_reserved": t["max_reserved"],
                         "otc_last": o["losses"][-1], "torch_last": t["losses"][-1]})
    mib = 1 << 20
    print("| model | precision | otc ms | PyTorch ms | otc/PyTorch time | otc MiB (allocated / device) "
          "| PyTorch MiB (max allocated / device) | otc/PyTorch device memory |")
    print("|---|---|--:|--:|--:|--:|--:|--:|")
    for r in rows:
        print(f"| {r['model']} | {r['precision']} | {r['otc_ms']:.3f} | {r['torch_ms']:.3f} | "
              f"{r['otc_ms'] / r['torch_ms']:.2f} | {r['otc_allocated'] / mib:.1f} / {r['otc_growth'] / mib:.1f} | "
              f"{r['torch_max_allocated'] / mib:.1f} / {r['torch_growth'] / mib:.1f} | "
              f"{r['otc_growth'] / r['torch_growth']:.2f} |")
    return rows


def main():
    global BUNDLE, OUT, BENCH
    ap = argparse.ArgumentParser()
    ap.add_argument("bundle")
    ap.add_argument("--curve-steps", type=int, default=200)
    ap.add_argument("--bench-steps", type=int, default=60)
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--torch-one", nargs=3)
    ap.add_argument("--only", choices=["curves", "bench"])
    a = ap.parse_args()
    BUNDLE, OUT = Path(a.bundle).resolve(), Path(a.out)
    import make_models
    BENCH = make_models.MODELS
    if a.torch_one:
        name, mode, steps = a.torch_one
        print(json.dumps(torch_run(name, mode, int(steps))))
        return
    dev = "cpu (dry run)" if DRY else torch.cuda.get_device_name()
    print(f"device: {dev}, torch {torch.__version__}, {time.strftime('%Y-%m-%d')}")
    result = {"device": dev, "torch": torch.__version__, "date": time.strftime("%Y-%m-%d")}
    ok = True
    with tempfile.TemporaryDirectory() as tmp:
        if a.only != "bench":
            ok, result["curves"] = curves(a.curve_steps, tmp)
        if a.only != "curves":
            result["bench"] = bench(a.bench_steps, tmp)
    (OUT / "amp.json").write_text(json.dumps(result, indent=1))
    print("curves:", "ok" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
