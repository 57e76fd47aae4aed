#!/usr/bin/env python3
"""Training on one GPU: otc against PyTorch eager and torch.compile, side
by side on the same machine, from the same initial weights and data (issue
20's GPT-2 124M, BERT-large and ResNet-50 benchmarks). Run on the GPU
machine from a bundle made by make.py.

For each configuration of the bundle and each of `--runs` runs (3 by
default), every system trains `--steps` steps:
- otc: the configuration's executable, weights from init.onnx (--init),
  data from .npy files in order;
- PyTorch eager: the same micro-batch, accumulation and precision (bf16
  autocast; fp16 autocast with GradScaler's default dynamic scaling),
  torch.utils.checkpoint per block where otc recomputes blocks, the fused
  optimizer where there is one, scaled_dot_product_attention;
- torch.compile of the same model.
A configuration that differs from another only in otc's compile flags
(ResNet-50's bf16_conv: --conv-op, cuDNN's convolutions) reuses that one's
PyTorch runs.
Throughput is the median over the steps after the first `--warmup`
(otc's logged samples/s; PyTorch's wall time per step including its loss
read, as otc's includes its one read), in tokens/s for GPT-2. GPT-2's
MFU = tokens/s x (6 N + 6 L C T) / 989e12 (H100 SXM's dense bf16). Peak
memory: PyTorch's max_memory_allocated; otc's own allocations (parameters,
gradients, optimizer state, arena, inputs, cuBLAS's workspace), with its
device-memory growth beside.

GPT-2's and ResNet-50's loss curves: a float32 PyTorch run (TF32 off) is
the reference.
PyTorch's own bf16 curve departs from it by at most D over the run; otc's
must stay within 2 D of it (bf16's rounding differs between the two in
order and place, not in size), plus 1e-4 of the loss for float32's
summation order (a bundle compiled in float32, as the CPU smoke test's).

With --reference64, float32 configurations' losses are checked against
PyTorch in float64: otc's must depart from them by at most twice PyTorch
float32's largest departure over four runs (one as is, three from weights
perturbed by about one float32 rounding: a small ResNet's BatchNorm
amplifies rounding chaotically), plus 1e-4 of the loss (the CPU smoke
test).

Each otc configuration also runs 3 steps with --profile (unless
--no-profile): the time of each kind of kernel, its GB/s against the
device's copy bandwidth and its TFLOP/s, printed and kept as
profile_CONFIG.json beside results.json.

usage: run.py BUNDLE [--steps 100] [--runs 3] [--warmup 10] [--out DIR]
              [--device cuda] [--systems otc,otc_graphs,eager,compile] [--configs A,B]
              [--reference64] [--no-profile]
"""
import argparse
import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import helper, numpy_helper

PEAK_FLOPS = 989e12  # H100 SXM, dense bf16
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import models  # noqa: E402


def write_init(path, model, names):
    state = model.state_dict()
    inits = [numpy_helper.from_array(state[n].detach().cpu().float().numpy(), n) for n in names]
    onnx.save(helper.make_model(helper.make_graph([], "init", [], [], inits)), str(path))


def run_otc(exe, work, cfg, flags, steps, warmup, per_sample, env):
    log = work / f"{exe.name}.jsonl"
    cmd = [str(exe), "--init", str(work / "init.onnx"), "--data", str(work / "data"),
           "--steps", str(steps), "--accum-steps", str(cfg["accum"]), "--log", str(log)] + flags
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode:
        sys.exit(f"otc failed:\n{done.stderr[-4000:]}")
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    rates = [x["samples_per_second"] * per_sample for x in lines[warmup:]]
    allocated = re.search(r"memory: (\d+) bytes allocated", done.stderr)
    grew = re.search(r"grew by (-?\d+) bytes", done.stderr)
    return {"losses": [x["loss"] for x in lines], "rate": statistics.median(rates),
            "memory": int(allocated.group(1)) if allocated else None,
            "device_memory_growth": int(grew.group(1)) if grew else None}


def profile_otc(exe, work, cfg, flags, env):
    """One short otc run with --profile: each step of the program timed on
    the device, its GB/s and TFLOP/s, and the time by op (printed)."""
    path = work / f"profile_{exe.name}.json"
    cmd = [str(exe), "--init", str(work / "init.onnx"), "--data", str(work / "data"),
           "--steps", "3", "--accum-steps", str(cfg["accum"]), "--profile", str(path)] + flags
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode:
        sys.exit(f"otc --profile failed:\n{done.stderr[-4000:]}")
    lines = done.stderr.splitlines()
    start = next(i for i, x in enumerate(lines) if x.startswith("train: profile"))
    end = next(i for i in range(start + 1, len(lines)) if not lines[i].startswith("  "))
    print("\n".join(lines[start:end]), flush=True)
    return str(path)


def run_torch(name, shape, mode, cfg, arrays, steps, warmup, per_sample, device, precision,
              double=False, perturb=None):
    bench = models.BENCHMARKS[name]
    sdpa = hasattr(torch.nn.functional, "scaled_dot_product_attention")
    m = models.build(name, shape, sdpa=sdpa, checkpoint=cfg["recompute"] == "blocks").to(device)
    if double:
        m = m.double()
    if perturb is not None:  # each weight off by about one float32 rounding
        gen = torch.Generator().manual_seed(perturb)
        with torch.no_grad():
            for p in m.parameters():
                p.mul_(1 + 2.0 ** -23 * torch.randn(p.shape, generator=gen).to(p.dtype))
    opt = bench.torch_optimizer(m.parameters(), device)
    fn = torch.compile(m) if mode == "compile" else m
    dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    scaler = torch.cuda.amp.GradScaler() if precision == "fp16" else None
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.cuda.reset_peak_memory_stats()
    micro, accum = cfg["micro"], cfg["accum"]
    names = bench.inputs
    losses, times = [], []
    for s in range(steps):
        start = time.perf_counter()
        total = 0.0
        for j in range(accum):
            at = (s * accum + j) * micro
            args = [torch.from_numpy(arrays[n][at:at + micro]).to(device) for n in names]
            if double:
                args = [a.double() if a.is_floating_point() else a for a in args]
            ctx = torch.autocast(device_type=device, dtype=dtype) if dtype else contextlib.nullcontext()
            with ctx:
                loss = fn(*args) / accum
            (scaler.scale(loss) if scaler else loss).backward()
            total += loss.detach()
        if scaler:
            scaler.step(opt)
            scaler.update()
        else:
            opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(float(total))
        times.append(time.perf_counter() - start)
    rates = [micro * accum * per_sample / dt for dt in times[warmup:]]
    peak = torch.cuda.max_memory_allocated() if device == "cuda" else None
    return {"losses": losses, "rate": statistics.median(rates), "memory": peak}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bundle")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--out", default=None)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--systems", default="otc,eager,compile")
    ap.add_argument("--configs", default=None)
    ap.add_argument("--no-profile", action="store_true",
                    help="skip the short --profile run of each otc configuration")
    ap.add_argument("--reference64", action="store_true",
                    help="check float32 configurations' losses against PyTorch in float64")
    a = ap.parse_args()
    bundle = Path(a.bundle).resolve()
    meta = json.loads((bundle / "bundle.json").read_text())
    name, shape = meta["model"], meta["shape"]
    bench = models.BENCHMARKS[name]
    configs = meta["configs"]
    if a.configs:
        configs = {k: configs[k] for k in a.configs.split(",")}
    work = Path(a.out or bundle / "work")
    work.mkdir(parents=True, exist_ok=True)
    systems = a.systems.split(",")
    if a.device != "cuda" or not hasattr(torch, "compile"):
        systems = [s for s in systems if s != "compile"]
    m = models.build(name, shape)
    write_init(work / "init.onnx", m, [p["name"] for p in meta["params"]])
    samples = a.steps * max(c["micro"] * c["accum"] for c in configs.values())
    arrays = models.data(name, shape, samples)
    (work / "data").mkdir(exist_ok=True)
    for k, v in arrays.items():
        np.save(work / "data" / f"{k}.npy", v)
    per_sample = models.SHAPES[name][shape].get("t", 1) if bench.unit == "tokens" else 1
    flops = models.flops_per_token(m)[1] if name == "gpt2" else None
    # Its own lib/, or the GPU bundle's beside it.
    env = dict(os.environ, LD_LIBRARY_PATH=f"{bundle / 'lib'}:{bundle.parent / 'lib'}:"
                                           f"{os.environ.get('LD_LIBRARY_PATH', '')}")
    try:  # cuDNN and the shared CUDA runtime cudnn-frontend opens, from PyTorch's wheels
        import glob
        import nvidia
        for p in nvidia.__path__:
            for d in sorted(glob.glob(p + "/*/lib")):
                if glob.glob(d + "/libcudnn.so.9") or glob.glob(d + "/libcudart.so.13"):
                    env["LD_LIBRARY_PATH"] += ":" + d
    except ImportError:
        pass
    device = a.device
    gpu = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    n = sum(p.numel() for p in m.parameters())
    print(f"device: {gpu}; {name} ({shape}), {n} parameters; {a.steps} steps, {a.runs} runs; "
          f"throughput in {bench.unit}/s", flush=True)
    results = {"device": gpu, "date": time.strftime("%Y-%m-%d"), "model": name, "shape": shape,
               "parameters": n, "steps": a.steps, "configs": {}}
    # PyTorch's runs of a configuration serve every configuration that
    # differs from it only in otc's flags (--conv-op).
    torch_runs = {}
    fp32_refs = {}  # PyTorch float32's losses per (micro, accum)
    for cname, cfg in configs.items():
        rows = {}
        same = tuple(cfg.get(k) for k in ("micro", "accum", "precision", "recompute"))
        for system in systems:
            if system not in ("otc", "otc_graphs") and (same, system) in torch_runs:
                rows[system] = torch_runs[(same, system)]
                print(f"{cname} {system}: the runs above", flush=True)
                continue
            runs = []
            for r in range(a.runs):
                if system in ("otc", "otc_graphs"):  # otc_graphs: with --cuda-graphs
                    flags = bench.otc_flags + (["--cuda-graphs"] if system == "otc_graphs" else [])
                    res = run_otc(bundle / cname, work, cfg, flags, a.steps, a.warmup,
                                  per_sample, env)
                else:
                    res = run_torch(name, shape, system, cfg, arrays, a.steps, a.warmup, per_sample,
                                    device, cfg["precision"])
                runs.append(res)
                extra = f", MFU {100 * res['rate'] * flops / PEAK_FLOPS:.1f}%" if flops else ""
                print(f"{cname} {system} run {r + 1}: {res['rate']:.1f} {bench.unit}/s{extra}, "
                      f"memory {res['memory']}, final loss {res['losses'][-1]:.4f}", flush=True)
            rows[system] = runs
            if system == "otc" and not a.no_profile:
                results.setdefault("profiles", {})[cname] = profile_otc(
                    bundle / cname, work, cfg, bench.otc_flags, env)
            if system not in ("otc", "otc_graphs"):
                torch_runs[(same, system)] = runs
        results["configs"][cname] = rows
        med = {s: statistics.median(r["rate"] for r in runs) for s, runs in rows.items()}
        for o in ("otc", "otc_graphs"):
            for s in ("eager", "compile"):
                if o in med and s in med:
                    print(f"{cname}: {o} / {s} {bench.unit}/s {med[o] / med[s]:.2f}")
        if "otc" in rows and "eager" in rows and cfg["precision"] == "fp32" and a.reference64:
            # Both against PyTorch in float64: otc within twice float32's
            # departure, plus 1e-4 of the loss. A small ResNet's
            # BatchNorm backward amplifies rounding chaotically (PyTorch
            # float32's gradient is 8% off float64's in places), so one
            # float32 run is one sample of that noise: three more from
            # weights perturbed by about one float32 rounding.
            losses = lambda double, perturb=None: np.array(run_torch(
                name, shape, "eager", cfg, arrays, a.steps, a.warmup, per_sample, device,
                "fp32", double=double, perturb=perturb)["losses"])
            ref = losses(True)
            dev = float(np.abs(np.array(rows["otc"][0]["losses"]) - ref).max())
            spread = max([float(np.abs(np.array(rows["eager"][0]["losses"]) - ref).max())] +
                         [float(np.abs(losses(False, seed) - ref).max()) for seed in range(3)])
            agree = dev <= 2 * spread + 1e-4 * float(np.abs(ref).max())
            print(f"{cname}: otc's losses {'agree with' if agree else 'differ from'} float64's "
                  f"(otc departs {dev:.2e}, PyTorch float32 {spread:.2e})")
        mem = rows["otc"][0]["memory"] if "otc" in rows else None
        if "eager" in rows and rows["eager"][0]["memory"] and mem:
            print(f"{cname}: otc / eager peak memory {mem / rows['eager'][0]['memory']:.2f}")
        if name == "resnet50" and "otc" in rows and "eager" in rows and cfg["precision"] != "fp32":
            # Its 16-bit curve against float32's, as GPT-2's below (each
            # configuration: im2col and GEMMs, and --conv-op's cuDNN).
            key = (cfg["micro"], cfg["accum"])
            if key not in fp32_refs:
                fp32_refs[key] = np.array(run_torch(name, shape, "eager", cfg, arrays, a.steps,
                                                    a.warmup, per_sample, device, "fp32")["losses"])
            ref = fp32_refs[key]
            dev = float(np.abs(np.array(rows["otc"][0]["losses"]) - ref).max())
            spread = float(np.abs(np.array(rows["eager"][0]["losses"]) - ref).max())
            ok = dev <= 2 * spread + 1e-4 * float(np.abs(ref).max())
            print(f"{cname}: otc's loss curve departs from float32's by {dev:.4f}, PyTorch's "
                  f"{cfg['precision']} by {spread:.4f}: {'within' if ok else 'outside'} 2x")
    if name == "gpt2" and "otc" in systems:
        cname, cfg = next(iter(configs.items()))
        ref = run_torch(name, shape, "eager", cfg, arrays, a.steps, a.warmup, per_sample, device,
                        "fp32")
        ref = np.array(ref["losses"])
        rows = results["configs"][cname]
        otc = np.array(rows["otc"][0]["losses"])
        dev = float(np.abs(otc - ref).max())
        spread = float(np.abs(np.array(rows["eager"][0]["losses"]) - ref).max()) if "eager" in rows else 0.0
        ok = dev <= 2 * spread + 1e-4 * float(np.abs(ref).max())
        results["fp32_losses"], results["curve_ok"] = ref.tolist(), ok
        print(f"otc's loss curve departs from float32's by {dev:.4f}, PyTorch's {cfg['precision']} "
              f"by {spread:.4f}: {'within' if ok else 'outside'} 2x")
        med = {s: statistics.median(r["rate"] for r in runs) for s, runs in rows.items()}
        mfu = med["otc"] * flops / PEAK_FLOPS
        print(f"targets: MFU {100 * mfu:.1f}% (>= 50%: {'met' if mfu >= 0.5 else 'not met'})")
        for s, target in (("compile", 1.1), ("eager", 1.5)):
            if s in med:
                ratio = med["otc"] / med[s]
                print(f"targets: otc / {s} {ratio:.2f} (>= {target}: "
                      f"{'met' if ratio >= target else 'not met'})")
        if "eager" in rows and rows["eager"][0]["memory"]:
            ratio = rows["otc"][0]["memory"] / rows["eager"][0]["memory"]
            print(f"targets: otc / eager peak memory {ratio:.2f} (<= 0.8: "
                  f"{'met' if ratio <= 0.8 else 'not met'})")
    out = work / "results.json"
    out.write_text(json.dumps(results, indent=1))
    print(f"results: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
