#!/usr/bin/python3
"""Compiles otc.lstm / otc.gru / otc.rnn and their gradients with `otc
kernel`, runs them on random inputs and checks every result (hidden and
cell states, kept gates or states, the gates' gradient, the initial states'
gradients) against PyTorch autograd in float64 over a step loop written
from ONNX's formulas.

usage: check_recurrent.py OTC DIR --cell lstm|gru|rnn [--reverse] [--lbr 0|1]
           [--relu] [--rbias] [--no-cell-grad] [--lens] [--type f32|bf16] [--steps T]
           [--batch B] [--hidden H] [--target cpu|cuda]
           [--build-only | --run-only]

Bounds. In float32, the bound of each result is 4 times PyTorch's own
float32 error on the same inputs (the same loop run in float32, against
float64), plus 2^-22 of the result's largest magnitude. otc sums the
recurrent products in another order (BLAS blocking), so its rounding errors
have the size of PyTorch's but fall elsewhere; the factor covers the spread
of their maxima, the floor a result PyTorch happens to get exactly.

With bf16 storage (inputs, weights, hidden states and gradients in bf16;
cell states, gates and carries in float32) the reference rounds to bf16
where the kernel stores: each hidden state, the gradients it writes, and
the operands of the recurrent products (r h for the GRU's candidate, the
gates' gradients). Every result is then within u |v| of it (u = 2^-8) plus
float32's error, except where the two round a value lying on either side of
a bf16 boundary: one ulp, 2u |v|, which the recurrence carries on but does
not grow (the weights are scaled so that every step contracts: each gate's
derivative is at most 1 and |R| sums to under 1/2 per row). So the bound is
4u max|v| over each result.
"""
import argparse
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

from check_kernel import round_to

torch.set_num_threads(1)

GATES = {"lstm": 4, "gru": 3, "rnn": 1}


def mlir(a, T, B, H):
    t = a.type
    G = GATES[a.cell]
    ty = lambda s, e=t: "tensor<" + "x".join(map(str, s)) + "x" + e + ">"
    st = "f32"
    x, r, h0, hs = ty((T, B, G * H)), ty((G * H, H)), ty((B, H)), ty((T, B, H))
    gates = ty((T, B, 4 * H), st)
    attrs = []
    if a.reverse:
        attrs.append("reverse = true")
    if a.cell == "gru" and a.lbr:
        attrs.append("linear_before_reset = true")
    attr = " {" + ", ".join(attrs) + "}" if attrs else ""
    if a.cell == "rnn":
        attr = " {" + ", ".join(attrs + [f"activation = {int(a.relu)} : i32"]) + "}"
    # With --lens, the sequence lengths [B] are the last argument.
    ln, lnt = (f" lens(%lens : tensor<{B}xi64>)", "") if a.lens else ("", "")
    if a.cell == "lstm":
        c0, cs = ty((B, H), st), ty((T, B, H), st)
        args = [f"%x: {x}", f"%r: {r}", f"%h0: {h0}", f"%c0: {c0}", f"%dh: {hs}"]
        cg, cgt = "", ""
        if a.cell_grad:
            args.append(f"%dc: {cs}")
            cg, cgt = " cell_grad %dc", f", {cs}"
        outs = [hs, cs, gates, x, h0, c0]
        body = (f"  %h, %c, %g = otc.lstm %x, %r, %h0, %c0{ln}{attr} : {x}, {r}, {h0}, {c0}{lnt} -> {hs}, {cs}, {gates}\n"
                f"  %dx, %dh0, %dc0 = otc.lstm_grad %dh, %r, %c, %g, %c0{cg}{ln}{attr} : {hs}, {r}, {cs}, {gates}, {c0}{cgt}{lnt}"
                f" -> {x}, {h0}, {c0}\n"
                f"  return %h, %c, %g, %dx, %dh0, %dc0 : {', '.join(outs)}\n")
    elif a.cell == "rnn":
        args = [f"%x: {x}", f"%r: {r}", f"%h0: {h0}", f"%dh: {hs}"]
        states = ty((T, B, H), st)
        outs = [hs, states, x, h0]
        body = (f"  %h, %s = otc.rnn %x, %r, %h0{ln}{attr} : {x}, {r}, {h0}{lnt} -> {hs}, {states}\n"
                f"  %dx, %dh0 = otc.rnn_grad %dh, %r, %s{ln}{attr} : {hs}, {r}, {states}{lnt} -> {x}, {h0}\n"
                f"  return %h, %s, %dx, %dh0 : {', '.join(outs)}\n")
    else:
        args = [f"%x: {x}", f"%r: {r}", f"%h0: {h0}", f"%dh: {hs}"]
        rb, rbt = "", ""
        if a.rbias:
            args.append(f"%rb: {ty((H,))}")
            rb, rbt = " rbias %rb", f", {ty((H,))}"
        outs = [hs, gates, x, h0]
        body = (f"  %h, %g = otc.gru %x, %r, %h0{rb}{ln}{attr} : {x}, {r}, {h0}{rbt}{lnt} -> {hs}, {gates}\n"
                f"  %dx, %dh0 = otc.gru_grad %dh, %r, %h, %g, %h0{ln}{attr} : {hs}, {r}, {hs}, {gates}, {h0}{lnt}"
                f" -> {x}, {h0}\n"
                f"  return %h, %g, %dx, %dh0 : {', '.join(outs)}\n")
    if a.lens:
        args.append(f"%lens: tensor<{B}xi64>")
    return f"func.func @recurrent({', '.join(args)}) -> ({', '.join(outs)}) {{\n{body}}}\n"


def bf16(v):
    return v.to(torch.bfloat16).to(v.dtype)


def reference(a, inputs, dtype, store):
    """Forward and autograd of ONNX's step formulas; `store` rounds where
    the kernel stores in its storage type (the identity in float32)."""
    T = inputs["x"].shape[0]
    H = inputs["r"].shape[1]
    t = {k: torch.tensor(v, dtype=dtype, requires_grad=k in ("x", "h0", "c0"))
         for k, v in inputs.items() if k != "lens"}
    lens = inputs.get("lens")
    x, r = t["x"], t["r"]
    order = range(T - 1, -1, -1) if a.reverse else range(T)
    h = t["h0"]
    # A gradient the kernel stores before it feeds a recurrent product is
    # rounded by a hook, so what flows on is the rounded value.
    def round_grad(v):
        if store is not None:
            v.register_hook(store)
    hs, cs, gates = [None] * T, [None] * T, [None] * T
    c = t.get("c0")
    sig = torch.sigmoid
    for s in order:
        xt = x[s]
        # A row at or past its length holds its state; its gates are 0.
        held = torch.tensor(s >= lens if lens is not None else np.zeros(x.shape[1], bool))[:, None]
        hold = lambda new, old: torch.where(held, old, new)
        if a.cell == "lstm":
            pre = xt + h @ r.T
            i, o, f, g = sig(pre[:, :H]), sig(pre[:, H:2 * H]), sig(pre[:, 2 * H:3 * H]), torch.tanh(pre[:, 3 * H:])
            round_grad(pre)
            c = hold(f * c + i * g, c)
            h_new = hold(o * torch.tanh(c), h)
            gates[s] = hold(torch.cat([i, o, f, g], 1), torch.zeros_like(pre))
            cs[s] = c
        elif a.cell == "rnn":
            pre = xt + h @ r.T
            round_grad(pre)
            h_new = hold(torch.relu(pre) if a.relu else torch.tanh(pre), h)
            gates[s] = h_new  # the kept states, before the hidden state's rounding
        else:
            zr = xt[:, :2 * H] + h @ r[:2 * H].T
            z, rg = sig(zr[:, :H]), sig(zr[:, H:])
            round_grad(zr)
            if a.lbr:
                q = h @ r[2 * H:].T + (t["rb"] if a.rbias else 0)
                round_grad(q)
                n = torch.tanh(xt[:, 2 * H:] + rg * q)
            else:
                q = rg * h
                qs = q if store is None else (q + (bf16(q) - q).detach())
                pre_n = xt[:, 2 * H:] + qs @ r[2 * H:].T
                round_grad(pre_n)
                n = torch.tanh(pre_n)
            h_new = hold(n + z * (h - n), h)
            gates[s] = hold(torch.cat([z, rg, n, q], 1), torch.zeros(h.shape[0], 4 * H, dtype=dtype))
        if store is not None:  # the stored hidden state, rounded
            h_new = h_new + (bf16(h_new) - h_new).detach()
        hs[s] = h_new
        h = h_new
    hs = torch.stack(hs)
    loss = (hs * t["dh"]).sum()
    out = {"hidden": hs}
    if a.cell == "lstm":
        cs = torch.stack(cs)
        out["cell"] = cs
        if a.cell_grad:
            loss = loss + (cs * t["dc"]).sum()
    out["states" if a.cell == "rnn" else "gates"] = torch.stack(gates)
    loss.backward()
    out["dx"] = x.grad
    out["dh0"] = t["h0"].grad
    if a.cell == "lstm":
        out["dc0"] = t["c0"].grad
    return {k: v.detach().to(torch.float64).numpy() for k, v in out.items()}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("otc")
    ap.add_argument("tmp")
    ap.add_argument("--cell", required=True, choices=list(GATES))
    ap.add_argument("--relu", action="store_true", help="the Elman cell's activation")
    ap.add_argument("--reverse", action="store_true")
    ap.add_argument("--lbr", type=int, default=1)
    ap.add_argument("--rbias", action="store_true")
    ap.add_argument("--no-cell-grad", dest="cell_grad", action="store_false")
    ap.add_argument("--lens", action="store_true", help="sequence lengths (0 to T) per row")
    ap.add_argument("--type", default="f32", choices=["f32", "bf16"])
    ap.add_argument("--steps", type=int, default=7)
    ap.add_argument("--batch", type=int, default=3)
    ap.add_argument("--hidden", type=int, default=5)
    ap.add_argument("--target", default="cpu")
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--run-only", action="store_true")
    a = ap.parse_args()
    T, B, H = a.steps, a.batch, a.hidden
    G = GATES[a.cell]
    tmp = Path(a.tmp)
    tmp.mkdir(parents=True, exist_ok=True)
    exe = tmp / "recurrent"
    if not a.run_only:
        (tmp / "recurrent.mlir").write_text(mlir(a, T, B, H))
        subprocess.run([a.otc, "kernel", str(tmp / "recurrent.mlir"), "-o", str(exe), "--target", a.target],
                       check=True)
    if a.build_only:
        return 0
    rng = np.random.default_rng(5)
    st = "f32"
    inputs = {"x": round_to(rng.normal(0, 1, (T, B, G * H)), a.type),
              # Each row of |R| sums to about 0.4: every step contracts.
              "r": round_to(rng.uniform(-0.8, 0.8, (G * H, H)) / H, a.type),
              "h0": round_to(rng.normal(0, 0.5, (B, H)), a.type)}
    if a.cell == "lstm":
        inputs["c0"] = round_to(rng.normal(0, 0.5, (B, H)), st)
    inputs["dh"] = round_to(rng.normal(0, 1, (T, B, H)), a.type)
    if a.cell == "lstm" and a.cell_grad:
        inputs["dc"] = round_to(rng.normal(0, 1, (T, B, H)), st)
    if a.cell == "gru" and a.rbias:
        inputs["rb"] = round_to(rng.normal(0, 0.5, (H,)), a.type)
    if a.lens:  # the full length, an empty row, and lengths between
        inputs["lens"] = np.array([[T, 0][b] if b < 2 else rng.integers(1, T) for b in range(B)],
                                  np.int64)
    data = tmp / "data"
    data.mkdir(exist_ok=True)
    for i, v in enumerate(inputs.values()):
        np.save(data / f"arg{i}.npy", v)
    subprocess.run([str(exe), str(data)], check=True)
    names = {"lstm": ["hidden", "cell", "gates", "dx", "dh0", "dc0"],
             "gru": ["hidden", "gates", "dx", "dh0"],
             "rnn": ["hidden", "states", "dx", "dh0"]}[a.cell]
    got = {n: np.load(data / f"result{i}.npy").astype(np.float64) for i, n in enumerate(names)}
    f64 = {k: np.asarray(v, np.float64) for k, v in inputs.items()}
    if a.type == "f32":
        want = reference(a, f64, torch.float64, None)
        spread = reference(a, {k: v.astype(np.float32) for k, v in f64.items()}, torch.float32, None)
        bound = {n: 4 * np.abs(spread[n] - want[n]).max() + 2.0 ** -22 * np.abs(want[n]).max()
                 for n in names}
    else:
        want = reference(a, f64, torch.float64, bf16)
        bound = {n: 4 * 2.0 ** -8 * np.abs(want[n]).max() for n in names}
    ok = True
    for n in names:
        err = np.abs(got[n] - want[n])
        good = bool(np.all(np.isfinite(got[n])) and err.max() <= bound[n])
        ok &= good
        print(f"{'ok' if good else 'FAIL'} {n}: max |err| {err.max():.3g}, bound {bound[n]:.3g}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
