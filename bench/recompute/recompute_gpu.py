#!/usr/bin/env python3
"""otc's --recompute policies on CUDA beside PyTorch's torch.utils.checkpoint
on the same model and configuration: make_models.py's GPT (2 blocks, d 256,
16 x 256 tokens, AdamW), the same initial weights and data. Built by
bundle.sh; see README.md here.

otc: each policy's executable (60 steps): median step time over steps
11..60, the bytes the runtime allocated, the growth of device memory in use
(cuBLAS workspace included), the arena's measured high-water mark beside its
plan, and from the compile log the planned peak, kept activations and FLOPs.
Checks (exit status): every run's high-water mark equals its plan, and every
policy's losses equal none's bitwise.

PyTorch (each configuration in its own process): no checkpointing; blocks,
torch.utils.checkpoint around each block; selective, the same with a
selective-checkpoint policy that saves the matrix products' and softmax's
outputs and recomputes the rest (otc's selective); sqrt,
checkpoint_sequential with ceil(sqrt(blocks)) segments. Median step time and
torch.cuda.max_memory_allocated (parameters, gradients, optimizer state and
activations, as otc's planned peak).

usage: recompute_gpu.py BUNDLE [--steps 60] [--out DIR]
"""
import argparse
import functools
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import make_zoo  # noqa: E402
from otc_run import run_train  # noqa: E402

DRY = os.environ.get("OTC_AMP_DRY_RUN") == "1"
DEV = "cpu" if DRY else "cuda"
POLICIES = ["none", "selective", "blocks", "sqrt", "budget"]
NAME = "gpt_bench"


def forward_with(model, mode):
    """The GPT's forward with PyTorch's checkpointing of its blocks."""
    from torch.utils.checkpoint import checkpoint, checkpoint_sequential

    context = None
    if mode == "selective":
        from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts
        aten = torch.ops.aten
        save = {aten.mm.default, aten.addmm.default, aten.bmm.default, aten._softmax.default}

        def policy(ctx, op, *args, **kwargs):
            return CheckpointPolicy.MUST_SAVE if op in save else CheckpointPolicy.PREFER_RECOMPUTE
        context = functools.partial(create_selective_checkpoint_contexts, policy)

    def forward(tokens, targets):
        t = tokens.shape[1]
        x = model.wte(tokens) + model.wpe(torch.arange(t, device=tokens.device))
        if mode == "sqrt":
            segments = math.ceil(math.sqrt(len(model.blocks)))
            x = checkpoint_sequential(model.blocks, segments, x, use_reentrant=False)
        for blk in model.blocks if mode != "sqrt" else []:
            if mode == "none":
                x = blk(x)
            elif context:
                x = checkpoint(blk, x, use_reentrant=False, context_fn=context)
            else:
                x = checkpoint(blk, x, use_reentrant=False)
        logits = model.head(model.ln(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))
    return forward


def torch_run(mode, steps):
    free0 = 0 if DRY else torch.cuda.mem_get_info()[0]
    import make_models
    case = make_models.MODELS[NAME]
    torch.manual_seed(0)
    model = case.build().to(DEV).train()
    forward = forward_with(model, mode)
    opt = make_zoo.optimizer(case, list(model.parameters()))
    d = BUNDLE / "models" / NAME
    data = [np.load(d / "data" / f"{k}.npy") for k in ("tokens", "targets")]
    n = case.micro
    m = len(data[0]) // n
    losses, times = [], []
    for s in range(steps):
        t0 = time.perf_counter()
        first = (s % m) * n
        batch = [torch.from_numpy(v[first:first + n]).to(DEV) for v in data]
        opt.zero_grad(set_to_none=True)
        loss = forward(*batch)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        times.append((time.perf_counter() - t0) * 1e3)
    if DRY:
        return {"losses": losses, "ms": times, "peak": 1, "device_growth": 1}
    return {"losses": losses, "ms": times, "peak": torch.cuda.max_memory_allocated(),
            "device_growth": free0 - torch.cuda.mem_get_info()[0]}


def otc_run(policy, steps, tmp):
    d = BUNDLE / "models" / NAME
    rows, stderr, mem = run_train(BUNDLE, d, f"train_{policy}", steps, Path(tmp) / f"{policy}.jsonl",
                                  OUT / f"otc_{policy}.log")
    compiled = (d / f"compile_{policy}.log").read_text()
    high = re.search(r"arena high-water mark (\d+) bytes \(planned (\d+)\)", stderr)
    step = re.search(r"^step: (\d+) FLOPs, (\d+) of them recomputed .*; recompute (.*); "
                     r"activations kept for the backward (\d+) bytes", compiled, re.M)
    planned = int(re.search(r"^  total +(\d+)$", compiled, re.M).group(1))
    import make_models
    micro = make_models.MODELS[NAME].micro
    return {"losses": [row["loss"] for row in rows],
            "ms": [micro / row["samples_per_second"] * 1e3 for row in rows],
            **mem, "high_water": int(high.group(1)), "arena_planned": int(high.group(2)),
            "planned": planned, "flops": int(step.group(1)), "recomputed": int(step.group(2)),
            "summary": step.group(3), "kept": int(step.group(4))}


def main():
    global BUNDLE, OUT
    ap = argparse.ArgumentParser()
    ap.add_argument("bundle")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--torch-one", nargs=2)
    a = ap.parse_args()
    BUNDLE, OUT = Path(a.bundle).resolve(), Path(a.out)
    if a.torch_one:
        print(json.dumps(torch_run(a.torch_one[0], int(a.torch_one[1]))))
        return
    dev = "cpu (dry run)" if DRY else torch.cuda.get_device_name()
    print(f"device: {dev}, torch {torch.__version__}, {time.strftime('%Y-%m-%d')}")
    ok, rows = True, []
    with tempfile.TemporaryDirectory() as tmp:
        for p in POLICIES:
            o = otc_run(p, a.steps, tmp)
            t = None
            if p != "budget":  # PyTorch has no budget policy
                r = subprocess.run([sys.executable, __file__, str(BUNDLE), "--torch-one", p,
                                    str(a.steps)], capture_output=True, text=True)
                if r.returncode == 0:
                    t = json.loads(r.stdout.splitlines()[-1])
                else:
                    print(f"torch {p}: failed: {r.stderr.strip().splitlines()[-1]}")
            rows.append({"policy": p, "otc": o, "torch": t})
    none = rows[0]
    mib = 1 << 20
    print("\n| policy | otc ms | otc time / none | otc planned peak MiB | otc allocated MiB | "
          "otc device growth MiB | arena high-water = plan | kept activations MiB | recomputed "
          "FLOPs | PyTorch ms | PyTorch time / none | PyTorch peak MiB | PyTorch peak / none |")
    print("|---|--:|--:|--:|--:|--:|:-:|--:|--:|--:|--:|--:|--:|")
    for r in rows:
        o, t = r["otc"], r["torch"]
        r["otc_ms"] = statistics.median(o["ms"][10:])
        same = o["losses"] == none["otc"]["losses"]
        exact = o["high_water"] == o["arena_planned"]
        ok &= same and exact
        r["losses_equal_none"], r["high_water_equals_plan"] = same, exact
        tcols = "| – | – | – | –"
        if t:
            r["torch_ms"] = statistics.median(t["ms"][10:])
            tn = none["torch"]
            tcols = (f"| {r['torch_ms']:.3f} | {r['torch_ms'] / statistics.median(tn['ms'][10:]):.2f} "
                     f"| {t['peak'] / mib:.1f} | {t['peak'] / tn['peak']:.2f}")
        print(f"| {r['policy']} | {r['otc_ms']:.3f} | {r['otc_ms'] / statistics.median(none['otc']['ms'][10:]):.2f} "
              f"| {o['planned'] / mib:.1f} | {o['allocated'] / mib:.1f} | {o['device_growth'] / mib:.1f} "
              f"| {'yes' if exact else 'NO'} | {o['kept'] / mib:.1f} "
              f"| +{100 * o['recomputed'] / (o['flops'] - o['recomputed']):.1f}% {tcols} |")
    for r in rows:
        print(f"{r['policy']}: {r['otc']['summary']}; losses bitwise equal to none: "
              f"{'yes' if r['losses_equal_none'] else 'NO'}; last loss otc "
              f"{r['otc']['losses'][-1]:.5f}" +
              (f", PyTorch {r['torch']['losses'][-1]:.5f}" if r["torch"] else ""))
    (OUT / "recompute.json").write_text(json.dumps(
        {"device": dev, "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"),
         "rows": rows}, indent=1))
    print("checks:", "ok" if ok else "FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
