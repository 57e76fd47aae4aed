#!/usr/bin/python3
"""A training run's step boundary against PyTorch: learning-rate schedules
(Hugging Face's LambdaLR formulas), clip_grad_norm_, --no-decay groups,
skipped steps and token-weighted accumulation, on the zoo's GPT and LeNet.

  make CASE DIR     DIR/data: 64 samples for the zoo case. gpt: targets hold
                    -100 at random, so micro-batches count unequal tokens.
                    lenet with "inf": micro-batch 7 holds an infinity.
  expected CASE DIR WEIGHTS.npz LOGS.npz FLAGS...
                    The float32 reference's weights (tol/NAME: their derived
                    tolerances, as check_weights.py reads them), and its
                    per-step lrs and gradient norms with theirs, for the GPU
                    bundle (test/gpu), which has no float64 reference.
  logs LOG LOGS.npz Compares a run's logged lr and grad_norm with LOGS.npz.
  check CASE DIR LOG SAVED FLAGS...
                    Runs the reference with the training executable's flags
                    (--steps --accum-steps --lr --lr-schedule --warmup-steps
                    --min-lr --clip-grad-norm --weight-decay --no-decay) in
                    float32 and float64, and compares otc's saved weights,
                    and its logged lr, grad_norm and skipped flags.

The reference, per window of K micro-batches (micro-batch j of step s is
samples ((s*K + j) % M) * N, ...):
  - gpt: sum-reduced cross-entropy over the window's counted (not -100)
    targets, divided by their count: one big-batch mean over the window's
    tokens (Hugging Face's num_items_in_batch);
  - lenet, or --loss-average micro-batch: the mean of micro-batch means;
  - a step whose gradients are not finite is skipped, and so is its
    scheduler step (GradScaler's order: unscale, clip, step if finite,
    scheduler only if stepped);
  - total = torch.nn.utils.clip_grad_norm_(params, max_norm), then AdamW
    with two groups (decay, and the --no-decay names at 0).
Tolerances, derived from the numerics: weights 4 max|w32 - w64| +
1e-5 max|w64| per tensor (Adam's sqrt(v) turns float32 noise on near-zero
gradients into full steps; the float64 run measures it); gradient norms
4 |n32 - n64| + 1e-6 n64 per step; learning rates are double-precision
formulas on both sides: 1e-12 relative.
"""
import copy
import json
import math
import re
import sys
from pathlib import Path

import numpy as np

ZOO = Path(__file__).resolve().parent.parent / "zoo"
if sys.argv[1:2] != ["logs"]:  # the GPU bundle's log check needs numpy alone
    import onnx
    import torch
    import torch.nn.functional as F
    from onnx import numpy_helper
    sys.path.insert(0, str(ZOO))
    import make_zoo  # noqa: E402

SAMPLES = 64


def make(case, out, inf=False):
    rng = np.random.default_rng(1)
    data = make_zoo.CASES[case].inputs(rng, SAMPLES)
    if case == "gpt":
        t = data["targets"]
        # Micro-batches of 2 samples with 0 to 16 of their 16 targets ignored.
        for i in range(0, SAMPLES, 2):
            k = int(rng.integers(0, 17))
            flat = t[i:i + 2].reshape(-1)
            flat[rng.permutation(16)[:k]] = -100
            t[i:i + 2] = flat.reshape(2, 8)
    if inf:
        data["x"][14, 0, 0, 0] = np.inf  # micro-batch 7 of 2 samples
    (Path(out) / "data").mkdir(parents=True, exist_ok=True)
    for k, v in data.items():
        np.save(Path(out) / "data" / f"{k}.npy", v)


def flags(argv):
    f = {"steps": 1, "accum-steps": 1, "lr": 1e-3, "lr-schedule": "constant", "warmup-steps": 0,
         "min-lr": 0.0, "clip-grad-norm": 0.0, "weight-decay": 0.01, "no-decay": [],
         "loss-average": "tokens"}
    i = 0
    while i < len(argv):
        name, value = argv[i][2:], argv[i + 1]
        if name == "no-decay":
            f[name].append(value)
        else:
            f[name] = type(f[name])(value) if not isinstance(f[name], int) else int(value)
        i += 2
    return f


def lr_lambda(f, total):
    lr, w, floor = f["lr"], f["warmup-steps"], f["min-lr"]

    def factor(step):
        if step < w:
            return step / max(1, w)
        if f["lr-schedule"] == "constant":
            return 1.0
        progress = (step - w) / max(1, total - w)
        if f["lr-schedule"] == "linear":
            decay = max(0.0, 1.0 - progress)
        else:
            decay = max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))
        return (floor + (lr - floor) * decay) / lr
    return factor


def window_loss(case, model, batches, average):
    if case != "gpt" or average == "micro-batch":
        return sum(model(*b) for b in batches) / len(batches)
    counted = sum(int((b[1] != -100).sum()) for b in batches)
    total = 0
    for tokens, targets in batches:
        x = model.wte(tokens) + model.wpe(torch.arange(tokens.shape[1]))
        for blk in model.blocks:
            x = blk(x)
        logits = model.head(model.ln(x))
        total = total + F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1),
                                        ignore_index=-100, reduction="sum")
    return total / counted


def reference(case, data, f, dtype, forced=()):
    torch.manual_seed(0)
    model = make_zoo.CASES[case].build().to(dtype)
    model.train()
    named = dict(model.named_parameters())
    plain = [p for n, p in named.items() if any(re.search(r, n) for r in f["no-decay"])]
    decay = [p for p in named.values() if all(p is not q for q in plain)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": f["weight-decay"]},
                             {"params": plain, "weight_decay": 0.0}], lr=f["lr"])
    steps, k = f["steps"], f["accum-steps"]
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda(f, steps))
    n = 2
    m = SAMPLES // n
    lrs, norms, skipped = [], [], []
    travel = 0.0  # the sum over steps of the largest weight change
    for s in range(steps):
        opt.zero_grad()
        batches = []
        for j in range(k):
            first = ((s * k + j) % m) * n
            b = [torch.from_numpy(v[first:first + n]) for v in data.values()]
            batches.append([x.to(dtype) if x.is_floating_point() else x for x in b])
        window_loss(case, model, batches, f["loss-average"]).backward()
        lrs.append(opt.param_groups[0]["lr"])
        finite = all(torch.isfinite(p.grad).all() for p in model.parameters()) and s not in forced
        if f["clip-grad-norm"] > 0:
            norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), f["clip-grad-norm"]))
        else:
            norm = float(torch.sqrt(sum((p.grad.double() ** 2).sum() for p in model.parameters())))
        norms.append(norm)
        skipped.append(not finite)
        if finite:
            before = [p.detach().clone() for p in model.parameters()]
            opt.step()
            sched.step()
            travel += max(float((p.detach() - b).abs().max()) for p, b in zip(model.parameters(), before))
    weights = {k: v.detach().double().numpy() for k, v in model.state_dict().items()}
    return weights, lrs, norms, skipped, travel


def check(case, out, log, saved, argv):
    # fp16: otc's run in mixed precision against the float32 reference.
    # Each step's gradient carries a relative error of a few unit roundoffs
    # u = 2^-11 per rounding along its path: norms within 32 u, weights
    # within 32 u times the run's travel (the sum of each step's largest
    # update), as check_16bit.py bounds 3 steps. Learning rates and skipped
    # steps must be exact.
    unit = 0.0
    if argv[:2] == ["--precision", "fp16"]:
        unit, argv = 2.0**-11, argv[2:]
    f = flags(argv)
    data = {p.stem: np.load(p) for p in sorted((Path(out) / "data").glob("*.npy"))}
    order = [i.name for i in onnx.load(str(ZOO / "fixtures" / case / "model.onnx")).graph.input]
    data = {k: data[k] for k in order if k in data}
    rows = [json.loads(line) for line in open(log)]
    # fp16 overflows where float32 does not: those steps are skipped in the
    # reference too (their lr must then hold, which is checked).
    forced = {s for s, r in enumerate(rows) if unit and r.get("skipped")}
    w32, lr32, n32, sk32, travel = reference(case, data, f, torch.float32, forced)
    w64, _, n64, _, _ = reference(case, data, f, torch.float64, forced)
    ok = len(rows) == f["steps"]
    for s, row in enumerate(rows):
        if abs(row["lr"] - lr32[s]) > 1e-12 * max(lr32[s], 1e-30) + 1e-30:
            print(f"step {s + 1}: lr {row['lr']} != {lr32[s]}")
            ok = False
        if bool(row.get("skipped", False)) != sk32[s]:
            print(f"step {s + 1}: skipped {row.get('skipped')} != {sk32[s]}")
            ok = False
        if sk32[s]:
            continue
        tol = 4 * abs(n32[s] - n64[s]) + 1e-6 * n64[s] + 32 * unit * n64[s]
        if row["grad_norm"] is None or abs(row["grad_norm"] - n32[s]) > tol:
            print(f"step {s + 1}: grad_norm {row['grad_norm']} != {n32[s]} (tol {tol:.3g})")
            ok = False
    clipped = sum(1 for s in range(len(n32)) if not sk32[s] and f["clip-grad-norm"] > 0
                  and n32[s] > f["clip-grad-norm"])
    trained = {t.name: numpy_helper.to_array(t) for t in onnx.load(saved).graph.initializer}
    for name, ref in w32.items():
        if name not in trained:
            continue
        tol = (4 * np.abs(ref - w64[name]).max() + 1e-5 * np.abs(w64[name]).max() +
               32 * unit * travel)
        parts = [(slice(None), tol)]
        if unit and name.endswith("attn.qkv.bias"):
            # The key bias's gradient is zero but for rounding (softmax is
            # shift-invariant per row), and Adam normalises that noise into
            # steps of up to about lr, in directions fp16 and float32 pick
            # independently: two such runs part by at most 2 sum(lr).
            d = ref.size // 3
            parts = [(slice(0, d), tol), (slice(d, 2 * d), 2 * sum(lr32)), (slice(2 * d, None), tol)]
        for part, bound in parts:
            err = np.abs(trained[name][part] - ref[part]).max()
            if err > bound:
                print(f"{name}[{part.start}:{part.stop}]: max |diff| {err:.3g} > {bound:.3g}")
                ok = False
    print(f"clipped steps: {clipped}, skipped steps: {sum(sk32)}" +
          (f" (fp16 overflows: {len(forced)})" if unit else ""))
    print("schedule matches" if ok else "schedule differs")
    return 0 if ok else 1


def expected(case, out, path, logpath, argv):
    f = flags(argv)
    data = {p.stem: np.load(p) for p in sorted((Path(out) / "data").glob("*.npy"))}
    order = [i.name for i in onnx.load(str(ZOO / "fixtures" / case / "model.onnx")).graph.input]
    data = {k: data[k] for k in order if k in data}
    w32, lr32, n32, sk32, _ = reference(case, data, f, torch.float32)
    w64, _, n64, _, _ = reference(case, data, f, torch.float64)
    exported = {i.name for i in onnx.load(str(ZOO / "fixtures" / case / "model.onnx")).graph.initializer}
    z = {}
    for name, ref in w32.items():
        if name in exported and np.issubdtype(ref.dtype, np.floating):
            z[name] = ref.astype(np.float32)
            z[f"tol/{name}"] = np.float64(4 * np.abs(ref - w64[name]).max() + 1e-5 * np.abs(w64[name]).max())
    np.savez(path, **z)
    np.savez(logpath, lr=np.array(lr32), grad_norm=np.array(n32),
             grad_norm_tol=4 * np.abs(np.array(n32) - np.array(n64)) + 1e-6 * np.array(n64))


def logs(log, path):
    z = np.load(path)
    rows = [json.loads(line) for line in open(log) if '"loss"' in line]
    lr = np.array([r["lr"] for r in rows])
    norm = np.array([r["grad_norm"] for r in rows], dtype=np.float64)
    ok = len(rows) == len(z["lr"]) and np.allclose(lr, z["lr"], rtol=1e-12, atol=0) and \
        bool(np.all(np.abs(norm - z["grad_norm"]) <= z["grad_norm_tol"]))
    print("logged lr and grad_norm match" if ok else "logged lr or grad_norm differ")
    return 0 if ok else 1


if __name__ == "__main__":
    if sys.argv[1] == "expected":
        expected(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6:])
    elif sys.argv[1] == "logs":
        sys.exit(logs(sys.argv[2], sys.argv[3]))
    elif sys.argv[1] == "make":
        make(sys.argv[2], sys.argv[3], len(sys.argv) > 4 and sys.argv[4] == "inf")
    else:
        sys.exit(check(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6:]))
