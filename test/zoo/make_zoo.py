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
    def __init__(self, build, inputs, optimizer, lr, micro=2, accum=1, frozen=(), steps=STEPS,
                 reference=True, **opt):
        self.build, self.inputs, self.optimizer, self.frozen = build, inputs, optimizer, frozen
        self.steps, self.reference = steps, reference
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


class BERT(nn.Module):
    """An encoder with a padding-mask input (1 keeps a token), tanh-GELU and
    a classifier on the first token."""
    def __init__(self, vocab=16, t=8, d=16, heads=2, classes=3):
        super().__init__()
        self.heads = heads
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Parameter(torch.randn(1, t, d) * 0.1)
        self.ln0, self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc, self.out = nn.Linear(d, 2 * d), nn.Linear(2 * d, d)
        self.cls = nn.Linear(d, classes)

    def forward(self, tokens, pad_mask, labels):
        b, t = tokens.shape
        d = self.tok.embedding_dim
        x = self.ln0(self.tok(tokens) + self.pos)
        q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in self.qkv(x).split(d, 2))
        att = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads)
        att = att.masked_fill(pad_mask.view(b, 1, 1, t) == 0, -1e4)
        x = self.ln1(x + self.proj((F.softmax(att, -1) @ v).transpose(1, 2).reshape(b, t, d)))
        x = self.ln2(x + self.out(F.gelu(self.fc(x), approximate="tanh")))
        return F.cross_entropy(self.cls(torch.tanh(x[:, 0])), labels)


class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps, self.weight = eps, nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class LLaMABlock(nn.Module):
    """RMSNorm, rotary position embeddings (cos/sin tables as non-uniform
    constants), causal attention and a SwiGLU MLP."""
    def __init__(self, vocab=16, t=8, d=16, heads=2):
        super().__init__()
        self.heads, self.hd = heads, d // heads
        self.emb = nn.Embedding(vocab, d)
        self.n1, self.n2, self.n3 = RMSNorm(d), RMSNorm(d), RMSNorm(d)
        self.wq, self.wk, self.wv, self.wo = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.w1, self.w3 = nn.Linear(d, 2 * d, bias=False), nn.Linear(d, 2 * d, bias=False)
        self.w2 = nn.Linear(2 * d, d, bias=False)
        self.head = nn.Linear(d, vocab, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, self.hd, 2).float() / self.hd))
        ang = torch.outer(torch.arange(t).float(), inv)
        self.cos, self.sin = torch.cos(ang), torch.sin(ang)  # plain tensors: constants

    def rotate(self, x):
        x1, x2 = x[..., 0::2], x[..., 1::2]
        return torch.stack((x1 * self.cos - x2 * self.sin, x1 * self.sin + x2 * self.cos),
                           -1).flatten(-2)

    def forward(self, tokens, targets):
        b, t = tokens.shape
        x = self.emb(tokens)
        h = self.n1(x)
        q, k, v = (w(h).view(b, t, self.heads, self.hd).transpose(1, 2)
                   for w in (self.wq, self.wk, self.wv))
        q, k = self.rotate(q), self.rotate(k)
        att = q @ k.transpose(-2, -1) / math.sqrt(self.hd)
        causal = torch.ones(t, t, dtype=torch.bool).tril()
        att = att.masked_fill(~causal, float("-inf"))
        x = x + self.wo((F.softmax(att, -1) @ v).transpose(1, 2).reshape(b, t, -1))
        h = self.n2(x)
        x = x + self.w2(F.silu(self.w1(h)) * self.w3(h))
        logits = self.head(self.n3(x))
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


class ViT(nn.Module):
    def __init__(self, d=16, patch=4, hw=8, classes=4):
        super().__init__()
        self.patch = nn.Conv2d(3, d, patch, stride=patch)
        n = (hw // patch) ** 2
        self.cls_token = nn.Parameter(torch.randn(1, 1, d) * 0.1)
        self.pos = nn.Parameter(torch.randn(1, n + 1, d) * 0.1)
        self.ln1, self.ln2, self.ln = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, 2, batch_first=True)
        self.fc, self.out = nn.Linear(d, 2 * d), nn.Linear(2 * d, d)
        self.head = nn.Linear(d, classes)

    def forward(self, x, labels):
        h = self.patch(x).flatten(2).transpose(1, 2)
        h = torch.cat([self.cls_token.expand(h.shape[0], -1, -1), h], 1) + self.pos
        a = self.ln1(h)
        h = h + self.attn(a, a, a, need_weights=False)[0]
        h = h + self.out(F.gelu(self.fc(self.ln2(h))))
        return F.cross_entropy(self.head(self.ln(h)[:, 0]), labels)


class Recommender(nn.Module):
    """User and item embeddings, a dot product plus an MLP, BCE with logits."""
    def __init__(self, users=10, items=12, d=8):
        super().__init__()
        self.user, self.item = nn.Embedding(users, d), nn.Embedding(items, d)
        self.mlp = nn.Sequential(nn.Linear(2 * d, 8), nn.ReLU(), nn.Linear(8, 1))

    def forward(self, user, item, clicked):
        u, i = self.user(user), self.item(item)
        logit = (u * i).sum(-1) + self.mlp(torch.cat([u, i], -1)).squeeze(-1)
        return F.binary_cross_entropy_with_logits(logit, clicked)


class LSTMTagger(nn.Module):
    """Embeddings, a 2-layer bidirectional LSTM (batch_first), a GRU whose
    initial state is a learned parameter, a relu RNN and a bidirectional
    tanh RNN (nn.RNN's two forms), and a tag per token."""
    def __init__(self, vocab=12, d=8, h=6, tags=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.lstm = nn.LSTM(d, h, num_layers=2, bidirectional=True, batch_first=True)
        self.gru = nn.GRU(2 * h, h, batch_first=True)
        self.h0 = nn.Parameter(torch.randn(1, 1, h) * 0.5)
        self.relu_rnn = nn.RNN(h, h, nonlinearity="relu", batch_first=True)
        self.tanh_rnn = nn.RNN(h, h, bidirectional=True, batch_first=True)
        self.out = nn.Linear(2 * h, tags)

    def forward(self, tokens, tags):
        y, _ = self.lstm(self.emb(tokens))
        y, _ = self.gru(y, self.h0.expand(1, tokens.shape[0], -1).contiguous())
        y, _ = self.tanh_rnn(self.relu_rnn(y)[0])
        logits = self.out(y)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tags.reshape(-1))


class Finetune(nn.Module):
    """A pretrained-looking MLP whose first layer is frozen (--freeze fc1.*)."""
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(6, 8), nn.Linear(8, 8), nn.Linear(8, 3)

    def forward(self, x, labels):
        return F.cross_entropy(self.fc3(F.relu(self.fc2(torch.tanh(self.fc1(x))))), labels)


class DropoutMLP(nn.Module):
    """Dropout draws differ from PyTorch's, so this case has no reference
    weights: its test checks that the loss falls."""
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(8, 32), nn.Linear(32, 4)

    def forward(self, x, labels):
        return F.cross_entropy(self.fc2(F.dropout(F.relu(self.fc1(x)), 0.2)), labels)


def separable(width, classes):
    """Labels from a fixed linear map of the features: learnable."""
    def make(rng, n):
        x = rng.standard_normal((n, width)).astype(np.float32)
        w = np.random.default_rng(1).standard_normal((width, classes))
        return {"x": x, "labels": (x @ w).argmax(1).astype(np.int64)}
    return make


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


def padded(vocab, length, classes):
    def make(rng, n):
        lengths = rng.integers(3, length + 1, n)
        mask = (np.arange(length)[None, :] < lengths[:, None]).astype(np.int64)
        return {"tokens": rng.integers(0, vocab, (n, length)).astype(np.int64) * mask,
                "pad_mask": mask, "labels": rng.integers(0, classes, n).astype(np.int64)}
    return make


def tagged(vocab, length, tags):
    """A tag per token, from the token and its left neighbour."""
    def make(rng, n):
        tok = rng.integers(0, vocab, (n, length)).astype(np.int64)
        prev = np.concatenate([np.zeros((n, 1), np.int64), tok[:, :-1]], axis=1)
        return {"tokens": tok, "tags": ((tok + prev) % tags).astype(np.int64)}
    return make


def clicks(users, items):
    def make(rng, n):
        return {"user": rng.integers(0, users, n).astype(np.int64),
                "item": rng.integers(0, items, n).astype(np.int64),
                "clicked": rng.integers(0, 2, n).astype(np.float32)}
    return make


def features(width, classes):
    def make(rng, n):
        return {"x": rng.standard_normal((n, width)).astype(np.float32),
                "labels": rng.integers(0, classes, n).astype(np.int64)}
    return make


CASES = {
    "lenet": Case(LeNet, images(1, 12, 10), "sgd", 0.1),
    "batchnorm_cnn": Case(BatchNormCNN, images(3, 8, 4), "momentum", 0.05, accum=2, momentum=0.9),
    "resnet": Case(ResNet, images(3, 8, 5), "adam", 0.01, accum=2),
    "depthwise": Case(DepthwiseCNN, images(3, 6, 6), "adamw", 0.01, weight_decay=0.05),
    "textcnn": Case(TextCNN, tokens(20, 9, 3), "sgd", 0.2, accum=2),
    "gpt": Case(GPT, sequences(16, 8), "adamw", 0.01, weight_decay=0.1),
    "bert": Case(BERT, padded(16, 8, 3), "adam", 0.01, accum=2),
    "llama": Case(LLaMABlock, sequences(16, 8), "adamw", 0.01, accum=2, weight_decay=0.1),
    "vit": Case(ViT, images(3, 8, 4), "sgd", 0.05),
    "lstm_tagger": Case(LSTMTagger, tagged(12, 6, 4), "momentum", 0.2, momentum=0.9),
    "recommender": Case(Recommender, clicks(10, 12), "momentum", 0.1, micro=4, momentum=0.9),
    "dropout_mlp": Case(DropoutMLP, separable(8, 4), "adam", 0.01, micro=16, accum=2, steps=40,
                        reference=False),
    "finetune": Case(Finetune, features(6, 3), "sgd", 0.1, accum=2, frozen=("fc1.weight", "fc1.bias")),
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
    for name, p in model.named_parameters():
        p.requires_grad_(name not in case.frozen)
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
    data = case.inputs(rng, case.micro * case.accum * min(case.steps, 8))
    out = OUT / name
    (out / "data").mkdir(parents=True, exist_ok=True)
    for k, v in data.items():
        np.save(out / "data" / f"{k}.npy", v)
    export(case, model, state, data, out / "model.onnx")
    # Tied weights (the GPT's head) are exported once, under one name.
    exported = {i.name for i in onnx.load(str(out / "model.onnx")).graph.initializer}
    flags(case, out)
    if not case.reference:
        return
    w32 = {k: v for k, v in train(case, state, data, torch.float32).items() if k in exported}
    expected = {k: v.astype(np.float32) for k, v in w32.items()}
    if case.optimizer in ("adam", "adamw"):
        w64 = train(case, {k: v.double() if v.is_floating_point() else v
                           for k, v in state.items()}, data, torch.float64)
        for k in w32:
            expected[f"tol/{k}"] = np.float64(4 * np.abs(w32[k] - w64[k]).max() +
                                              1e-5 * np.abs(w64[k]).max())
    np.savez(out / "expected.npz", **expected)
    print(f"{name}: {sum(v.numel() for v in model.parameters())} parameters")


def flags(case, out):
    freeze = "".join(f" --freeze {name}" for name in case.frozen)
    (out / "compile_flags").write_text(
        f"--optimizer {case.optimizer} --micro-batch {case.micro}{freeze}\n")
    flags = f"--steps {case.steps} --accum-steps {case.accum} --lr {case.lr}"
    for k, v in case.opt.items():
        flags += f" --{k.replace('_', '-')} {v}"
    (out / "train_flags").write_text(flags + "\n")


def main():
    names = sys.argv[1:] or list(CASES)
    for name in names:
        make(name, CASES[name])


if __name__ == "__main__":
    main()
