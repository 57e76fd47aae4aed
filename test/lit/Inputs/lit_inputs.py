"""What the lit input generators (make_*.py) share: writing a checked model
and its data files, and SGD whose gradients are float64 central finite
differences of a numpy loss, the reference the import tests train against
(it shares nothing with otc's gradient rules)."""
from pathlib import Path

import numpy as np
import onnx
from onnx import helper


def save_model(graph, path, opset=17, ir_version=8, check=True):
    """`graph` as a model of the default domain at `opset` (libonnx 1.12
    reads IR versions up to 8), checked unless the test wants it broken."""
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = ir_version
    if check:
        onnx.checker.check_model(model)
    onnx.save(model, path)


def save_data(data, **arrays):
    """Each array as DATA/NAME.npy, the files a training executable reads."""
    Path(data).mkdir(parents=True, exist_ok=True)
    for name, a in arrays.items():
        np.save(Path(data) / f"{name}.npy", a)


def batch(a, step, n=2):
    """Micro-batch `step` of `n` samples, cycling over the samples in order,
    as the training executable reads them."""
    m = (step % (len(a) // n)) * n
    return a[m:m + n]


def gradient(loss, params, key, h=1e-6):
    v = params[key]
    g = np.zeros_like(v)
    for i in np.ndindex(v.shape):
        plus, minus = {**params, key: v.copy()}, {**params, key: v.copy()}
        plus[key][i] += h
        minus[key][i] -= h
        g[i] = (loss(plus) - loss(minus)) / (2 * h)
    return g


def sgd(params, step_loss, steps, lr, weight_decay=0.0, frozen=(), fixed_rows=None):
    """PyTorch's SGD, p -= lr * (g + weight_decay * p), over `steps` steps of
    `step_loss(p, step)`; `frozen` names are not updated (requires_grad
    False), and the rows fixed_rows[name] of a tensor get no gradient (an
    Embedding's padding_idx). Returns the parameters in float64."""
    p = {k: np.asarray(v, dtype=np.float64) for k, v in params.items()}
    for s in range(steps):
        grads = {k: gradient(lambda q: step_loss(q, s), p, k) for k in p if k not in frozen}
        for k, rows in (fixed_rows or {}).items():
            grads[k][rows] = 0
        # asarray: a 0-d parameter stays an array numpy can index.
        p = {k: v if k in frozen else np.asarray(v - lr * (grads[k] + weight_decay * v))
             for k, v in p.items()}
    return p
