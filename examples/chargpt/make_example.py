#!/usr/bin/python3
"""Build the character-level transformer example: a small GPT with its loss
inside, exported to ONNX, and windows of the shipped public-domain texts.

Texts: the Declaration of Independence (1776) and the Gettysburg Address
(1863), works of the United States government in the public domain,
reproduced from memory and possibly differing from the engrossed copies
in small details. Every tenth block of 330 characters is held out.

Data: every window of T + 1 characters at stride 3 in the training part
(tokens = the first T, targets = the last T), and every window at stride T
in the held-out part (which joins the held-out blocks). Writes model.onnx, vocab.txt, data/train and data/test.
"""
import math
from pathlib import Path

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = Path(__file__).resolve().parent
T, D, HEADS, LAYERS = 32, 48, 4, 2


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)
        self.fc, self.out = nn.Linear(D, 4 * D), nn.Linear(4 * D, D)
        self.register_buffer("mask", torch.tril(torch.ones(T, T)).view(1, 1, T, T))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, HEADS, d // HEADS).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // HEADS))
        att = F.softmax(att.masked_fill(self.mask == 0, float("-inf")), dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).contiguous().view(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class CharGPT(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, D), nn.Embedding(T, D)
        self.blocks = nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln = nn.LayerNorm(D)
        self.head = nn.Linear(D, vocab, bias=False)
        self.head.weight = self.wte.weight
        for emb in (self.wte, self.wpe):  # GPT-2's scale; N(0, 1) makes 30-nat logits
            nn.init.normal_(emb.weight, std=0.02)

    def forward(self, tokens, targets):
        x = self.wte(tokens) + self.wpe(torch.arange(T))
        for blk in self.blocks:
            x = blk(x)
        logits = self.head(self.ln(x))
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def read_text():
    return (HERE / "declaration.txt").read_text() + "\n" + (HERE / "gettysburg.txt").read_text()


def split(text, block=330):
    """(train, test): every tenth block of the text is held out."""
    blocks = [text[i:i + block] for i in range(0, len(text), block)]
    return ("".join(b for k, b in enumerate(blocks) if k % 10 != 9),
            "".join(b for k, b in enumerate(blocks) if k % 10 == 9))


def windows(ids, stride):
    starts = range(0, len(ids) - T - 1, stride)
    w = np.stack([ids[s:s + T + 1] for s in starts]).astype(np.int64)
    return {"tokens": w[:, :-1].copy(), "targets": w[:, 1:].copy()}


def main():
    text = read_text()
    vocab = sorted(set(text))
    (HERE / "vocab.txt").write_text("".join(vocab))
    train, test = (np.array([vocab.index(c) for c in part]) for part in split(text))
    for name, part, stride in (("train", train, 3), ("test", test, T)):
        (HERE / "data" / name).mkdir(parents=True, exist_ok=True)
        for k, v in windows(part, stride).items():
            np.save(HERE / "data" / name / f"{k}.npy", v)
    torch.manual_seed(0)
    model = CharGPT(len(vocab))
    sample = windows(train, 3)
    torch.onnx.export(model, tuple(torch.from_numpy(sample[k][:2]) for k in ("tokens", "targets")),
                      str(HERE / "model.onnx"), opset_version=17,
                      training=torch.onnx.TrainingMode.TRAINING, do_constant_folding=False,
                      input_names=["tokens", "targets"], output_names=["loss"],
                      dynamic_axes={"tokens": {0: "batch"}, "targets": {0: "batch"}})
    onnx.checker.check_model(onnx.load(str(HERE / "model.onnx")))
    print(f"{len(text)} characters, {len(vocab)} symbols, "
          f"{sum(p.numel() for p in model.parameters())} parameters")


if __name__ == "__main__":
    main()
