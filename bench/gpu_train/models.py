"""The models of issue 20's GPU benchmarks, shared by the export here (torch
1.13, for otc) and the PyTorch runs on the GPU machine (torch 2.x), with
their configurations, data and optimizers.

- gpt2: GPT-2 124M. Token and learned position embeddings, pre-LayerNorm
  blocks of causal self-attention and a tanh-GELU MLP, a final LayerNorm,
  a head tied to the token embedding, no dropout. Attention is written out
  (scores, GPT-2's bool causal buffer through torch.where with the dtype's
  minimum, softmax, values), which otc-fuse-attention makes causal
  otc.attention; PyTorch runs F.scaled_dot_product_attention instead (the
  same function). GPT-2's initialisation. AdamW.
- bert: BERT-large (24 layers, d 1024, 16 heads, sequence 512) with a
  masked-LM head tied to the token embedding, the loss over every position
  (post-LayerNorm blocks, exact GELU, no dropout). AdamW.
- resnet50: ResNet-50 (bottlenecks 3, 4, 6, 3) at 224 x 224, BatchNorm in
  training mode, 1000 classes. Momentum SGD.

Each has a `tiny` shape for the CPU smoke test. The forward returns the
mean cross-entropy. `checkpoint=True` makes PyTorch recompute each
repeated block in the backward (torch.utils.checkpoint), as otc's
`--recompute blocks` does.
"""
import math
from dataclasses import dataclass, field

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


def _blocks(blocks, x, checkpoint):
    for b in blocks:
        if checkpoint:
            import torch.utils.checkpoint as ckpt
            x = ckpt.checkpoint(b, x, use_reentrant=False)
        else:
            x = b(x)
    return x


def _attention(q, k, v, sdpa, causal_bias=None):
    if sdpa:
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal_bias is not None)
    att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    if causal_bias is not None:
        t = q.shape[2]
        fill = torch.full([], torch.finfo(att.dtype).min, dtype=att.dtype, device=att.device)
        att = torch.where(causal_bias[:, :, :t, :t], att, fill)
    return F.softmax(att, dim=-1) @ v


# GPT-2 ---------------------------------------------------------------------

class GPTAttention(nn.Module):
    def __init__(self, d, heads, t, sdpa):
        super().__init__()
        self.heads, self.sdpa = heads, sdpa
        self.c_attn, self.c_proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.register_buffer("bias", torch.tril(torch.ones(t, t, dtype=torch.bool)).view(1, 1, t, t),
                             persistent=False)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2)
                   for z in self.c_attn(x).split(d, dim=2))
        y = _attention(q, k, v, self.sdpa, self.bias)
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, d))


class GPTBlock(nn.Module):
    def __init__(self, d, heads, t, sdpa):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = GPTAttention(d, heads, t, sdpa)
        self.c_fc, self.c_proj = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT2(nn.Module):
    def __init__(self, vocab, t, d, heads, layers, sdpa=False, checkpoint=False):
        super().__init__()
        self.checkpoint = checkpoint
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(t, d)
        self.h = nn.ModuleList(GPTBlock(d, heads, t, sdpa) for _ in range(layers))
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        self.lm_head.weight = self.wte.weight
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif p.dim() >= 2:
                std = 0.02 / math.sqrt(2 * layers) if name.endswith("c_proj.weight") else 0.02
                nn.init.normal_(p, std=std)

    def forward(self, tokens, targets):
        t = tokens.shape[1]
        x = self.wte(tokens) + self.wpe(torch.arange(t, device=tokens.device))
        logits = self.lm_head(self.ln_f(_blocks(self.h, x, self.checkpoint)))
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.view(-1))


# BERT ----------------------------------------------------------------------

class BertLayer(nn.Module):
    def __init__(self, d, heads, ffn, sdpa):
        super().__init__()
        self.heads, self.sdpa = heads, sdpa
        self.qkv, self.out = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.ln1, self.ln2 = nn.LayerNorm(d, eps=1e-12), nn.LayerNorm(d, eps=1e-12)
        self.fc, self.proj = nn.Linear(d, ffn), nn.Linear(ffn, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2)
                   for z in self.qkv(x).split(d, dim=2))
        y = _attention(q, k, v, self.sdpa).transpose(1, 2).contiguous().view(b, t, d)
        x = self.ln1(x + self.out(y))
        return self.ln2(x + self.proj(F.gelu(self.fc(x))))


class Bert(nn.Module):
    def __init__(self, vocab, t, d, heads, layers, ffn, sdpa=False, checkpoint=False):
        super().__init__()
        self.checkpoint = checkpoint
        self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(t, d)
        self.ln = nn.LayerNorm(d, eps=1e-12)
        self.layer = nn.ModuleList(BertLayer(d, heads, ffn, sdpa) for _ in range(layers))
        self.head_fc, self.head_ln = nn.Linear(d, d), nn.LayerNorm(d, eps=1e-12)
        self.decoder = nn.Linear(d, vocab)
        self.decoder.weight = self.tok.weight
        for name, p in self.named_parameters():
            if p.dim() >= 2:
                nn.init.normal_(p, std=0.02)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, tokens, labels):
        t = tokens.shape[1]
        x = self.ln(self.tok(tokens) + self.pos(torch.arange(t, device=tokens.device)))
        x = _blocks(self.layer, x, self.checkpoint)
        logits = self.decoder(self.head_ln(F.gelu(self.head_fc(x))))
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), labels.view(-1))


# ResNet-50 -----------------------------------------------------------------

class Bottleneck(nn.Module):
    def __init__(self, cin, width, stride):
        super().__init__()
        cout = 4 * width
        self.conv1, self.bn1 = nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3, self.bn3 = nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        h = F.relu(self.bn1(self.conv1(x)))
        h = F.relu(self.bn2(self.conv2(h)))
        h = self.bn3(self.conv3(h))
        return F.relu(h + (x if self.down is None else self.down(x)))


class ResNet50(nn.Module):
    def __init__(self, width, classes, checkpoint=False):
        super().__init__()
        self.checkpoint = checkpoint
        self.conv1 = nn.Conv2d(3, width, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        blocks, cin = [], width
        for i, n in enumerate((3, 4, 6, 3)):
            w = width * 2 ** i
            for j in range(n):
                blocks.append(Bottleneck(cin, w, 2 if j == 0 and i > 0 else 1))
                cin = 4 * w
        self.layers = nn.ModuleList(blocks)
        self.fc = nn.Linear(cin, classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")

    def forward(self, images, labels):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(images))), 3, 2, 1)
        x = _blocks(self.layers, x, self.checkpoint)
        return F.cross_entropy(self.fc(x.mean((2, 3))), labels)


# The benchmarks ------------------------------------------------------------

@dataclass
class Config:
    """One row of a benchmark: otc's compile and run flags and PyTorch's
    equivalent (autocast dtype, GradScaler, checkpointing)."""
    micro: int
    accum: int = 1
    precision: str = "fp32"  # fp32, fp16 (dynamic loss scaling) or bf16
    recompute: str = "none"  # none or blocks
    conv_op: bool = False    # otc compile --conv-op (cuDNN's convolutions); PyTorch runs the same


@dataclass
class Benchmark:
    build: object            # (shape, sdpa, checkpoint) -> model
    inputs: tuple            # the ONNX input names, data first
    optimizer: str           # otc's --optimizer
    otc_flags: list          # the run's optimizer flags
    torch_optimizer: object  # params -> torch optimizer (fused where the device allows)
    configs: dict = field(default_factory=dict)
    unit: str = "samples"    # what throughput counts: samples, or tokens (GPT-2)


SHAPES = {
    "gpt2": {"full": dict(vocab=50257, t=1024, d=768, heads=12, layers=12),
             "tiny": dict(vocab=512, t=64, d=64, heads=4, layers=2)},
    "bert": {"full": dict(vocab=30522, t=512, d=1024, heads=16, layers=24, ffn=4096),
             "tiny": dict(vocab=512, t=32, d=64, heads=4, layers=2, ffn=128)},
    "resnet50": {"full": dict(width=64, classes=1000, image=224),
                 "tiny": dict(width=4, classes=10, image=32)},
}


def _adamw(lr, betas, wd):
    def make(params, device):
        kw = {"fused": True} if device == "cuda" else {}
        return torch.optim.AdamW(params, lr=lr, betas=betas, eps=1e-8, weight_decay=wd, **kw)
    return make


def _sgd(params, device):
    return torch.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=1e-4)


def _gpt2(shape, sdpa, checkpoint):
    return GPT2(**SHAPES["gpt2"][shape], sdpa=sdpa, checkpoint=checkpoint)


def _bert(shape, sdpa, checkpoint):
    return Bert(**SHAPES["bert"][shape], sdpa=sdpa, checkpoint=checkpoint)


def _resnet(shape, sdpa, checkpoint):
    s = dict(SHAPES["resnet50"][shape])
    s.pop("image")
    return ResNet50(**s, checkpoint=checkpoint)


BENCHMARKS = {
    "gpt2": Benchmark(_gpt2, ("tokens", "targets"), "adamw",
                      ["--lr", "6e-4", "--beta2", "0.95", "--eps", "1e-8", "--weight-decay", "0.1"],
                      _adamw(6e-4, (0.9, 0.95), 0.1), {"bf16": Config(8, precision="bf16")},
                      unit="tokens"),
    # The seeds' table: a batch of 4 each way.
    "bert": Benchmark(_bert, ("tokens", "labels"), "adamw",
                      ["--lr", "1e-4", "--eps", "1e-8", "--weight-decay", "0.01"],
                      _adamw(1e-4, (0.9, 0.999), 0.01),
                      {"vanilla": Config(4), "accum": Config(1, 4),
                       "accum_recompute": Config(1, 4, recompute="blocks"),
                       "fp16": Config(4, precision="fp16"),
                       "accum_recompute_fp16": Config(1, 4, "fp16", "blocks")}),
    "resnet50": Benchmark(_resnet, ("images", "labels"), "momentum",
                          ["--lr", "0.1", "--momentum", "0.9", "--weight-decay", "1e-4"], _sgd,
                          {"bf16": Config(64, precision="bf16"),
                           "bf16_conv": Config(64, precision="bf16", conv_op=True)}),
}


def build(name, shape, sdpa=False, checkpoint=False, seed=0):
    """The model with its initial weights, the same on every machine."""
    torch.manual_seed(seed)
    return BENCHMARKS[name].build(shape, sdpa, checkpoint)


def example(name, shape, batch):
    """Inputs of `batch` samples for the export."""
    s = SHAPES[name][shape]
    if name == "resnet50":
        return (torch.zeros(batch, 3, s["image"], s["image"]), torch.zeros(batch, dtype=torch.int64))
    tokens = torch.zeros(batch, s["t"], dtype=torch.int64)
    return tokens, tokens.clone()


def data(name, shape, samples, seed=0):
    """`samples` samples in order, as numpy arrays named by the inputs.
    GPT-2's is a corpus with structure to learn: each token usually
    follows from the one before by a fixed random map over a 4096-token
    subset, cut into windows of T + 1. BERT's are random tokens and
    labels; ResNet's random images and labels."""
    s = SHAPES[name][shape]
    rng = np.random.default_rng(seed)
    names = BENCHMARKS[name].inputs
    if name == "resnet50":
        return {names[0]: rng.standard_normal((samples, 3, s["image"], s["image"]), dtype=np.float32),
                names[1]: rng.integers(0, s["classes"], samples).astype(np.int64)}
    if name == "bert":
        return {names[0]: rng.integers(0, s["vocab"], (samples, s["t"])).astype(np.int64),
                names[1]: rng.integers(0, s["vocab"], (samples, s["t"])).astype(np.int64)}
    t, vocab = s["t"], s["vocab"]
    sub = rng.choice(vocab, size=min(vocab, 4096), replace=False)
    nxt = rng.integers(0, len(sub), len(sub))
    n = samples * (t + 1)
    jump, fresh = rng.random(n) >= 0.9, rng.integers(0, len(sub), n)
    out = np.empty(n, np.int64)
    i = int(rng.integers(len(sub)))
    for k in range(n):
        out[k] = sub[i]
        i = int(fresh[k]) if jump[k] else int(nxt[i])
    w = out.reshape(samples, t + 1)
    return {names[0]: w[:, :-1].copy(), names[1]: w[:, 1:].copy()}


def flops_per_token(model):
    """GPT-2's training FLOPs per token, 6 N + 6 L C T (llm.c's count)."""
    n = sum(p.numel() for p in model.parameters())
    layers, d, t = len(model.h), model.wte.weight.shape[1], model.wpe.weight.shape[0]
    return n, 6 * n + 6 * layers * d * t
