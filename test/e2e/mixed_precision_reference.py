"""Mixed-precision training against a PyTorch reference that rounds at the
same points.

  make DIR [GAIN]  model.onnx: x [N, 6] -> Gemm(8) -> Tanh -> Gemm(3) -> SoftmaxCrossEntropyLoss,
             and data/ (16 samples).
  check DIR SAVED fp16|bf16 STEPS K LR SCALE [LOG]
             Replays otc's policy in float32 PyTorch, rounding with
             r(t) = t.to(low).float() where otc stores a low-precision value:
               h = r(r(x) r(W1)ᵀ + r(b1))    gemm: low operands, f32 sums
               a = r(tanh(h))                tanh: the widest operand type
               z = r(a r(W2)ᵀ + r(b2))
               loss = cross_entropy(z)       float32
             Autograd's backward through r() rounds each gradient where otc's
             cast gradients do, except at the weights (Master): otc's
             weight-gradient GEMMs and bias sums write float32. SCALE multiplies the loss seed and 1/SCALE
             the gradients. With LOG (otc's --log of a --loss-scale dynamic
             run), SCALE is the initial scale and GradScaler's rules run in
             the reference too (written out in `update_scale`): a step whose
             rounded gradients hold an infinity is skipped and halves the
             scale, 2000 good steps double it; LOG's scales and skipped steps
             must equal the reference's. SGD, K micro-batches per step.
             Tolerance per tensor: 2 u max_t(lr max|g_t|) + 1e-6 max|w|, with
             u the low type's unit roundoff (2^-11 fp16, 2^-8 bf16). The two
             differ only in float32 summation order (n 2^-24 relative), which
             moves a rounded value by one unit only when it lies that close
             to a rounding boundary: rare, so the bound allows two such flips
             in a gradient over the run. Measured 2026-11-22: 0 (bitwise
             equal); a reference that never rounds is 1.7e-3 off in bf16's
             first weight, past its 1.5e-3 bound.
"""
import sys
from pathlib import Path

import numpy as np
import onnx
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

NAMES = ["w1", "b1", "w2", "b2"]


def make(out, gain=1.0):
    """GAIN scales w2, and with it the fp16 gradient of the hidden layer,
    da = dz w2: at 16, da times 2^16 passes fp16's 65504. (The weights'
    own gradients are float32 sums and do not overflow.)"""
    out = Path(out)
    (out / "data").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    init = {"w1": rng.normal(0, 0.5, (8, 6)), "b1": rng.normal(0, 0.1, 8),
            "w2": gain * rng.normal(0, 0.5, (3, 8)), "b2": rng.normal(0, 0.1, 3)}
    np.save(out / "data" / "x.npy", rng.normal(size=(16, 6)).astype(np.float32))
    np.save(out / "data" / "labels.npy", rng.integers(0, 3, 16).astype(np.int64))
    nodes = [helper.make_node("Gemm", ["x", "w1", "b1"], ["h"], transB=1),
             helper.make_node("Tanh", ["h"], ["a"]),
             helper.make_node("Gemm", ["a", "w2", "b2"], ["z"], transB=1),
             helper.make_node("SoftmaxCrossEntropyLoss", ["z", "labels"], ["loss"])]
    g = helper.make_graph(
        nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 6]),
                       helper.make_tensor_value_info("labels", TensorProto.INT64, ["batch"])],
        [helper.make_tensor_value_info("loss", TensorProto.FLOAT, [])],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in init.items()])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), out / "model.onnx")


class RoundedTanh(torch.autograd.Function):
    """r(tanh(h)), whose backward reads the rounded output, as otc's
    tanh_grad does: dh = r(dy (1 - y²))."""
    @staticmethod
    def forward(ctx, h, low):
        y = torch.tanh(h).to(low).float()
        ctx.save_for_backward(y)
        ctx.low = low
        return y

    @staticmethod
    def backward(ctx, dy):
        y, = ctx.saved_tensors
        return (dy.to(ctx.low).float() * (1 - y * y)).to(ctx.low).float(), None


class Master(torch.autograd.Function):
    """A float32 master weight's low-precision copy, r(w) forward. Its
    gradient is not rounded: otc's weight-gradient GEMMs and bias
    reductions sum in float32 straight into the float32 gradient buffer."""
    @staticmethod
    def forward(ctx, w, low):
        return w.to(low).float()

    @staticmethod
    def backward(ctx, g):
        return g, None


def update_scale(scale, good, overflow, window=2000):
    """GradScaler's rules: (new scale, good steps in a row)."""
    if overflow:
        return scale * 0.5, 0
    good += 1
    return (scale * 2.0, 0) if good == window else (scale, good)


def check(out, saved, precision, steps, k, lr, scale, log=None):
    out = Path(out)
    low = torch.float16 if precision == "fp16" else torch.bfloat16
    u = 2.0 ** -11 if precision == "fp16" else 2.0 ** -8
    r = lambda t: t.to(low).float()
    init = {i.name: numpy_helper.to_array(i) for i in onnx.load(str(out / "model.onnx")).graph.initializer}
    p = {n: torch.nn.Parameter(torch.from_numpy(init[n].copy())) for n in NAMES}
    x = torch.from_numpy(np.load(out / "data" / "x.npy"))
    y = torch.from_numpy(np.load(out / "data" / "labels.npy"))
    n, m = 4, 4
    gmax = {k_: 0.0 for k_ in NAMES}
    good, sequence = 0, []
    for s in range(steps):
        for q in p.values():
            q.grad = None
        for j in range(k):
            f = ((s * k + j) % m) * n
            w = {name: Master.apply(q, low) for name, q in p.items()}
            h = r(r(x[f:f + n]) @ w["w1"].T + w["b1"])
            a = RoundedTanh.apply(h, low)
            z = r(a @ w["w2"].T + w["b2"])
            (F.cross_entropy(z, y[f:f + n]) / k * scale).backward()
        overflow = not all(bool(torch.isfinite(q.grad).all()) for q in p.values())
        sequence.append((scale, overflow))
        if log and overflow:
            scale, good = update_scale(scale, good, True)
            continue
        with torch.no_grad():
            inv = torch.tensor(float(scale)).double().reciprocal().float()
            for name, q in p.items():
                g = q.grad * inv
                gmax[name] = max(gmax[name], lr * float(g.abs().max()))
                q -= lr * g
        if log:
            scale, good = update_scale(scale, good, False)
    if log:
        import json
        got = [(r["loss_scale"], r["skipped"]) for r in map(json.loads, open(log))]
        print("reference:", " ".join(f"{sc:g}{'*' if sk else ''}" for sc, sk in sequence))
        print("otc:      ", " ".join(f"{sc:g}{'*' if sk else ''}" for sc, sk in got))
        if got != sequence:
            print("the scale sequence differs")
            sys.exit(1)
    trained = {i.name: numpy_helper.to_array(i) for i in onnx.load(saved).graph.initializer}
    ok = True
    for name in NAMES:
        ref = p[name].detach().numpy()
        tol = 2 * u * gmax[name] + 1e-6 * np.abs(ref).max()
        err = float(np.abs(trained[name] - ref).max())
        moved = float(np.abs(ref - init[name]).max())
        ok &= err <= tol and moved > 10 * tol
        print(f"{'ok' if err <= tol else 'MISMATCH'} {name}: max |diff| {err:.3g}, "
              f"tolerance {tol:.3g}, moved {moved:.3g}")
    print(f"{precision} weights match" if ok else f"{precision} weights DIFFER")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], *map(float, sys.argv[3:4]))
    else:
        check(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]),
              float(sys.argv[7]), float(sys.argv[8]), *sys.argv[9:10])
