"""Loss scaling against a step-by-step reference of GradScaler's rules.

  make DIR      model.onnx (y = x w, loss = mean((y - t)^2)) and data/: 12
                samples; micro-batches 0 and 3 (of 6, 2 samples each) hold
                an infinity in x, so every step that reads one overflows at
                any scale.
  check DIR LOG SAVED K STEPS WINDOW HYSTERESIS
                Replays the run in PyTorch (float32): per step, the K
                micro-batches' (loss / K * scale).backward(), then GradScaler's
                rules written out here: a non-finite gradient skips
                optimizer.step() (Adam's moments and step count untouched) and
                backs the scale off (x0.5; DeepSpeed's HYSTERESIS tolerates
                the first HYSTERESIS - 1 overflows since the last growth);
                WINDOW good steps in a row double it and restore the
                hysteresis; otherwise the
                gradients are multiplied by float32(1 / scale) and Adam steps.
                LOG's loss_scale and skipped must equal the reference's
                exactly; SAVED's weight must match within 1e-6 relative (the
                same float32 operations up to summation order).
"""
import json
import sys
from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

W0 = np.array([[0.5], [-0.25], [0.75], [0.1]], np.float32)


def make(out):
    out = Path(out)
    (out / "data").mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(12, 4)).astype(np.float32)
    t = rng.normal(size=(12, 1)).astype(np.float32)
    x[0, 1] = np.inf   # micro-batch 0
    x[7, 2] = -np.inf  # micro-batch 3
    np.save(out / "data" / "x.npy", x)
    np.save(out / "data" / "t.npy", t)
    F = TensorProto.FLOAT
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"]),
             helper.make_node("Sub", ["y", "t"], ["d"]),
             helper.make_node("Mul", ["d", "d"], ["sq"]),
             helper.make_node("ReduceMean", ["sq"], ["loss"], keepdims=0)]
    g = helper.make_graph(nodes, "linear", [helper.make_tensor_value_info("x", F, ["batch", 4]),
                                            helper.make_tensor_value_info("t", F, ["batch", 1])],
                          [helper.make_tensor_value_info("loss", F, [])],
                          [numpy_helper.from_array(W0, "w")])
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), out / "model.onnx")


def check(out, log, saved, k, steps, window, hysteresis):
    out = Path(out)
    x = torch.from_numpy(np.load(out / "data" / "x.npy"))
    t = torch.from_numpy(np.load(out / "data" / "t.npy"))
    w = torch.nn.Parameter(torch.from_numpy(W0.copy()))
    opt = torch.optim.Adam([w], lr=0.01)
    scale, good, left = torch.tensor(65536.0), 0, hysteresis
    n, m = 2, 6
    want = []
    for s in range(steps):
        opt.zero_grad()
        for j in range(k):
            first = ((s * k + j) % m) * n
            loss = ((x[first:first + n] @ w - t[first:first + n]) ** 2).mean()
            (loss / k * scale).backward()
        overflow = not bool(torch.isfinite(w.grad).all())
        want.append((float(scale), overflow))
        if overflow:
            good = 0
            if left > 1:  # DeepSpeed: H - 1 overflows since the last growth tolerated
                left -= 1
            else:
                scale = scale * 0.5
        else:
            w.grad.mul_(scale.double().reciprocal().float())
            opt.step()
            good += 1
            if good == window:
                scale, good, left = scale * 2.0, 0, hysteresis
    got = [(r["loss_scale"], r["skipped"]) for r in map(json.loads, open(log))]
    print("reference:", " ".join(f"{sc:g}{'*' if sk else ''}" for sc, sk in want))
    print("otc:      ", " ".join(f"{sc:g}{'*' if sk else ''}" for sc, sk in got))
    assert got == want, "the scale sequence differs"
    trained = {i.name: numpy_helper.to_array(i) for i in onnx.load(saved).graph.initializer}
    ref = w.detach().numpy()
    err = np.abs(trained["w"] - ref).max() / np.abs(ref).max()
    assert err <= 1e-6, f"weights differ: {trained['w'].ravel()} vs {ref.ravel()} ({err:.3g})"
    print(f"scales and skipped steps exact, weights within {err:.2g}")


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    else:
        check(sys.argv[2], sys.argv[3], sys.argv[4], *map(int, sys.argv[5:9]))
