#!/usr/bin/python3
"""Compiles otc.attention and otc.attention_grad with `otc kernel`, runs them
on random inputs and checks the output, the log-sum-exp and the query, key
and value gradients against a float64 reference, element by element.

usage: check_attention.py OTC DIR --type f32|f16|bf16 [--heads H]
           [--kv-heads HK] [--queries T] [--keys S] [--causal]
           [--mask none|add|keep] [--target cpu|cuda]
           [--build-only | --run-only] [--cudnn | --kernel] [--layout bthd]
           [--packed qkv|kv]

DIR receives the function and the executable; --build-only stops there
and --run-only (OTC unused) runs one built before, as on a GPU machine
without MLIR (test/gpu/bundle.sh).

Inputs are rounded to the storage type first, so the reference sees what
the kernel sees. The bounds follow the kernel's float32 arithmetic, with
g(n) = n 2^-24 the bound of a float32 sum of n terms relative to the sum
of the terms' magnitudes:
- a score x = scale q . k is off by ex = g(D) scale sum|q k|;
- a probability p = exp(x - m) / sum is off relatively by
  Ep = 2 max ex + (S + 8) 2^-24 (the max's shift, exp, the sum, the
  division);
- out = sum p v by Ep sum p|v| + g(S) sum p|v|; the row's statistics,
  m = max x by max ex, and l = log sum exp(x - m) by
  2 max ex + (S + 4) 2^-24 (1 + |l|);
- dp = dO . v by g(DV) sum|dO v|, and delta = dO . O by g(DV) sum|dO O|
  plus sum |dO| times O's own bound (the backward reads the computed O);
- ds = p (dp - delta) by Ep |ds| + p (dp's + delta's);
- dq = scale sum ds k by scale sum |ds's bound| |k| + g(S) scale sum|ds k|;
  dk and dv likewise over the G T query rows that read a key.
Results stored in 16 bits add u |v| (u = 2^-11 for f16, 2^-8 for bf16),
and f16 2^-25 for its subnormals.

An i1 mask sets the score to fill = -3.4028234663852886e38 where false, as
Hugging Face's masked_fill with finfo.min: a row masked everywhere is then
uniform, and its scores get no gradient. One row of the keep mask is
masked everywhere; with the additive mask, the padded keys of sample 1
with the causal mask mask its first rows everywhere.

On CUDA, 16-bit attention without a mask runs on cuDNN's flash attention
where otc was built with it. --cudnn checks that path: its statistics are
the packed log-sum-exp m + l (within the sum of their bounds), and it
rounds the probabilities before p v and ds before ds k and ds q to the
storage type, which adds u sum p|v| to out's bound, u sum p|dO| to dv's
and u scale sum |ds| |k| (|q|) to dq's (dk's). --kernel runs otc's own
kernels (OTC_ATTENTION=kernel).

--layout bthd stores q, k, v, the output and the gradients [B, T, H, D]
(otc-attention-layout's form): the same values, the same bounds, and on
cuDNN the same graphs given strides.

--packed qkv (T = S) passes q, k and v as one [B, T, H D + 2 HK D]
argument, sliced, and returns their gradients as one concat, as a fused
qkv projection gives them; --packed kv packs k and v only (cross
attention). Both imply bthd, and the kernels must then read and write the
packed rows in place: the script prints the slice and concat steps the
program still has (none expected), then checks the same values.
"""
import argparse
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

from check_kernel import round_to

U = {"f16": 2.0 ** -11, "bf16": 2.0 ** -8, "f32": 0.0}
EPS = 2.0 ** -24
FILL = -3.4028234663852886e38


def g(n):
    return n * EPS


def stored(shape, a):
    """A [B, H, n, w] shape as the kernel stores it."""
    return (shape[0], shape[2], shape[1], shape[3]) if a.layout == "bthd" else shape


def packed_parts(a, shapes):
    """The packed tensors' [B, n, w] shapes and, per part, its tensor, its
    offset in its pack and its stored [B, n, heads, w] shape."""
    names = ["q", "k", "v"] if a.packed == "qkv" else ["k", "v"]
    parts, at = [], 0
    for n in names:
        B, heads, rows, w = shapes[n]
        parts.append((n, at, (B, rows, heads, w)))
        at += heads * w
    return (shapes["k"][0], shapes["k"][2], at), parts


def packed_mlir(a, shapes, scale, ty, attrs, mask, mtype, margs):
    """The function with q, k, v sliced from one argument (or k, v) and
    their gradients concatenated."""
    q, k, v, o = (ty(stored(shapes[n], a)) for n in ("q", "k", "v", "o"))
    lse = ty(shapes["lse"], "f32")
    pshape, parts = packed_parts(a, shapes)
    pt = ty(pshape)
    args = ([] if a.packed == "qkv" else [f"%q: {q}"]) + [f"%x: {pt}", f"%g: {o}"] + margs
    body = []
    for n, at, st in parts:
        flat = ty(st[:2] + (st[2] * st[3],))
        body.append(f"  %{n}f = otc.slice %x [0, 0, {at}] [1, 1, 1] : {pt} -> {flat}")
        body.append(f"  %{n} = otc.reshape %{n}f : {flat} -> {ty(st)}")
    body.append(f"  %o, %lse = otc.attention %q, %k, %v{mask} {{{attrs}}} : {q}, {k}, {v}{mtype} -> {o}, {lse}")
    body.append(f"  %dq, %dk, %dv = otc.attention_grad %g, %q, %k, %v, %o, %lse{mask} {{{attrs}}}"
                f" : {o}, {q}, {k}, {v}, {o}, {lse}{mtype} -> {q}, {k}, {v}")
    flats = []
    for n, at, st in parts:
        flat = ty(st[:2] + (st[2] * st[3],))
        body.append(f"  %d{n}f = otc.reshape %d{n} : {ty(st)} -> {flat}")
        flats.append(flat)
    names = ", ".join(f"%d{n}f" for n, _, _ in parts)
    body.append(f"  %dx = otc.concat {names} {{axis = 2 : i64}} : {', '.join(flats)} -> {pt}")
    results = [o, lse] + ([] if a.packed == "qkv" else [q]) + [pt]
    rnames = ["%o", "%lse"] + ([] if a.packed == "qkv" else ["%dq"]) + ["%dx"]
    body.append(f"  return {', '.join(rnames)} : {', '.join(results)}")
    return (f"func.func @attention({', '.join(args)}) -> ({', '.join(results)}) {{\n"
            + "\n".join(body) + "\n}\n")


def mlir(a, shapes, scale):
    t = a.type
    ty = lambda s, e=t: "tensor<" + "x".join(map(str, s)) + "x" + e + ">"
    q, k, v, o = (ty(stored(shapes[n], a)) for n in ("q", "k", "v", "o"))
    lse = ty(shapes["lse"], "f32")
    attrs = f"scale = {scale:.17e} : f64"
    if a.causal:
        attrs += ", causal = true"
    if a.layout == "bthd":
        attrs += ", layout = 1 : i32"
    args = [f"%q: {q}", f"%k: {k}", f"%v: {v}", f"%g: {o}"]
    mask, mtype = "", ""
    if a.mask != "none":
        mt = ty(shapes["mask"], "i1" if a.mask == "keep" else "f32")
        args.append(f"%m: {mt}")
        mask, mtype = " mask %m", ", " + mt
        if a.mask == "keep":
            attrs += f", fill = {FILL:.17e} : f64"
    if a.packed:
        return packed_mlir(a, shapes, scale, ty, attrs, mask, mtype, args[4:])
    return (f"func.func @attention({', '.join(args)}) -> ({o}, {lse}, {q}, {k}, {v}) {{\n"
            f"  %o, %lse = otc.attention %q, %k, %v{mask} {{{attrs}}} : {q}, {k}, {v}{mtype} -> {o}, {lse}\n"
            f"  %dq, %dk, %dv = otc.attention_grad %g, %q, %k, %v, %o, %lse{mask} {{{attrs}}}"
            f" : {o}, {q}, {k}, {v}, {o}, {lse}{mtype} -> {q}, {k}, {v}\n"
            f"  return %o, %lse, %dq, %dk, %dv : {o}, {lse}, {q}, {k}, {v}\n}}\n")


def reference(q, k, v, mask, dO, a, scale, B, H, G, T, S, D, DV):
    """Float64 values and bounds; mask broadcast to [B, H, T, S]."""
    kk = np.repeat(k, G, axis=1)  # query head h reads key head h // G
    vv = np.repeat(v, G, axis=1)
    x = scale * np.einsum("bhtd,bhsd->bhts", q, kk)
    ex = g(D) * scale * np.einsum("bhtd,bhsd->bhts", np.abs(q), np.abs(kk))
    keep = np.ones((B, H, T, S), bool)
    if a.causal:
        keep &= np.tril(np.ones((T, S), bool))
    masked = np.zeros((B, H, T, S), bool)
    if a.mask == "add":
        x = x + mask
    elif a.mask == "keep":
        masked = ~np.broadcast_to(mask, x.shape)
        x = np.where(masked, FILL, x)
        ex = np.where(masked, 0.0, ex)
    x = np.where(keep, x, -np.inf)
    m = x.max(-1, keepdims=True)
    e = np.where(keep, np.exp(x - m), 0.0)
    p = e / e.sum(-1, keepdims=True)
    out = np.einsum("bhts,bhsc->bhtc", p, vv)
    stats = np.stack([m[..., 0], np.log(e.sum(-1))], -1)
    Ep = 2 * np.where(keep, ex, 0).max(-1, keepdims=True) + (S + 8) * EPS
    pv = np.einsum("bhts,bhsc->bhtc", p, np.abs(vv))
    b_out = (Ep + g(S)) * pv
    emax = np.where(keep, ex, 0).max(-1)
    b_stats = np.stack([emax, 2 * emax + (S + 4) * EPS * (1 + np.abs(stats[..., 1]))], -1)
    u = U[a.type]
    b_out_stored = b_out + u * np.abs(out)
    dp = np.einsum("bhtc,bhsc->bhts", dO, vv)
    delta = (dO * out).sum(-1, keepdims=True)
    ds = np.where(masked, 0.0, p * (dp - delta))
    e_dp = g(DV) * np.einsum("bhtc,bhsc->bhts", np.abs(dO), np.abs(vv))
    e_delta = g(DV) * (np.abs(dO * out)).sum(-1, keepdims=True) + \
        (np.abs(dO) * b_out_stored).sum(-1, keepdims=True)
    e_ds = np.where(masked, 0.0, Ep * np.abs(ds) + p * (e_dp + e_delta))
    dq = scale * np.einsum("bhts,bhsd->bhtd", ds, kk)
    b_dq = scale * (np.einsum("bhts,bhsd->bhtd", e_ds, np.abs(kk)) +
                    g(S) * np.einsum("bhts,bhsd->bhtd", np.abs(ds), np.abs(kk)))
    fold = lambda y: y.reshape(B, H // G, G, *y.shape[2:]).sum(2)  # sum a key's query heads
    dk = fold(scale * np.einsum("bhts,bhtd->bhsd", ds, q))
    b_dk = fold(scale * (np.einsum("bhts,bhtd->bhsd", e_ds, np.abs(q)) +
                         g(G * T) * np.einsum("bhts,bhtd->bhsd", np.abs(ds), np.abs(q))))
    dv = fold(np.einsum("bhts,bhtc->bhsc", p, dO))
    b_dv = fold(np.einsum("bhts,bhtc->bhsc", (Ep + g(G * T)) * p, np.abs(dO)))
    sub = 2.0 ** -25 if a.type == "f16" else 0.0
    stored = lambda want, b: b + u * np.abs(want) + sub
    if a.cudnn:
        b_out_stored = b_out_stored + u * pv
        b_dv = b_dv + u * fold(np.einsum("bhts,bhtc->bhsc", p, np.abs(dO)))
        b_dq = b_dq + u * scale * np.einsum("bhts,bhsd->bhtd", np.abs(ds), np.abs(kk))
        b_dk = b_dk + u * scale * fold(np.einsum("bhts,bhtd->bhsd", np.abs(ds), np.abs(q)))
        stats, b_stats = stats.sum(-1).reshape(-1), b_stats.sum(-1).reshape(-1)
    return [("out", out, b_out_stored + sub), ("stats", stats, b_stats),
            ("dq", dq, stored(dq, b_dq)), ("dk", dk, stored(dk, b_dk)), ("dv", dv, stored(dv, b_dv))]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("otc")
    ap.add_argument("tmp")
    ap.add_argument("--type", default="f32", choices=["f32", "f16", "bf16"])
    ap.add_argument("--batch", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=4)
    ap.add_argument("--queries", type=int, default=8)
    ap.add_argument("--keys", type=int, default=8)
    ap.add_argument("--dim", type=int, default=16)
    ap.add_argument("--value-dim", type=int, default=8)
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--mask", default="none", choices=["none", "add", "keep"])
    ap.add_argument("--target", default="cpu")
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--run-only", action="store_true")
    ap.add_argument("--cudnn", action="store_true")
    ap.add_argument("--kernel", action="store_true")
    ap.add_argument("--layout", default="bhtd", choices=["bhtd", "bthd"])
    ap.add_argument("--packed", choices=["qkv", "kv"])
    a = ap.parse_args()
    if a.packed:
        a.layout = "bthd"
        if a.packed == "qkv" and a.queries != a.keys:
            ap.error("--packed qkv needs --queries equal to --keys")
    B, H, HK, T, S, D, DV = a.batch, a.heads, a.kv_heads, a.queries, a.keys, a.dim, a.value_dim
    G = H // HK
    scale = 1 / np.sqrt(D)
    shapes = {"q": (B, H, T, D), "k": (B, HK, S, D), "v": (B, HK, S, DV), "o": (B, H, T, DV),
              "lse": (B, H, T, 2)}
    rng = np.random.default_rng(11)
    mask = None
    if a.mask == "add":  # padding: the last keys of sample 1, as BERT's [B, 1, 1, S]
        shapes["mask"] = (B, 1, 1, S)
        mask = np.zeros(shapes["mask"], np.float32)
        mask[1, ..., :3] = np.finfo(np.float32).min
        mask[0, ..., 0] = -1.5  # and a finite bias
    elif a.mask == "keep":  # per-query, shared by the batch and heads
        shapes["mask"] = (1, 1, T, S)
        mask = rng.random(shapes["mask"]) < 0.6
        mask[..., :, 0] = True
        mask[..., T // 2, :] = False  # a row masked everywhere
    tmp = Path(a.tmp)
    tmp.mkdir(parents=True, exist_ok=True)
    exe = tmp / "attention"
    if not a.run_only:
        (tmp / "attention.mlir").write_text(mlir(a, shapes, scale))
        subprocess.run([a.otc, "kernel", str(tmp / "attention.mlir"), "-o", str(exe), "--target", a.target],
                       check=True)
        if a.packed:
            prog = subprocess.run([a.otc, "kernel", str(tmp / "attention.mlir"), "-o", str(tmp / "p"),
                                   "--target", a.target, "--emit", "program"],
                                  check=True, capture_output=True, text=True).stdout
            print(f"in place: {prog.count('(otc.slice)')} slice steps, "
                  f"{prog.count('(otc.concat)')} concat steps")
    if a.build_only:
        return 0
    q = round_to(rng.normal(0, 1, shapes["q"]), a.type)
    k = round_to(rng.normal(0, 1, shapes["k"]), a.type)
    v = round_to(rng.normal(0, 1, shapes["v"]), a.type)
    dO = round_to(rng.normal(0, 1, shapes["o"]), a.type)
    args = [q, k, v, dO] + ([mask] if mask is not None else [])
    data = tmp / "data"
    data.mkdir(exist_ok=True)
    # [B, H, n, w] <-> [B, n, H, w] under bthd (the mask keeps its shape).
    swap = (lambda x: np.ascontiguousarray(np.swapaxes(x, 1, 2))) if a.layout == "bthd" else (lambda x: x)
    if a.packed:  # [B, n, heads, w] parts side by side along the last dim
        pshape, parts = packed_parts(a, shapes)
        x = np.concatenate([swap(dict(q=q, k=k, v=v)[n]).reshape(st[:2] + (-1,))
                            for n, _, st in parts], axis=-1)
        files = ([] if a.packed == "qkv" else [swap(q)]) + [x, swap(dO)] + args[4:]
    else:
        files = [swap(x) if i < 4 else x for i, x in enumerate(args)]
    for i, x in enumerate(files):
        np.save(data / f"arg{i}.npy", x)
    env = dict(os.environ, OTC_ATTENTION="kernel") if a.kernel else None
    subprocess.run([str(exe), str(data)], check=True, env=env)
    if a.packed:
        res = [np.load(data / f"result{i}.npy").astype(np.float64)
               for i in range(3 if a.packed == "qkv" else 4)]
        grads = {} if a.packed == "qkv" else {"q": res[2]}
        for n, at, st in parts:
            grads[n] = res[-1][..., at:at + st[2] * st[3]].reshape(st)
        got = [swap(res[0]), res[1]] + [swap(grads[n]) for n in ("q", "k", "v")]
    else:
        got = [np.load(data / f"result{i}.npy").astype(np.float64) for i in range(5)]
        got = [r if i == 1 else swap(r) for i, r in enumerate(got)]
    if a.cudnn:  # the packed log-sum-exp, in the first half
        got[1] = got[1].reshape(-1)[:B * H * T]
    f64 = lambda x: np.asarray(x, np.float64)
    want = reference(f64(q), f64(k), f64(v), None if mask is None else (mask if a.mask == "keep" else f64(mask)),
                     f64(dO), a, scale, B, H, G, T, S, D, DV)
    ok = True
    for r, (name, w, b) in zip(got, want):
        err = np.abs(r - w)
        worst = float(np.max(err - b))
        good = worst <= 0 and np.all(np.isfinite(r))
        ok &= good
        print(f"{'ok' if good else 'FAIL'} {name}: max |err| {float(err.max()):.3g}, "
              f"max bound {float(b.max()):.3g}, max err - bound {worst:.3g}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
