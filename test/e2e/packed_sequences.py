#!/usr/bin/python3
"""Trains recurrent layers over padded batches as PyTorch users write them
(pack_padded_sequence with enforce_sorted=False, the layer, then
pad_packed_sequence), exported by torch.onnx with each row's length a
run-time input (ONNX's sequence_lens), on otc's CPU target, and compares
the weights with PyTorch's after the same SGD steps (activations.py's
tolerance: 4 max |w32 - w64| + 1e-5 max |w64| per tensor).

  x [12, T 6, 3], lengths [12] (1 to 6, one 0-padded row per micro-batch
  at least) -> CELL over the packed rows -> Linear per step, and the final
  states h_n through a Linear -> y, mean-squared loss

CELL is lstm (2 layers, bidirectional), gru (bidirectional), rnn (relu,
bidirectional) or rnn_tanh (forward only). The output's padded steps are
0 and h_n is each row's state at its own last step, forward or reverse.

usage: packed_sequences.py CELL OUT_DIR    (otc on PATH; exits 1 on a mismatch)
"""
import copy
import sys
from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import numpy_helper
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from activations import train_and_check

T, I, H = 6, 3, 4
CELLS = {
    "lstm": lambda: torch.nn.LSTM(I, H, num_layers=2, bidirectional=True, batch_first=True),
    "gru": lambda: torch.nn.GRU(I, H, bidirectional=True, batch_first=True),
    "rnn": lambda: torch.nn.RNN(I, H, nonlinearity="relu", bidirectional=True, batch_first=True),
    "rnn_tanh": lambda: torch.nn.RNN(I, H, batch_first=True),
}


class Net(torch.nn.Module):
    def __init__(self, cell):
        super().__init__()
        self.cell = CELLS[cell]()
        dirs = 2 if self.cell.bidirectional else 1
        self.step = torch.nn.Linear(dirs * H, 2)
        self.last = torch.nn.Linear(dirs * self.cell.num_layers * H, 2)

    def forward(self, x, lengths):
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, state = self.cell(packed)
        h = state[0] if isinstance(state, tuple) else state
        out, _ = pad_packed_sequence(out, batch_first=True, total_length=x.shape[1])
        last = h.transpose(0, 1).reshape(x.shape[0], -1)
        return torch.cat([self.step(out).flatten(1), self.last(last)], 1)


def onnx_layouts(cell):
    """Per layer, functions from a state dict to ONNX's W, R and B: gates
    in ONNX's order (LSTM i, o, f, c from PyTorch's i, f, g, o; GRU z, r, n
    from r, z, n), directions stacked."""
    order = {"LSTM": [0, 3, 1, 2], "GRU": [1, 0, 2], "RNN": [0]}[type(cell).__name__]
    dirs = ["", "_reverse"] if cell.bidirectional else [""]

    def gates(v):
        return np.concatenate([np.split(v, len(order))[g] for g in order])

    def stacked(f):
        return lambda w: np.stack([f(w, d) for d in dirs])
    out = []
    for layer in range(cell.num_layers):
        p = f"cell.{{}}_l{layer}"
        out.append(stacked(lambda w, d, p=p: gates(w[p.format("weight_ih") + d])))
        out.append(stacked(lambda w, d, p=p: gates(w[p.format("weight_hh") + d])))
        out.append(stacked(lambda w, d, p=p: np.concatenate(
            [gates(w[p.format("bias_ih") + d]), gates(w[p.format("bias_hh") + d])])))
    return out


def train(net, x, lengths, t, dtype, lr):
    net = net.to(dtype)
    opt = torch.optim.SGD(net.parameters(), lr=lr)
    for s in range(3):
        b = slice(4 * s, 4 * s + 4)
        opt.zero_grad()
        F.mse_loss(net(x[b].to(dtype), lengths[b]), t[b].to(dtype)).backward()
        opt.step()
    return {k: v.detach().double().numpy() for k, v in net.state_dict().items()}


def main():
    cell, out = sys.argv[1], Path(sys.argv[2])
    torch.manual_seed(0)
    net = Net(cell)
    rng = np.random.default_rng(0)
    x = torch.tensor(rng.normal(0, 1, (12, T, I)), dtype=torch.float32)
    # Every micro-batch mixes full, short and one-step rows.
    lengths = torch.tensor([6, 2, 4, 1, 3, 6, 1, 5, 2, 2, 6, 4])
    with torch.no_grad():
        width = net(x[:4], lengths[:4]).shape[1]
    t = torch.tensor(rng.normal(0, 1, (12, width)), dtype=torch.float32)
    (out / "data").mkdir(parents=True, exist_ok=True)
    np.save(out / "data" / "x.npy", x.numpy())
    np.save(out / "data" / "lengths.npy", lengths.numpy())
    np.save(out / "data" / "targets.npy", t.numpy())
    torch.onnx.export(copy.deepcopy(net), (x[:4], lengths[:4]), out / "model.onnx",
                      input_names=["x", "lengths"], output_names=["y"],
                      dynamic_axes={"x": {0: "N"}, "lengths": {0: "N"}, "y": {0: "N"}},
                      opset_version=17)
    lr = 0.1
    w32 = train(copy.deepcopy(net), x, lengths, t, torch.float32, lr)
    w64 = train(copy.deepcopy(net), x, lengths, t, torch.float64, lr)
    # The exporter stores each layer's weights as ONNX's W, R and B (gates
    # reordered, directions stacked) under anonymous names: expect those by
    # the initial values they hold.
    w0 = {k: v.detach().double().numpy() for k, v in net.state_dict().items()}
    layouts = onnx_layouts(net.cell)
    # A Linear over 3-D data is a MatMul with the folded transpose.
    layouts += [lambda w, k=k: w[k].T for k in w0
                if not k.startswith("cell.") and w0[k].ndim == 2]
    stored = {i.name: numpy_helper.to_array(i) for i in onnx.load(out / "model.onnx").graph.initializer}
    expected = {}
    for name, value in stored.items():
        if name in w32:
            parts = (name, w32[name], w64[name])
        else:
            match = [f for f in layouts if np.array_equal(f(w0).astype(np.float32), value)]
            if not match:
                continue
            parts = (name, match[0](w32), match[0](w64))
        name, a32, a64 = parts
        expected[name] = a32.astype(np.float32)
        expected[f"tol/{name}"] = np.float64(4 * np.abs(a32 - a64).max() + 1e-5 * np.abs(a64).max())
    checked = len([k for k in expected if not k.startswith("tol/")])
    want = len([k for k in w32 if not k.startswith("cell.")]) + len(onnx_layouts(net.cell))
    if checked != want:
        sys.exit(f"expected {want} tensors to check, found {checked} in the export")
    sys.exit(train_and_check(out, expected, lr))


if __name__ == "__main__":
    main()
