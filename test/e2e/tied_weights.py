#!/usr/bin/python3
"""A tiny language model whose LM head is its token embedding, as GPT-2's:

  tokens [N, 6] -> Embedding(13, 8) -> tanh(· W) -> logits = h · embᵀ
  -> cross-entropy against the next tokens; SGD, 3 steps of micro-batch 4.

torch.onnx.export with constant folding on (its default) stores embᵀ as a
second initializer. otc must train one tensor, as PyTorch does: the
embedding after 3 steps is compared with PyTorch's (tolerance from PyTorch's
float32-versus-float64 difference, as the zoo's), and the saved model keeps
the tie (no initializer holds the copy).

With --concat the head is MobileBERT's: the embedding's transpose stacked
over a parameter of its own, h [.., 8 + 3] · cat([embᵀ, extra], 0). The
export folds the concatenation into one initializer; otc trains its first
8 rows as the embedding and the rest as `extra`, which is compared with
PyTorch's from the saved copy's last rows.

With --folded the model mixes each token with the one before, as RWKV's
time shift: k = x * a + x_prev * (1 - a), and likewise v with b (equal to
a at initialisation, as RWKV's are), then h = tanh(proj(k) * s + v * (s /
4)) * g + (g * 3) viewed [1, 1, D]. The export folds 1 - a, 1 - b, s / 4
and the viewed g * 3 into initializers of their own; otc computes each
from its parameter again, so a, b, s and g train as in PyTorch.

With --symmetric two layers start as the identity, as ConViT's value
weights: the export merges the equal (and symmetric) copies, otc splits
them again, and must not then take one for the other's transpose.

usage: tied_weights.py OUT_DIR [--concat | --folded | --symmetric]    (otc on PATH; exits 1 on a mismatch)
"""
import copy
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import numpy_helper

HERE = Path(__file__).resolve().parent
V, D, T = 13, 8, 6
X = 3  # --concat: the head's rows of its own


class TiedLm(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(V, D)
        self.proj = torch.nn.Linear(D, D, bias=False)

    def forward(self, tokens, targets):
        h = torch.tanh(self.proj(self.emb(tokens)))
        logits = F.linear(h, self.emb.weight)  # the tied head
        return F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))


class ConcatLm(torch.nn.Module):
    """MobileBERT's head: cat([emb.weightᵀ, extra]) over h of D + X features."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(V, D)
        self.proj = torch.nn.Linear(D, D + X, bias=False)
        self.extra = torch.nn.Parameter(torch.randn(X, V) * 0.3)

    def forward(self, tokens, targets):
        h = torch.tanh(self.proj(self.emb(tokens)))
        logits = h.matmul(torch.cat([self.emb.weight.t(), self.extra], dim=0))
        return F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))


class FoldedLm(torch.nn.Module):
    """Arithmetic on parameters that the export folds (see --folded)."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(V, D)
        self.proj = torch.nn.Linear(D, D, bias=False)
        self.head = torch.nn.Linear(D, V, bias=False)
        mix = torch.linspace(0.1, 0.9, D)
        self.a = torch.nn.Parameter(mix.clone())
        self.b = torch.nn.Parameter(mix.clone())
        self.s = torch.nn.Parameter(torch.rand(D) + 0.5)
        self.g = torch.nn.Parameter(torch.rand(D) + 0.5)

    def forward(self, tokens, targets):
        x = self.emb(tokens)
        prev = F.pad(x, (0, 0, 1, -1))
        k = x * self.a + prev * (1 - self.a)
        v = x * self.b + prev * (1 - self.b)
        h = torch.tanh(self.proj(k) * self.s + v * (self.s / 4))
        h = h * self.g + (self.g * 3).view(1, 1, D)
        return F.cross_entropy(self.head(h).reshape(-1, V), targets.reshape(-1))


class SymmetricLm(torch.nn.Module):
    """Two identity-initialised layers between the embedding and the head."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(V, D)
        self.l1 = torch.nn.Linear(D, D, bias=False)
        self.l2 = torch.nn.Linear(D, D, bias=False)
        self.head = torch.nn.Linear(D, V, bias=False)
        with torch.no_grad():
            self.l1.weight.copy_(torch.eye(D))
            self.l2.weight.copy_(torch.eye(D))

    def forward(self, tokens, targets):
        h = torch.tanh(self.l2(torch.tanh(self.l1(self.emb(tokens)))))
        return F.cross_entropy(self.head(h).reshape(-1, V), targets.reshape(-1))


def train(net, inputs, targets, dtype):
    """3 SGD steps of micro-batch 4 in `dtype` (float data cast to it)."""
    net = net.to(dtype)
    opt = torch.optim.SGD(net.parameters(), lr=0.5)
    cast = lambda t: t.to(dtype) if t.is_floating_point() else t
    for s in range(3):
        opt.zero_grad()
        net(cast(inputs[4 * s:4 * s + 4]), cast(targets[4 * s:4 * s + 4])).backward()
        opt.step()
    return {k: v.detach().double().numpy() for k, v in net.state_dict().items()}


def run(*args):
    r = subprocess.run([str(a) for a in args], capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"{args[0]} failed ({r.returncode}):\n{r.stdout}{r.stderr}")
    return r.stderr


def main():
    out = Path(sys.argv[1])
    concat = "--concat" in sys.argv[2:]
    folded = "--folded" in sys.argv[2:]
    symmetric = "--symmetric" in sys.argv[2:]
    (out / "data").mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    net = (ConcatLm() if concat else FoldedLm() if folded else SymmetricLm() if symmetric
           else TiedLm())
    rng = np.random.default_rng(0)
    seq = rng.integers(0, V, (12, T + 1))
    tokens, targets = torch.tensor(seq[:, :-1]), torch.tensor(seq[:, 1:])
    np.save(out / "data" / "tokens.npy", tokens.numpy())
    np.save(out / "data" / "targets.npy", targets.numpy())
    torch.onnx.export(net, (tokens[:4], targets[:4]), out / "model.onnx",
                      input_names=["tokens", "targets"], output_names=["loss"],
                      dynamic_axes={"tokens": {0: "N"}, "targets": {0: "N"}}, opset_version=17)
    inits = onnx.load(out / "model.onnx").graph.initializer
    shapes = [tuple(t.dims) for t in inits]
    if symmetric:
        print("exported with the layers merged:", sum(tuple(t.dims) == (D, D) for t in inits) == 1)
    elif folded:
        print("exported with folded copies:", sum(t.name.startswith("onnx::") and
                                                  t.dims[-1] == D and len(t.dims) in (1, 3)
                                                  for t in inits))
    elif concat:
        print("exported with the folded concatenation:", (D + X, V) in shapes and "extra" not in
              [t.name for t in inits])
    else:
        print("exported with the transposed copy:", (D, V) in shapes and (V, D) in shapes)
    w32 = train(copy.deepcopy(net), tokens, targets, torch.float32)
    w64 = train(copy.deepcopy(net), tokens, targets, torch.float64)
    # The export keeps proj.weight only transposed, under a generated name.
    proj_shape = (D, D + X) if concat else (D, D)
    proj = next(t.name for t in inits if tuple(t.dims) == proj_shape)
    head = (folded or symmetric) and next(t.name for t in inits if tuple(t.dims) == (D, V))
    for w in (w32, w64):
        if symmetric:  # l2 is read through an Identity of l1's: its output's name
            ident = next(n for n in onnx.load(out / "model.onnx").graph.node
                         if n.op_type == "Identity" and n.input[0] == proj)
            w[ident.output[0]] = w.pop("l2.weight").T
            w[proj] = w.pop("l1.weight").T
        else:
            w[proj] = w.pop("proj.weight").T
        if folded or symmetric:
            w[head] = w.pop("head.weight").T
    expected = {k: v.astype(np.float32) for k, v in w32.items()}
    for k in w32:
        expected[f"tol/{k}"] = np.float64(4 * np.abs(w32[k] - w64[k]).max() +
                                          1e-5 * np.abs(w64[k]).max())
    np.savez(out / "expected.npz", **expected)
    note = run("otc", "compile", out / "model.onnx", "-o", out / "train", "--target", "cpu",
               "--micro-batch", 4)
    print(note.strip())
    run(out / "train", "--data", out / "data", "--steps", 3, "--lr", 0.5,
        "--save", out / "trained.onnx")
    saved = onnx.load(out / "trained.onnx")
    onnx.checker.check_model(saved)
    trained = out / "trained.onnx"
    if concat:
        # PyTorch's `extra` is the folded copy's last X rows; its first D
        # rows are never read (the block reads the embedding).
        got = {t.name: numpy_helper.to_array(t) for t in saved.graph.initializer}
        head = next(t.name for t in inits if tuple(t.dims) == (D + X, V))
        got["extra"] = got.pop(head)[D:]
        np.savez(out / "trained.npz", **got)
        trained = out / "trained.npz"
    elif folded:
        print("saved folded copies:", sum(t.name.startswith("onnx::") and t.dims[-1] == D and
                                          len(t.dims) in (1, 3) for t in saved.graph.initializer))
    elif not symmetric:
        print("saved copies:", sum(tuple(t.dims) == (D, V) for t in saved.graph.initializer))
    sys.stdout.flush()
    sys.exit(subprocess.run([sys.executable, HERE / "check_weights.py", trained,
                             out / "expected.npz"]).returncode)

if __name__ == "__main__":
    main()
