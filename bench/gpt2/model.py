"""GPT-2 124M (and smaller shapes for smoke tests), shared by the export here
(torch 1.13, for otc) and the PyTorch runs on the GPU machine (torch 2.x).

GPT-2's architecture: token and learned position embeddings, pre-LayerNorm
blocks of causal self-attention and a tanh-GELU MLP, a final LayerNorm and
a head tied to the token embedding; no dropout. Attention is written out
(scores, GPT-2's bool causal buffer through torch.where with the dtype's
minimum, softmax, values), which otc-fuse-attention recognises as causal
attention; with `sdpa=True` PyTorch runs F.scaled_dot_product_attention
instead, the same function. The forward returns the mean cross-entropy.
Initialisation is GPT-2's: normal(0, 0.02), residual projections scaled by
1 / sqrt(2 layers), zero biases.
"""
import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class Config:
    vocab: int = 50257
    t: int = 1024
    d: int = 768
    heads: int = 12
    layers: int = 12


SHAPES = {
    "124m": Config(),
    "tiny": Config(vocab=512, t=64, d=64, heads=4, layers=2),
}


class Attention(nn.Module):
    def __init__(self, c, sdpa):
        super().__init__()
        self.heads, self.sdpa = c.heads, sdpa
        self.c_attn = nn.Linear(c.d, 3 * c.d)
        self.c_proj = nn.Linear(c.d, c.d)
        self.register_buffer("bias", torch.tril(torch.ones(c.t, c.t, dtype=torch.bool)).view(1, 1, c.t, c.t),
                             persistent=False)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // self.heads))
            fill = torch.full([], torch.finfo(att.dtype).min, dtype=att.dtype, device=att.device)
            att = torch.where(self.bias[:, :, :t, :t], att, fill)
            y = F.softmax(att, dim=-1) @ v
        return self.c_proj(y.transpose(1, 2).contiguous().view(b, t, d))


class Block(nn.Module):
    def __init__(self, c, sdpa):
        super().__init__()
        self.ln_1, self.ln_2 = nn.LayerNorm(c.d), nn.LayerNorm(c.d)
        self.attn = Attention(c, sdpa)
        self.c_fc, self.c_proj = nn.Linear(c.d, 4 * c.d), nn.Linear(4 * c.d, c.d)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT2(nn.Module):
    def __init__(self, c, sdpa=False):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(c.vocab, c.d), nn.Embedding(c.t, c.d)
        self.h = nn.ModuleList(Block(c, sdpa) for _ in range(c.layers))
        self.ln_f = nn.LayerNorm(c.d)
        self.lm_head = nn.Linear(c.d, c.vocab, bias=False)
        self.lm_head.weight = self.wte.weight
        for name, p in self.named_parameters():
            if name.endswith("bias"):
                nn.init.zeros_(p)
            elif p.dim() >= 2:
                std = 0.02 / math.sqrt(2 * c.layers) if name.endswith("c_proj.weight") else 0.02
                nn.init.normal_(p, std=std)

    def forward(self, tokens, targets):
        t = tokens.shape[1]
        x = self.wte(tokens) + self.wpe(torch.arange(t, device=tokens.device))
        for block in self.h:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), targets.view(-1))


def build(shape, sdpa=False, seed=0):
    """The model with its initial weights, the same on every machine."""
    torch.manual_seed(seed)
    return GPT2(SHAPES[shape], sdpa)


def parameters(model):
    """Parameter count, and the FLOPs of one token's training step:
    6 N + 6 L C T (llm.c's and the issue's count)."""
    n = sum(p.numel() for p in model.parameters())
    layers, d, t = len(model.h), model.wte.weight.shape[1], model.wpe.weight.shape[0]
    return n, 6 * n + 6 * layers * d * t
