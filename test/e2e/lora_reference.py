#!/usr/bin/python3
"""LoRA against a hand-written PyTorch LoRA (PEFT's formulation: PEFT does
not install over torch 1.13) on the zoo's LLaMA block.

  check SAVED.onnx CHECKPOINT_DIR RANK ALPHA STEPS K LR WD TARGETS...
      Adapts the named Linear layers as PEFT's LoraLayer does: y = x Wᵀ +
      (x Aᵀ) Bᵀ (alpha / rank), W frozen, A from otc's initialiser (its
      formula is in runtime/Train.cpp: initialValues; PEFT's
      kaiming_uniform_(a=sqrt(5)) bound 1/sqrt(in)), B zero; trains only A
      and B with AdamW, micro-batch 2, K micro-batches per step. Compares
      otc's trained A and B (from its final checkpoint) and the merged
      weights it saved (W + B A alpha/rank) with the float32 run, within
      4 max|w32 - w64| + 1e-5 max|w64| of the same run in float64 (Adam's
      noise amplification, as the zoo). Checks that every other weight
      kept its initial value bit for bit.
      An optional last argument P is --lora-dropout's probability: the
      reference then drops the adapters' input with otc's Philox mask
      (philox_reference.py), keyed by each weight's stream and the
      micro-batch's index in the run.
  check-fp16 SAVED.onnx CHECKPOINT_DIR RANK ALPHA STEPS K LR WD TARGETS...
      The same for a run compiled with --precision fp16, whose frozen base
      the step reads only in 16 bits. Each gradient then carries a relative
      error of a few unit roundoffs u = 2^-11 per rounding along its path:
      the weights may differ by a further 32 u times the run's travel (the
      sum of each step's largest update), as schedule_reference.py bounds.
      The merged base must still be the float32 W plus B A alpha/rank: W
      from the saved model minus the merge, within the float32 rounding of
      that sum, is the original W, not W rounded to 16 bits.
  adapter DIR CHECKPOINT_DIR RANK ALPHA
      --save-adapter's PEFT files: adapter_model.safetensors (read here by
      its spec: an 8-byte length, a JSON header, raw little-endian data)
      holds base_model.model.MODULE.lora_{A,B}.weight equal to the
      checkpoint's adapters bit for bit; adapter_config.json has r,
      lora_alpha and the target modules.
  expected OUT.npz UNIT RANK ALPHA STEPS K LR WD TARGETS...
      For the GPU bundle (test/gpu/bundle.sh), where the run's checkpoint
      is not at hand: the merged weights of `check` (UNIT 0) or
      `check-fp16` (UNIT 2^-11) with their tolerances as tol/NAME, for
      check_weights.py, and every frozen weight with tolerance 0.
  eval SAVED.onnx LOG.jsonl
      The last logged eval_loss (of the run's final parameters, with
      dropout off) equals onnxruntime's mean loss of the merged model over
      the zoo's micro-batches of 2 (every label counts, so the token-
      weighted mean is the mean of the micro-batches' means), within 1e-5
      relative.
  ort SAVED.onnx RANK ALPHA STEPS K LR WD TARGETS...
      The merged model in onnxruntime: its loss on the zoo's first
      micro-batch equals the adapted PyTorch model's (float32 reference)
      within 1e-5 relative.
"""
import math
import re
import struct
import sys
from pathlib import Path

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper

ZOO = Path(__file__).resolve().parent.parent / "zoo"
sys.path.insert(0, str(ZOO))
import make_zoo  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parent))
from philox_reference import keep_mask  # noqa: E402

M64 = (1 << 64) - 1


def mix(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def fnv(name):
    h = 0xCBF29CE484222325
    for c in name.encode():
        h = ((h ^ c) * 0x100000001B3) & M64
    return h


def otc_kaiming(name, shape, seed=0):
    h = mix(seed ^ fnv(name))
    bound = 1.0 / math.sqrt(shape[1])
    n = shape[0] * shape[1]
    u = np.array([(mix((h + i) & M64) >> 40) / float(1 << 24) for i in range(n)])
    return np.float32(bound * (2 * u - 1)).reshape(shape)


def fnv32(text):
    h = 2166136261
    for c in text.encode():
        h = ((h ^ c) * 16777619) & 0xFFFFFFFF
    return h & 0x7FFFFFFF


class LoraLinear(torch.nn.Module):
    offset = 0  # the micro-batch's index in the run: dropout's counter

    def __init__(self, base, name, rank, alpha, dtype, dropout=0.0):
        super().__init__()
        self.base, self.scale, self.dropout = base, alpha / rank, dropout
        self.stream = fnv32(name + ".lora_dropout")
        out, inp = base.weight.shape
        self.A = torch.nn.Parameter(torch.from_numpy(otc_kaiming(name + ".lora_A", (rank, inp))).to(dtype))
        self.B = torch.nn.Parameter(torch.zeros(out, rank, dtype=dtype))

    def forward(self, x):
        d = x
        if self.dropout and self.training:
            # otc.dropout's mask (Philox, as check_dropout.py verifies it);
            # kept values times 1/(1-p) rounded to float32, as otc multiplies.
            keep = keep_mask(0, LoraLinear.offset, self.stream, tuple(x.shape), self.dropout)
            d = x * torch.from_numpy(keep).to(x.dtype) * float(np.float32(1 / (1 - self.dropout)))
        return self.base(x) + (d @ self.A.t()) @ self.B.t() * self.scale


def adapted(rank, alpha, targets, dtype, dropout=0.0):
    torch.manual_seed(0)
    model = make_zoo.CASES["llama"].build()
    state = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy())
             for t in onnx.load(str(ZOO / "fixtures" / "llama" / "model.onnx")).graph.initializer}
    model.load_state_dict({k: state.get(k, v) for k, v in model.state_dict().items()})
    model = model.to(dtype)
    for p in model.parameters():
        p.requires_grad_(False)
    loras = {}
    for name, mod in list(model.named_children()):
        if isinstance(mod, torch.nn.Linear) and re.search(targets, name + ".weight"):
            loras[name] = LoraLinear(mod, name + ".weight", rank, alpha, dtype, dropout)
            setattr(model, name, loras[name])
    return model, loras


def data():
    d = ZOO / "fixtures" / "llama" / "data"
    return [np.load(d / "tokens.npy"), np.load(d / "targets.npy")]


def train(rank, alpha, steps, k, lr, wd, targets, dtype, dropout=0.0):
    model, loras = adapted(rank, alpha, targets, dtype, dropout)
    params = [p for l in loras.values() for p in (l.A, l.B)]
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=wd)
    x, y = data()
    n, m = 2, len(x) // 2
    travel = 0.0
    for s in range(steps):
        opt.zero_grad()
        for j in range(k):
            f = ((s * k + j) % m) * n
            LoraLinear.offset = s * k + j
            (model(torch.from_numpy(x[f:f + n]), torch.from_numpy(y[f:f + n])) / k).backward()
        before = [p.detach().clone() for p in params]
        opt.step()
        travel += max(float((p.detach() - b).abs().max()) for p, b in zip(params, before))
    out = {}
    for name, l in loras.items():
        w = name + ".weight"
        out[w + ".lora_A"] = l.A.detach().double().numpy()
        out[w + ".lora_B"] = l.B.detach().double().numpy()
        out[w] = (l.base.weight + l.B @ l.A * l.scale).detach().double().numpy()
    return model, out, travel


def reference(rank, alpha, steps, k, lr, wd, targets, unit, dropout=0.0):
    """The float32 run's weights and each one's tolerance: 4 max|w32 - w64|
    + 1e-5 max|w64|, plus 32 u times the run's travel for 16-bit runs."""
    _, w32, travel = train(rank, alpha, steps, k, lr, wd, targets, torch.float32, dropout)
    _, w64, _ = train(rank, alpha, steps, k, lr, wd, targets, torch.float64, dropout)
    tols = {n: 4 * np.abs(w32[n] - w64[n]).max() + 1e-5 * np.abs(w64[n]).max() + 32 * unit * travel
            for n in w32}
    return w32, tols


def checkpoint_tensors(path):
    raw = Path(path).read_bytes()
    head, _, body = raw.partition(b"end\n")
    tensors, at = {}, 0
    for line in head.decode().splitlines():
        if line.startswith("tensor "):
            name, count = line[7:].rsplit(" ", 1)
            n = int(count)
            tensors[name] = np.frombuffer(body[at:at + 4 * n], dtype=np.float32)
            at += 4 * n
    return tensors


def check(saved, ckdir, rank, alpha, steps, k, lr, wd, targets, unit=0.0, dropout=0.0):
    w32, tols = reference(rank, alpha, steps, k, lr, wd, targets, unit, dropout)
    got = {t.name: numpy_helper.to_array(t) for t in onnx.load(saved).graph.initializer}
    ck = checkpoint_tensors(Path(ckdir) / "checkpoint.otc")
    for name in w32:
        if name.endswith((".lora_A", ".lora_B")):
            got[name] = ck["value/" + name].reshape(w32[name].shape)
    ok = True
    for name, ref in w32.items():
        tol = tols[name]
        err = np.abs(got[name] - ref).max()
        print(f"{'ok' if err <= tol else 'FAIL'} {name}: max |diff| {err:.3g} (tol {tol:.3g})")
        ok &= bool(err <= tol)
    initial = {t.name: numpy_helper.to_array(t) for t in
               onnx.load(str(ZOO / "fixtures" / "llama" / "model.onnx")).graph.initializer}
    frozen = [n for n in initial if n not in w32 and not np.array_equal(initial[n], got[n])]
    if frozen:
        print("moved though frozen:", frozen)
        ok = False
    for name in (n for n in w32 if not n.endswith((".lora_A", ".lora_B"))):
        a, b = got[name + ".lora_A"].astype(np.float64), got[name + ".lora_B"].astype(np.float64)
        merge = b @ a * (alpha / rank)
        base = got[name].astype(np.float64) - merge
        # The runtime sums in double and rounds once: half an ulp of the sum.
        tol = np.spacing(np.abs(got[name]).astype(np.float32)).astype(np.float64)
        err = np.abs(base - initial[name]).max()
        if (np.abs(base - initial[name]) > tol).any():
            print(f"merged {name} is not the float32 base plus B A: max |diff| {err:.3g}")
            ok = False
    print("LoRA matches PyTorch" if ok else "LoRA differs")
    return 0 if ok else 1


def adapter(out, ckdir, rank, alpha):
    import json
    raw = (Path(out) / "adapter_model.safetensors").read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + n])
    body = raw[8 + n:]
    ck = checkpoint_tensors(Path(ckdir) / "checkpoint.otc")
    ok = True
    modules = set()
    for key, d in header.items():
        m = re.fullmatch(r"base_model\.model\.(.+)\.lora_([AB])\.weight", key)
        a, b = d["data_offsets"]
        t = np.frombuffer(body[a:b], dtype=np.float32).reshape(d["shape"])
        want = ck[f"value/{m.group(1)}.weight.lora_{m.group(2)}"].reshape(d["shape"])
        ok &= d["dtype"] == "F32" and np.array_equal(t, want)
        modules.add(m.group(1))
    config = json.loads((Path(out) / "adapter_config.json").read_text())
    ok &= config["r"] == rank and config["lora_alpha"] == alpha and set(config["target_modules"]) == modules
    print(f"adapter: {len(header)} tensors of {sorted(modules)}, r {config['r']}, alpha {config['lora_alpha']}: "
          f"{'equal to the checkpoint' if ok else 'differs'}")
    return 0 if ok else 1


def ort(saved, rank, alpha, steps, k, lr, wd, targets):
    import onnxruntime
    model, _, _ = train(rank, alpha, steps, k, lr, wd, targets, torch.float32)
    x, y = data()
    with torch.no_grad():
        want = float(model(torch.from_numpy(x[:2]), torch.from_numpy(y[:2])))
    sess = onnxruntime.InferenceSession(saved, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    got = float(sess.run(None, dict(zip(names, [x[:2], y[:2]])))[0])
    ok = abs(got - want) <= 1e-5 * abs(want)
    print(f"onnxruntime loss {got:.6f}, adapted PyTorch {want:.6f}: {'same' if ok else 'differ'}")
    return 0 if ok else 1


def expected(out, unit, rank, alpha, steps, k, lr, wd, targets):
    w32, tols = reference(rank, alpha, steps, k, lr, wd, targets, unit)
    z = {t.name: numpy_helper.to_array(t) for t in
         onnx.load(str(ZOO / "fixtures" / "llama" / "model.onnx")).graph.initializer}
    z.update({f"tol/{n}": np.float64(0) for n in list(z)})
    for name, ref in w32.items():
        if not name.endswith((".lora_A", ".lora_B")):
            z[name] = ref.astype(np.float32)
            z[f"tol/{name}"] = np.float64(tols[name])
    np.savez(out, **z)
    return 0


def eval_loss(saved, log):
    import json
    import onnxruntime
    rows = [json.loads(line) for line in open(log)]
    got = [r["eval_loss"] for r in rows if "eval_loss" in r][-1]
    x, y = data()
    sess = onnxruntime.InferenceSession(saved, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    want = float(np.mean([sess.run(None, dict(zip(names, [x[f:f + 2], y[f:f + 2]])))[0]
                          for f in range(0, len(x) - 1, 2)]))
    ok = abs(got - want) <= 1e-5 * abs(want)
    print(f"eval_loss {got:.6f}, merged model in onnxruntime {want:.6f}: {'same' if ok else 'differ'}")
    return 0 if ok else 1


if __name__ == "__main__":
    a = sys.argv
    if a[1] == "expected":
        sys.exit(expected(a[2], float(a[3]), int(a[4]), float(a[5]), int(a[6]), int(a[7]), float(a[8]),
                          float(a[9]), a[10]))
    if a[1] == "eval":
        sys.exit(eval_loss(a[2], a[3]))
    if a[1] in ("check", "check-fp16"):
        sys.exit(check(a[2], a[3], int(a[4]), float(a[5]), int(a[6]), int(a[7]), float(a[8]),
                       float(a[9]), a[10], 2.0**-11 if a[1] == "check-fp16" else 0.0,
                       float(a[11]) if len(a) > 11 else 0.0))
    if a[1] == "adapter":
        sys.exit(adapter(a[2], a[3], int(a[4]), float(a[5])))
    sys.exit(ort(a[2], int(a[3]), float(a[4]), int(a[5]), int(a[6]), float(a[7]), float(a[8]), a[9]))
