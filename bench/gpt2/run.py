#!/usr/bin/env python3
"""GPT-2 training on one GPU: otc against PyTorch eager AMP and torch.compile,
side by side on the same machine, from the same initial weights and data
(issue 20's GPT-2 124M benchmark). Run on the GPU machine, from a bundle
made by make.py.

For each of `--runs` runs (3 by default), every system trains `--steps`
steps of micro-batch B (the bundle's) at T tokens, AdamW (lr 6e-4, betas
0.9/0.95, eps 1e-8, weight decay 0.1 on every parameter), no accumulation:
- otc: the bundle's executable (bf16 mixed precision), weights from
  init.onnx (--init), data from .npy files in order;
- PyTorch eager: bf16 autocast, fused AdamW, scaled_dot_product_attention;
- torch.compile of the same model.
Throughput is the median over steps after the first `--warmup` of tokens
per second (otc's logged samples/s, PyTorch's wall time per step including
its loss read, as otc's includes its one read). MFU = tokens/s x (6 N +
6 L C T) / 989e12 (H100 SXM's dense bf16). Peak memory: PyTorch's
max_memory_allocated; otc's allocations (parameters, gradients, moments,
arena, inputs, cuBLAS's workspace) and its device-memory growth.

Loss curves: a float32 PyTorch run (TF32 off) is the reference. PyTorch's
own bf16 curve departs from it by at most D over the run; otc's curve must
stay within 2 D of it (bf16's rounding differs between the two in order
and place, not in size), plus 1e-4 of the loss for float32's summation
order (a bundle compiled in float32, as the CPU smoke test's).

The data are a synthetic corpus with structure to learn (each token
usually follows from the one before by a fixed random map over a 4096-token
subset), cut into windows of T + 1 in order.

usage: run.py BUNDLE [--steps 100] [--runs 3] [--warmup 10] [--out DIR]
              [--device cuda] [--systems otc,eager,compile]
"""
import argparse
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


def corpus(vocab, n, seed=0):
    rng = np.random.default_rng(seed)
    sub = rng.choice(vocab, size=min(vocab, 4096), replace=False)
    nxt = rng.integers(0, len(sub), len(sub))
    out = np.empty(n, np.int64)
    i = int(rng.integers(len(sub)))
    for k in range(n):
        out[k] = sub[i]
        i = nxt[i] if rng.random() < 0.9 else int(rng.integers(len(sub)))
    return out


def make_data(dirpath, vocab, t, samples):
    dirpath.mkdir(parents=True, exist_ok=True)
    stream = corpus(vocab, samples * (t + 1))
    windows = stream.reshape(samples, t + 1)
    tokens, targets = windows[:, :-1].copy(), windows[:, 1:].copy()
    np.save(dirpath / "tokens.npy", tokens)
    np.save(dirpath / "targets.npy", targets)
    return tokens, targets


def write_init(path, model, names):
    state = model.state_dict()
    inits = [numpy_helper.from_array(state[n].detach().cpu().float().numpy(), n) for n in names]
    graph = helper.make_graph([], "init", [], [], inits)
    onnx.save(helper.make_model(graph), str(path))


def run_otc(bundle, work, steps, warmup, t, env):
    log = work / "otc.jsonl"
    cmd = [str(bundle / "gpt2"), "--init", str(work / "init.onnx"), "--data", str(work / "data"),
           "--steps", str(steps), "--lr", "6e-4", "--beta2", "0.95", "--eps", "1e-8",
           "--weight-decay", "0.1", "--log", str(log)]
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if done.returncode:
        sys.exit(f"otc failed:\n{done.stderr[-4000:]}")
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    losses = [x["loss"] for x in lines]
    rates = [x["samples_per_second"] * t for x in lines[warmup:]]
    allocated = re.search(r"memory: (\d+) bytes allocated", done.stderr)
    grew = re.search(r"grew by (-?\d+) bytes", done.stderr)
    return {"losses": losses, "tokens_per_s": statistics.median(rates),
            "memory_allocated": int(allocated.group(1)) if allocated else None,
            "device_memory_growth": int(grew.group(1)) if grew else None}


def run_torch(shape, mode, tokens, targets, micro, steps, warmup, device, amp):
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import model as gpt2
    m = gpt2.build(shape, sdpa=hasattr(torch.nn.functional, "scaled_dot_product_attention")).to(device)
    kw = {"fused": True} if device == "cuda" else {}
    opt = torch.optim.AdamW(m.parameters(), lr=6e-4, betas=(0.9, 0.95), eps=1e-8,
                            weight_decay=0.1, **kw)
    step_fn = torch.compile(m) if mode == "compile" else m
    if device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.cuda.reset_peak_memory_stats()
    losses, times = [], []
    for s in range(steps):
        x = torch.from_numpy(tokens[s * micro:(s + 1) * micro]).to(device)
        y = torch.from_numpy(targets[s * micro:(s + 1) * micro]).to(device)
        start = time.perf_counter()
        if amp:
            with torch.autocast(device_type=device, dtype=torch.bfloat16):
                loss = step_fn(x, y)
        else:
            loss = step_fn(x, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        losses.append(loss.item())
        times.append(time.perf_counter() - start)
    t = tokens.shape[1]
    rates = [micro * t / dt for dt in times[warmup:]]
    peak = torch.cuda.max_memory_allocated() if device == "cuda" else None
    return {"losses": losses, "tokens_per_s": statistics.median(rates), "peak_memory": peak}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("bundle")
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--out", default=None)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--systems", default="otc,eager,compile")
    a = ap.parse_args()
    bundle = Path(a.bundle).resolve()
    meta = json.loads((bundle / "params.json").read_text())
    sys.path.insert(0, str(bundle))
    import model as gpt2
    shape, micro = meta["shape"], meta["micro_batch"]
    c = gpt2.SHAPES[shape]
    work = Path(a.out or bundle / "work")
    work.mkdir(parents=True, exist_ok=True)
    systems = a.systems.split(",")
    if a.device != "cuda" or not hasattr(torch, "compile"):
        systems = [s for s in systems if s != "compile"]
    m = gpt2.build(shape)
    n, flops = gpt2.parameters(m)
    write_init(work / "init.onnx", m, [p["name"] for p in meta["params"]])
    tokens, targets = make_data(work / "data", c.vocab, c.t, a.steps * micro)
    env = dict(os.environ, LD_LIBRARY_PATH=f"{bundle / 'lib'}:{os.environ.get('LD_LIBRARY_PATH', '')}")
    try:
        import nvidia.cudnn
        env["LD_LIBRARY_PATH"] += ":" + os.path.join(os.path.dirname(nvidia.cudnn.__file__), "lib")
    except ImportError:
        pass
    device = a.device
    name = torch.cuda.get_device_name() if device == "cuda" else "cpu"
    print(f"device: {name}; GPT-2 {shape}: {n} parameters, {flops / 1e6:.1f} MFLOP per token; "
          f"micro-batch {micro} x T {c.t}, {a.steps} steps, {a.runs} runs", flush=True)
    amp = meta["precision"] != "fp32"
    results = {"device": name, "date": time.strftime("%Y-%m-%d"), "shape": shape, "parameters": n,
               "flops_per_token": flops, "micro_batch": micro, "t": c.t, "steps": a.steps, "runs": {}}
    for system in systems:
        runs = []
        for r in range(a.runs):
            if system == "otc":
                res = run_otc(bundle, work, a.steps, a.warmup, c.t, env)
            else:
                res = run_torch(shape, system, tokens, targets, micro, a.steps, a.warmup, device, amp)
            runs.append(res)
            mfu = res["tokens_per_s"] * flops / PEAK_FLOPS
            mem = res.get("peak_memory") or res.get("memory_allocated")
            print(f"{system} run {r + 1}: {res['tokens_per_s']:.0f} tokens/s, MFU {100 * mfu:.1f}%, "
                  f"memory {mem}, final loss {res['losses'][-1]:.4f}", flush=True)
        results["runs"][system] = runs
    reference = run_torch(shape, "eager", tokens, targets, micro, a.steps, a.warmup, device, False)
    results["fp32_losses"] = reference["losses"]
    ref = np.array(reference["losses"])
    spread = None
    if "eager" in results["runs"]:
        spread = float(np.abs(np.array(results["runs"]["eager"][0]["losses"]) - ref).max())
    print(f"PyTorch float32 final loss {ref[-1]:.4f}; PyTorch bf16's largest departure from it "
          f"{spread}")
    med = {s: statistics.median(r["tokens_per_s"] for r in runs) for s, runs in results["runs"].items()}
    if "otc" in med:
        otc = results["runs"]["otc"][0]
        dev = float(np.abs(np.array(otc["losses"]) - ref).max())
        mfu = med["otc"] * flops / PEAK_FLOPS
        print(f"otc: MFU {100 * mfu:.1f}% (target >= 50%: {'met' if mfu >= 0.5 else 'not met'})")
        for s, target in (("compile", 1.1), ("eager", 1.5)):
            if s in med:
                ratio = med["otc"] / med[s]
                print(f"otc / {s} tokens/s: {ratio:.2f} (target >= {target}: "
                      f"{'met' if ratio >= target else 'not met'})")
        if "eager" in results["runs"] and otc.get("memory_allocated"):
            peak = results["runs"]["eager"][0]["peak_memory"]
            if peak:
                ratio = otc["memory_allocated"] / peak
                print(f"otc / PyTorch eager peak memory: {ratio:.2f} (target <= 0.8: "
                      f"{'met' if ratio <= 0.8 else 'not met'})")
        if spread is not None:
            # The floor is float32's own summation noise, for bundles run in float32.
            ok = dev <= 2 * spread + 1e-4 * float(np.abs(ref).max())
            print(f"otc's loss curve departs from float32's by {dev:.4f}, PyTorch bf16's by "
                  f"{spread:.4f}: {'within' if ok else 'outside'} 2x")
            results["curve_ok"] = ok
    (work / "results.json").write_text(json.dumps(results, indent=1))
    print(f"results: {work / 'results.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
