#!/opt/hfvenv/bin/python
"""Adafactor reference fixtures: the zoo's GPT and LeNet trained 10 steps
by transformers.optimization.Adafactor (4.38.2, over torch 1.13; make the
venv with scripts/install-hf.sh), as otc's --optimizer adafactor runs them:
micro-batch 2, one micro-batch per step, micro-batch j of the run is
samples ((j % M) * 2, ...) of the zoo's data.

Two settings per model:
  fixed     Adafactor(lr=LR, scale_parameter=False, relative_step=False,
            warmup_init=False): `otc ... --lr LR`, the fine-tuning setting.
  relative  Adafactor(lr=None, scale_parameter=True, relative_step=True,
            warmup_init=False) (HF's defaults): `otc ... --scale-parameter
            --relative-step`.
  beta1     Adafactor(lr=LR, beta1=0.9, ...fixed): its optional first
            moment, `otc ... --lr LR --beta1 0.9`.
LeNet's convolution weights are rank 4, so HF factors them over their last
two dims (the kernel's height and width) per (out, in) pair; otc does the
same.

Writes fixtures/adafactor/CASE_SETTING.npz: the float32 run's weights, and
tol/NAME = 4 max(|w32 - w64|, |w32' - w64| ...) + 1e-5 max|w64|. Adafactor
divides by the root of a factored second moment, as Adam by sqrt(v), so
float32 noise on small gradients grows into visible weight differences;
w64 is the same run in float64, and the w32' are 8 float32 runs whose
gradient elements each get 2^-24 max|g| r added (r uniform in [-1, 1],
seeded differently per run; the amplification is heavy-tailed, so one
draw is not enough):
and whose second moments are each multiplied by 1 + 2^-24 r' after the
step: another implementation's rounding. otc sums in other orders (a
gradient element that is a sum of cancelling terms as large as max|g|
carries an absolute error of that order, not one relative to itself) and
computes the moments' means in double; Adafactor's normalisation by
1/sqrt(row/mean(row)) can amplify either differently from PyTorch's own
rounding. Deterministic.

usage: make_adafactor.py
"""
import sys
from pathlib import Path

import numpy as np
import onnx
import torch
from transformers.optimization import Adafactor

HERE = Path(__file__).resolve().parent
ZOO = HERE.parent / "zoo"
sys.path.insert(0, str(ZOO))
import make_zoo  # noqa: E402

STEPS, N = 10, 2
JITTERS = 8
SETTINGS = {
    "fixed": dict(scale_parameter=False, relative_step=False, warmup_init=False),
    "relative": dict(lr=None, scale_parameter=True, relative_step=True, warmup_init=False),
    "beta1": dict(beta1=0.9, scale_parameter=False, relative_step=False, warmup_init=False),
}
LR = {"gpt": 0.003, "lenet": 0.01}


def train(case, setting, dtype, jitter=None):
    torch.manual_seed(0)
    model = make_zoo.CASES[case].build().to(dtype)
    model.train()
    fixture = ZOO / "fixtures" / case
    data = [np.load(fixture / "data" / f) for f in sorted(p.name for p in (fixture / "data").iterdir())]
    names = sorted(p.stem for p in (fixture / "data").iterdir())
    order = {"gpt": ["tokens", "targets"], "lenet": ["x", "labels"]}[case]
    data = [data[names.index(k)] for k in order]
    kwargs = dict(SETTINGS[setting])
    if setting in ("fixed", "beta1"):
        kwargs["lr"] = LR[case]
    opt = Adafactor(model.parameters(), **kwargs)
    m = len(data[0]) // N
    for s in range(STEPS):
        opt.zero_grad()
        first = (s % m) * N
        batch = [torch.from_numpy(a[first:first + N]) for a in data]
        batch = [b.to(dtype) if b.is_floating_point() else b for b in batch]
        model(*batch).backward()
        if jitter is not None:  # another float32 rounding of the same gradients
            gen = torch.Generator().manual_seed(1000 * jitter + s)
            for p in model.parameters():
                r = 2 * torch.rand(p.grad.shape, generator=gen) - 1
                p.grad.add_(2.0**-24 * p.grad.abs().max() * r)
        opt.step()
        if jitter is not None:  # and of the second moments it keeps
            for state in opt.state.values():
                for key in ("exp_avg_sq_row", "exp_avg_sq_col", "exp_avg_sq", "exp_avg"):
                    if key in state:
                        v = state[key]
                        v.mul_(1 + 2.0**-24 * (2 * torch.rand(v.shape, generator=gen, dtype=v.dtype) - 1))
            with torch.no_grad():  # and of the weights the step wrote
                for p in model.parameters():
                    p.mul_(1 + 2.0**-24 * (2 * torch.rand(p.shape, generator=gen, dtype=p.dtype) - 1))
    return {k: v.detach().double().numpy() for k, v in model.state_dict().items()
            if v.is_floating_point()}


def main():
    out = HERE / "fixtures" / "adafactor"
    out.mkdir(parents=True, exist_ok=True)
    for case in ("gpt", "lenet"):
        for setting in SETTINGS:
            w32 = train(case, setting, torch.float32)
            jittered = [train(case, setting, torch.float32, jitter=j) for j in range(JITTERS)]
            w64 = train(case, setting, torch.float64)
            # Tied weights are exported once, under one name.
            exported = {i.name for i in onnx.load(str(ZOO / "fixtures" / case / "model.onnx")).graph.initializer}
            z = {}
            for k in w32:
                if k not in exported or k.endswith("mask"):
                    continue
                z[k] = w32[k].astype(np.float32)
                noise = max(np.abs(w - w64[k]).max() for w in [w32[k]] + [j[k] for j in jittered])
                z[f"tol/{k}"] = np.float64(4 * noise + 1e-5 * np.abs(w64[k]).max())
            np.savez(out / f"{case}_{setting}.npz", **z)
            print(f"{case} {setting}: {len(w32)} tensors")


if __name__ == "__main__":
    main()
