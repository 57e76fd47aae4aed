#!/usr/bin/python3
"""Hand-derived float64 reference for make_unary.py's model trained with SGD
and a mean-squared loss, one micro-batch per step.

y = erf(h) + exp(-|h|) + log(sqrt(h^2 + 1)) + 1 / (h^2 + 2), h = x W^T, so
dy/dh = 2/sqrt(pi) exp(-h^2) - sign(h) exp(-|h|) + h / (h^2 + 1)
        - 2h / (h^2 + 2)^2,
and with loss = mean((y - t)^2) over the N x 3 outputs, dW = (dL/dh)^T x.
Writes the expected initializers as an .npz.

usage: unary_reference.py MODEL DATA_DIR N STEPS LR OUT.npz
"""
import sys
from math import erf

import numpy as np
import onnx
from onnx import numpy_helper

model, data, n, steps, lr, out = sys.argv[1:]
n, steps, lr = int(n), int(steps), float(lr)
w = {t.name: numpy_helper.to_array(t) for t in onnx.load(model).graph.initializer}["w"].astype(np.float64)
x_all = np.load(f"{data}/x.npy").astype(np.float64)
t_all = np.load(f"{data}/targets.npy").astype(np.float64)
m = len(x_all) // n
verf = np.vectorize(erf)
for s in range(steps):
    x, t = x_all[(s % m) * n:(s % m) * n + n], t_all[(s % m) * n:(s % m) * n + n]
    h = x @ w.T
    y = verf(h) + np.exp(-np.abs(h)) + np.log(np.sqrt(h * h + 1)) + 1 / (h * h + 2)
    dy = 2 * (y - t) / y.size
    dydh = (2 / np.sqrt(np.pi) * np.exp(-h * h) - np.sign(h) * np.exp(-np.abs(h))
            + h / (h * h + 1) - 2 * h / (h * h + 2) ** 2)
    w -= lr * (dy * dydh).T @ x
np.savez(out, w=w)
