#!/usr/bin/python3
"""The zoo: small PyTorch models of common architectures, each with its loss
inside, exported to ONNX (opset 17, training mode) with a data set and the
weights PyTorch reaches after 3 optimizer steps.

For each case, fixtures/<case>/ holds model.onnx, data/<input>.npy,
expected.npz, and the flags that reproduce the run: compile_flags for
`otc compile` and train_flags for the executable (the lit tests and the GPU
bundle both read them). Micro-batch j of step s is samples [((s*K + j) % M) * N, ...),
as the training executable reads them, and the reference accumulates by hand
(loss / K per micro-batch, one optimizer step), so BatchNorm sees each
micro-batch's own statistics and updates its running ones K times per step,
as otc does.

Tolerances: the SGD family is checked at 1e-5 relative (check_weights.py's
default). Adam and AdamW divide by sqrt(v), which turns float32 rounding on
near-zero gradients into steps of full size lr, so for those cases each
tensor's tolerance is derived from PyTorch's own float32-versus-float64
difference after the same 3 steps: tol/<name> in expected.npz is
4 * max |w32 - w64| + 1e-5 * max |w64| (check_weights.py reads it).

usage: make_zoo.py [CASE ...]   (default: all; deterministic)
"""
import copy
import math
import sys
from pathlib import Path

import numpy as np
import onnx
import onnx.numpy_helper
import torch
import torch.nn as nn
import torch.nn.functional as F

OUT = Path(__file__).resolve().parent / "fixtures"
STEPS = 3


class Case:
    def __init__(self, build, inputs, optimizer, lr, micro=2, accum=1, **opt):
        self.build, self.inputs, self.optimizer = build, inputs, optimizer
        self.lr, self.micro, self.accum, self.opt = lr, micro, accum, opt


# ----------------------------------------------------------------- models ---

class LeNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 5)
        self.conv2 = nn.Conv2d(4, 8, 3)
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 10)

    def forward(self, x, labels):
        h = F.max_pool2d(F.relu(self.conv1(x)), 2)
        h = F.max_pool2d(F.relu(self.conv2(h)), 2)
        return F.cross_entropy(self.fc2(F.relu(self.fc1(h.flatten(1)))), labels)


class BatchNormCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 8, 3, stride=2, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8, momentum=0.2)
        self.fc = nn.Linear(8, 4)

    def forward(self, x, labels):
        h = F.relu(self.bn1(self.conv1(x)))
        h = F.relu(self.bn2(self.conv2(h)))
        h = F.avg_pool2d(h, 3, stride=2, padding=1, count_include_pad=True)
        return F.cross_entropy(self.fc(F.adaptive_avg_pool2d(h, 1).flatten(1)), labels)


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = self.bn2(self.conv2(h))
        return F.relu(h + (x if self.shortcut is None else self.shortcut(x)))


class ResNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.block1 = BasicBlock(8, 8, 1)
        self.block2 = BasicBlock(8, 16, 2)
        self.fc = nn.Linear(16, 5)

    def forward(self, x, labels):
        h = self.block2(self.block1(F.relu(self.bn(self.stem(x)))))
        return F.cross_entropy(self.fc(F.adaptive_avg_pool2d(h, 1).flatten(1)), labels)


class DepthwiseCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.depthwise = nn.Conv2d(8, 8, 3, padding=1, groups=8, bias=False)
        self.bn = nn.BatchNorm2d(8)
        self.pointwise = nn.Conv2d(8, 16, 1)
        self.fc = nn.Linear(16 * 4 * 4, 6)

    def forward(self, x, labels):
        h = F.relu6(self.stem(x))
        h = F.relu6(self.bn(self.depthwise(h)))
        h = F.max_pool2d(F.relu6(self.pointwise(h)), 3, stride=2, padding=1, ceil_mode=True)
        return F.cross_entropy(self.fc(h.flatten(1)), labels)


class TextCNN(nn.Module):
    """1-D windows: a dilated Conv1d, an AvgPool1d with padding that is not
    counted and ceil_mode, and a global max pool, over embeddings."""
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 6)
        self.conv = nn.Conv1d(6, 8, 3, padding=2, dilation=2)
        self.fc = nn.Linear(8, 3)

    def forward(self, tokens, labels):
        h = F.relu(self.conv(self.emb(tokens).transpose(1, 2)))
        h = F.avg_pool1d(h, 3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)
        return F.cross_entropy(self.fc(F.adaptive_max_pool1d(h, 1).flatten(1)), labels)


class CausalSelfAttention(nn.Module):
    def __init__(self, d, heads, t):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        # A registered float buffer, reached only through a comparison.
        self.register_buffer("mask", torch.tril(torch.ones(t, t)).view(1, 1, t, t))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // self.heads))
        att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
        y = F.softmax(att, dim=-1) @ v
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, d))


class GPTBlock(nn.Module):
    def __init__(self, d, heads, t):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads, t)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    """Tied token embedding and output head, learned positions."""
    def __init__(self, vocab=16, t=8, d=16, heads=2, layers=2):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(t, d)
        self.blocks = nn.ModuleList(GPTBlock(d, heads, t) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        self.head.weight = self.wte.weight

    def forward(self, tokens, targets):
        t = tokens.shape[1]
        x = self.wte(tokens) + self.wpe(torch.arange(t))
        for blk in self.blocks:
            x = blk(x)
        logits = self.head(self.ln(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def images(c, hw, classes):
    def make(rng, n):
        return {"x": rng.standard_normal((n, c, hw, hw)).astype(np.float32),
                "labels": rng.integers(0, classes, n).astype(np.int64)}
    return make


def tokens(vocab, length, classes):
    def make(rng, n):
        return {"tokens": rng.integers(0, vocab, (n, length)).astype(np.int64),
                "labels": rng.integers(0, classes, n).astype(np.int64)}
    return make


def sequences(vocab, length):
    def make(rng, n):
        seq = rng.integers(0, vocab, (n, length + 1)).astype(np.int64)
        return {"tokens": seq[:, :-1].copy(), "targets": seq[:, 1:].copy()}
    return make


CASES = {
    "lenet": Case(LeNet, images(1, 12, 10), "sgd", 0.1),
    "batchnorm_cnn": Case(BatchNormCNN, images(3, 8, 4), "momentum", 0.05, accum=2, momentum=0.9),
    "resnet": Case(ResNet, images(3, 8, 5), "adam", 0.01, accum=2),
    "depthwise": Case(DepthwiseCNN, images(3, 6, 6), "adamw", 0.01, weight_decay=0.05),
    "textcnn": Case(TextCNN, tokens(20, 9, 3), "sgd", 0.2, accum=2),
    "gpt": Case(GPT, sequences(16, 8), "adamw", 0.01, weight_decay=0.1),
}

# ------------------------------------------------------------- reference ---


def optimizer(case, params):
    if case.optimizer in ("sgd", "momentum"):
        return torch.optim.SGD(params, lr=case.lr, momentum=case.opt.get("momentum", 0.0),
                               weight_decay=case.opt.get("weight_decay", 0.0))
    cls = torch.optim.Adam if case.optimizer == "adam" else torch.optim.AdamW
    return cls(params, lr=case.lr, weight_decay=case.opt.get("weight_decay", 0.0 if cls is torch.optim.Adam else 0.01))


def train(case, state, data, dtype):
    model = case.build().to(dtype)
    model.load_state_dict(state)
    model.train()
    opt = optimizer(case, [p for p in model.parameters() if p.requires_grad])
    n, k = case.micro, case.accum
    m = len(next(iter(data.values()))) // n
    for s in range(STEPS):
        opt.zero_grad()
        for j in range(k):
            first = ((s * k + j) % m) * n
            batch = [torch.from_numpy(v[first:first + n]) for v in data.values()]
            batch = [b.to(dtype) if b.is_floating_point() else b for b in batch]
            (model(*batch) / k).backward()
        opt.step()
    return {name: v.detach().double().numpy() for name, v in model.state_dict().items()
            if v.is_floating_point()}


def export(case, model, state, data, path):
    """Exports `model`; tracing runs it once in training mode, which moves
    BatchNorm's running statistics, so the initializers are then reset to
    `state`, where the reference starts."""
    sample = tuple(torch.from_numpy(v[:case.micro]) for v in data.values())
    torch.onnx.export(model, sample, str(path), opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      input_names=list(data), output_names=["loss"],
                      dynamic_axes={name: {0: "batch"} for name in data})
    m = onnx.load(str(path))
    for init in m.graph.initializer:
        if init.name in state:
            init.CopyFrom(onnx.numpy_helper.from_array(state[init.name].numpy(), init.name))
    onnx.checker.check_model(m)
    onnx.save(m, str(path))


def make(name, case):
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    model = case.build()
    state = copy.deepcopy(model.state_dict())
    data = case.inputs(rng, case.micro * case.accum * STEPS)
    out = OUT / name
    (out / "data").mkdir(parents=True, exist_ok=True)
    for k, v in data.items():
        np.save(out / "data" / f"{k}.npy", v)
    export(case, model, state, data, out / "model.onnx")
    # Tied weights (the GPT's head) are exported once, under one name.
    exported = {i.name for i in onnx.load(str(out / "model.onnx")).graph.initializer}
    w32 = {k: v for k, v in train(case, state, data, torch.float32).items() if k in exported}
    expected = {k: v.astype(np.float32) for k, v in w32.items()}
    if case.optimizer in ("adam", "adamw"):
        w64 = train(case, {k: v.double() if v.is_floating_point() else v
                           for k, v in state.items()}, data, torch.float64)
        for k in w32:
            expected[f"tol/{k}"] = np.float64(4 * np.abs(w32[k] - w64[k]).max() +
                                              1e-5 * np.abs(w64[k]).max())
    np.savez(out / "expected.npz", **expected)
    (out / "compile_flags").write_text(f"--optimizer {case.optimizer} --micro-batch {case.micro}\n")
    flags = f"--steps {STEPS} --accum-steps {case.accum} --lr {case.lr}"
    for k, v in case.opt.items():
        flags += f" --{k.replace('_', '-')} {v}"
    (out / "train_flags").write_text(flags + "\n")
    print(f"{name}: {sum(v.numel() for v in model.parameters())} parameters")


def main():
    names = sys.argv[1:] or list(CASES)
    for name in names:
        make(name, CASES[name])


if __name__ == "__main__":
    main()
